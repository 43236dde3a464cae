package io.iotarget.control.tree;

import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.pressure.Trigger;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.TreePath;

import java.time.Duration;
import java.util.List;

/**
 * The controller's group tree seen as a {@link ConfigTree}: groups are directories, interface
 * files are files, and paths split as in every tree ({@link TreePath}). Any thread.
 */
public final class CgroupTree implements ConfigTree {
    /**
     * The deepest a group may be (a child of the root is at depth 1), whatever its ancestors'
     * cgroup.max.depth: the most a saved configuration nests ({@link
     * io.iotarget.control.config.ConfigLoader#MAX_NESTING}), so that whatever the tree holds,
     * {@code save} and {@code server.state} write and read back. Linux sets no such limit;
     * the path of a group this deep with one-letter names is already 1 KB.
     */
    public static final int MAX_DEPTH = 512;

    private final IoController controller;

    public CgroupTree(IoController controller) {
        this.controller = controller;
    }

    @Override
    public Kind kind(String path) throws ControlException {
        try {
            controller.group(path);
            return Kind.DIRECTORY;
        } catch (ControlException notAGroup) {
            List<String> names = TreePath.split(path);
            String dir = String.join("/", names.subList(0, names.size() - 1));
            if (controller.list(dir).contains(names.getLast())) return Kind.FILE;
            throw new ControlException(Errno.ENOENT, "no group or file " + path);
        }
    }

    @Override
    public List<String> list(String path) throws ControlException {
        return controller.list(path);
    }

    @Override
    public String read(String path) throws ControlException {
        return controller.read(path);
    }

    @Override
    public void write(String path, String value) throws ControlException {
        controller.write(path, value);
    }

    /** The file's {@link io.iotarget.iocontrol.file.InterfaceFile#replay}, under the tree lock. */
    @Override
    public List<String> replay(String path) throws ControlException {
        return controller.tree().replay(path);
    }

    /**
     * An io.pressure trigger ({@link io.iotarget.iocontrol.GroupTree#watch}), polled on the
     * waiting thread every tenth of its window, as the kernel's psimon polls.
     */
    @Override
    public Watch watch(String path, String trigger) throws ControlException {
        Trigger t = controller.tree().watch(path, trigger);
        var clock = controller.clock();
        return new Watch() {
            private long nextPollNs = clock.nanoTime() + t.pollPeriodNs();

            @Override
            public String await(long timeoutNs) throws InterruptedException, ControlException {
                long deadlineNs = clock.nanoTime() + timeoutNs;
                while (true) {
                    if (t.groupRemoved()) throw new ControlException(Errno.ENODEV, path + ": its group was removed");
                    long now = clock.nanoTime();
                    if (now - nextPollNs >= 0) {
                        nextPollNs += t.pollPeriodNs();
                        if (nextPollNs - now <= 0) nextPollNs = now + t.pollPeriodNs();     // late: no catching up
                        if (t.poll(now)) return path + " " + t + " fired";
                    }
                    if (now - deadlineNs >= 0) return null;
                    Thread.sleep(Duration.ofNanos(Math.min(nextPollNs, deadlineNs) - now));
                }
            }

            @Override
            public void close() {
                t.close();
            }
        };
    }

    /** A host's automatic group ({@link io.iotarget.iocontrol.Group#automatic}) is not kept: a reconnect makes it again. */
    @Override
    public boolean kept(String path) throws ControlException {
        return !controller.tree().automatic(path);
    }

    @Override
    public void mkdir(String path) throws ControlException {
        int depth = TreePath.split(path).size();
        if (depth > MAX_DEPTH) {
            throw new ControlException(Errno.EAGAIN, "a group at depth " + depth + " is deeper than any may be, " + MAX_DEPTH
                                                     + " (the most a saved configuration holds)");
        }
        controller.mkdir(path);
    }

    @Override
    public void rmdir(String path) throws ControlException {
        controller.rmdir(path);
    }
}
