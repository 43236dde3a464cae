package io.iotarget.control.tree;

import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;

import java.util.List;

/**
 * A tree that answers every call with the tree a path resolves to: the mount table (a path's
 * first name picks the tree) and the persisted view (the same tree, saved after each change)
 * are such trees. Reads go straight through; changes go through {@link #change}, which a tree
 * that must do something after each one overrides. Any thread, as the trees behind it allow.
 */
public abstract class ForwardingTree implements ConfigTree {
    /** Where a path leads: the tree that answers for it, and the path inside that tree. */
    public record Target(ConfigTree tree, String path) {
    }

    /** A change to the tree behind: a write, mkdir, rmdir, link or unlink. */
    @FunctionalInterface
    protected interface Change {
        void run() throws ControlException;
    }

    /** @throws ControlException ENOENT when no tree answers for {@code path} */
    public abstract Target resolve(String path) throws ControlException;

    /**
     * Runs a change; what follows every successful change goes here. {@code op} and {@code args}
     * name it as this tree was asked (e.g. "write", path, value), for a tree that records it.
     */
    protected void change(Change change, String op, String... args) throws ControlException {
        change.run();
    }

    @Override
    public Kind kind(String path) throws ControlException {
        Target t = resolve(path);
        return t.tree.kind(t.path);
    }

    @Override
    public List<String> list(String path) throws ControlException {
        Target t = resolve(path);
        return t.tree.list(t.path);
    }

    @Override
    public String read(String path) throws ControlException {
        Target t = resolve(path);
        return t.tree.read(t.path);
    }

    @Override
    public List<String> replay(String path) throws ControlException {
        Target t = resolve(path);
        return t.tree.replay(t.path);
    }

    @Override
    public boolean kept(String path) throws ControlException {
        Target t = resolve(path);
        return t.tree.kept(t.path);
    }

    @Override
    public String readLink(String linkPath) throws ControlException {
        Target t = resolve(linkPath);
        return t.tree.readLink(t.path);
    }

    /** A trigger is kept by the tree behind; setting it is no change to save. */
    @Override
    public Watch watch(String path, String trigger) throws ControlException {
        Target t = resolve(path);
        return t.tree.watch(t.path, trigger);
    }

    @Override
    public void write(String path, String value) throws ControlException {
        Target t = resolve(path);
        change(() -> t.tree.write(t.path, value), "write", path, value);
    }

    @Override
    public void mkdir(String path) throws ControlException {
        Target t = resolve(path);
        change(() -> t.tree.mkdir(t.path), "mkdir", path);
    }

    @Override
    public void rmdir(String path) throws ControlException {
        Target t = resolve(path);
        change(() -> t.tree.rmdir(t.path), "rmdir", path);
    }

    /** Both paths resolved; a tree whose paths may lead to different trees checks they lead to one. */
    @Override
    public void link(String target, String linkPath) throws ControlException {
        Target link = resolve(linkPath);
        Target to = resolve(target);
        change(() -> link.tree.link(to.path, link.path), "link", target, linkPath);
    }

    @Override
    public void unlink(String linkPath) throws ControlException {
        Target t = resolve(linkPath);
        change(() -> t.tree.unlink(t.path), "unlink", linkPath);
    }
}
