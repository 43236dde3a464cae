package io.iotarget.iocontrol.file;

import io.iotarget.iocontrol.Group;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

/**
 * One file of a group's directory, with the kernel's name, read format, write syntax and
 * errors (a cftype). The controller calls {@link #read} and {@link #write} under its tree
 * lock, so files see a tree that does not change under them; a write either applies
 * completely or throws and changes nothing.
 */
public interface InterfaceFile {
    /** Where in the tree the file exists. */
    enum Placement { EVERYWHERE, NOT_ON_ROOT, ONLY_ON_ROOT }

    String name();

    Placement placement();

    /**
     * True for a controller's files ({@code io.*}): they exist in a group only when its parent
     * has {@code io} in cgroup.subtree_control (always on the root).
     */
    boolean controllerFile();

    String read(Group group) throws ControlException;

    default boolean writable() {
        return false;
    }

    /** Applies {@code text} (one write(2)); EACCES for read-only files, like kernfs. */
    default void write(Group group, String text) throws ControlException {
        throw new ControlException(Errno.EACCES, name() + " is read-only");
    }

    /** Whether this file appears in {@code group}'s directory. */
    default boolean presentIn(Group group) {
        boolean root = group.isRoot();
        return switch (placement()) {
            case EVERYWHERE -> !controllerFile() || group.ioEnabled();
            case NOT_ON_ROOT -> !root && (!controllerFile() || group.ioEnabled());
            case ONLY_ON_ROOT -> root;
        };
    }
}
