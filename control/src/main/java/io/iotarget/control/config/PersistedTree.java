package io.iotarget.control.config;

import io.iotarget.control.tree.ForwardingTree;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

import java.io.IOException;

/**
 * The mounted trees as the control endpoint serves them when the config names a
 * {@code server.state} file: every change that a tree accepts is saved there
 * ({@link ConfigSaver}, {@link StateFile}) before the client hears that it succeeded, so a
 * restart comes back as the last acknowledged change left it.
 *
 * <p>Changes themselves run concurrently, as the trees allow (an nvmet namespace's disable
 * may wait long for IO in flight). The save after each one walks the trees and replaces the
 * file under one lock, so files are written in the order their snapshots were taken: the
 * file never goes back to a state older than one already written, and it holds every change
 * acknowledged so far.
 *
 * <p>If the file cannot be written (a full disk), the change stays made — the trees cannot
 * take it back — and the client gets EIO saying so; the next change that saves brings the
 * file up to date. Any thread.
 */
public final class PersistedTree extends ForwardingTree {
    private final ConfigTree tree;
    private final ConfigSaver saver;
    private final StateFile state;
    private final Object saveLock = new Object();

    public PersistedTree(ConfigTree tree, ConfigSaver saver, StateFile state) {
        this.tree = tree;
        this.saver = saver;
        this.state = state;
    }

    /** Saves the trees as they are now. */
    public void persist() throws IOException, ControlException {
        synchronized (saveLock) {
            state.write(saver.save());
        }
    }

    @Override
    public Target resolve(String path) {
        return new Target(tree, path);
    }

    @Override
    protected void change(Change change) throws ControlException {
        change.run();
        try {
            persist();
        } catch (IOException e) {
            throw new ControlException(Errno.EIO, "applied, but the state file " + state.path() + " could not be written: " + e.getMessage()
                                                  + " (the next change retries)");
        }
    }
}
