package io.iotarget.model.tree;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

import java.util.ArrayList;
import java.util.List;

/**
 * The paths of every configuration tree: '/'-separated names relative to the tree's root, with
 * empty and {@code .} components dropped ({@code "a//b/"}, {@code "/a/./b"} and {@code "a/b"}
 * are one path) and {@code ..} refused, so that no path leaves its tree or names a directory
 * two ways. Any thread; no state.
 */
public final class TreePath {
    private TreePath() {
    }

    /**
     * The path's names, root first; empty for the root ({@code ""} or {@code "/"}).
     *
     * @throws ControlException EINVAL when a component is {@code ..}
     */
    public static List<String> split(String path) throws ControlException {
        List<String> names = new ArrayList<>();
        for (String name : path.split("/")) {
            if (name.isEmpty() || name.equals(".")) continue;
            if (name.equals("..")) throw new ControlException(Errno.EINVAL, "'..' is not allowed in paths: " + path);
            names.add(name);
        }
        return names;
    }
}
