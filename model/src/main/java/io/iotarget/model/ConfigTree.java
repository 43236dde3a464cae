package io.iotarget.model;

import java.util.List;

/**
 * A configuration tree in the shape of a pseudo file system (cgroupfs, nvmet's configfs):
 * directories created with mkdir, attribute files read and written as text, and — as in
 * configfs — symbolic links between directories (a port's subsystems, a subsystem's allowed
 * hosts). The control plane mounts each front end's tree and drives it from the CLI, the HTTP
 * API and the config file; there is no other way to configure a front end.
 *
 * <p>Paths are relative to the tree's root, '/'-separated, without a leading slash. Every
 * operation either succeeds completely or throws and changes nothing. Any thread.
 */
public interface ConfigTree {
    /** What a path names. */
    enum Kind {
        /** Holds attributes and subdirectories; created with {@link #mkdir}. */
        DIRECTORY,
        /** An attribute: {@link #read} and (unless read-only) {@link #write}. */
        FILE,
        /** A directory of links, populated with {@link #link}, like configfs's {@code ports/1/subsystems}. */
        LINKS
    }

    /** What {@code path} is; ENOENT if nothing. */
    Kind kind(String path) throws ControlException;

    /** Entry names of a directory or link directory, in a stable order; subdirectories end with '/'. */
    List<String> list(String path) throws ControlException;

    String read(String path) throws ControlException;

    void write(String path, String value) throws ControlException;

    /**
     * What a save keeps of the file at {@code path}: the writes, in order, that give the same
     * file in a freshly made directory the value this one has. Empty when there is nothing to
     * keep: a read-only file, one that mirrors another ({@code cgroup_id} mirrors
     * {@code cgroup}), or one that is unset. A config made of these writes (and the mkdirs
     * and links a listing shows) rebuilds the tree: see control's ConfigSaver.
     */
    List<String> replay(String path) throws ControlException;

    /**
     * Whether a save keeps the directory at {@code path}: false for one the tree made itself,
     * holding nothing a save would restore, that it makes again when needed (a host's group
     * under cgroup_per_host that the operator has not used).
     */
    default boolean kept(String path) throws ControlException {
        return true;
    }

    void mkdir(String path) throws ControlException;

    void rmdir(String path) throws ControlException;

    /** Creates {@code linkPath} (inside a {@link Kind#LINKS} directory) pointing at {@code target}, a path in this tree. */
    default void link(String target, String linkPath) throws ControlException {
        throw new ControlException(Errno.EPERM, "this tree has no links");
    }

    /** Removes a link. */
    default void unlink(String linkPath) throws ControlException {
        throw new ControlException(Errno.EPERM, "this tree has no links");
    }

    /** The target (a path in this tree) of the link at {@code linkPath}. */
    default String readLink(String linkPath) throws ControlException {
        throw new ControlException(Errno.EINVAL, linkPath + " is not a link");
    }

    /**
     * A trigger kept on a file, as a process keeps one by holding the file open after writing
     * it (io.pressure's {@code some|full <stall us> <window us>}). Close it to remove the trigger.
     */
    interface Watch extends AutoCloseable {
        /**
         * Waits at most {@code timeoutNs} for the trigger to fire: what fired (one line) when it
         * did, null when the time ran out. The caller's thread sleeps meanwhile.
         *
         * @throws ControlException ENODEV once the file is gone (its group removed): the watch is over
         */
        String await(long timeoutNs) throws InterruptedException, ControlException;

        @Override
        void close();
    }

    /** Writes {@code trigger} to the file at {@code path} and keeps it (see {@link Watch}); the write's errors. */
    default Watch watch(String path, String trigger) throws ControlException {
        throw new ControlException(Errno.EINVAL, path + " takes no triggers");
    }
}
