package io.iotarget.model.tree;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** One spelling per directory, and no way out of a tree. */
class TreePathTest {
    @Test
    void shouldNameOneDirectoryOneWay() throws ControlException {
        for (String same : List.of("a/b", "/a/b", "a//b/", "/a/./b", "./a/b/.", "a/b//")) assertEquals(List.of("a", "b"), TreePath.split(same), same);
        for (String root : List.of("", "/", "//", ".", "/./")) assertEquals(List.of(), TreePath.split(root), root);
        assertEquals(List.of("...", "..a", "a..", ".hidden"), TreePath.split("/.../..a/a../.hidden"), "only '..' itself is refused");
        assertEquals(List.of("nqn.2014-08.org.nvmexpress:uuid:x", "1"), TreePath.split("nqn.2014-08.org.nvmexpress:uuid:x/1"));
    }

    @Test
    void shouldRefuseDotDotAnywhere() {
        for (String out : List.of("..", "/..", "a/..", "a/../b", "../a", "a/b/../..")) {
            ControlException e = assertThrows(ControlException.class, () -> TreePath.split(out), out);
            assertEquals(Errno.EINVAL, e.errno());
            assertEquals("'..' is not allowed in paths: " + out, e.detail());
        }
    }
}
