package io.iotarget.control;

import io.iotarget.control.tree.BackendTree;
import io.iotarget.engine.Engine;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Backends as an operator configures them: a refused enable changes nothing. */
class BackendTreeTest {
    private final Engine engine = new Engine();
    private final BackendTree tree = new BackendTree(engine);

    @TempDir
    Path dir;

    @AfterEach
    void close() {
        engine.close();
    }

    @Test
    void shouldCreateAFileBackendAndRemoveTheFileWhenEnablingFails() throws Exception {
        tree.mkdir("a");
        tree.write("a/type", "memory");
        tree.write("a/size", "1M");
        tree.write("a/device", "259:5");
        tree.write("a/enable", "1");
        Path file = dir.resolve("b.img");
        tree.mkdir("b");
        tree.write("b/type", "file");
        tree.write("b/path", file.toString());
        tree.write("b/create", "1");
        tree.write("b/size", "4M");
        tree.write("b/device", "259:5");                  // taken by a
        assertEquals(Errno.EEXIST, assertThrows(ControlException.class, () -> tree.write("b/enable", "1")).errno());
        assertFalse(Files.exists(file), "the file create=1 made is gone again");
        tree.write("b/device", "");
        tree.write("b/enable", "1");
        assertEquals(4 << 20, Files.size(file));
        assertEquals("4194304\n", tree.read("b/size"));
        assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> tree.write("b/size", "8M")).errno(), "fixed while enabled");
        tree.write("b/enable", "0");
        tree.rmdir("b");
        assertTrue(Files.exists(file), "disabling keeps the data");
    }
}
