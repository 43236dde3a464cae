package io.iotarget.control.tree;

import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.TreePath;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The control plane's single namespace: each tree is mounted under {@code /NAME}, and a path
 * without a leading slash is relative to {@code /cgroup}, so {@code tenants/a/io.max} reads
 * as it would in /sys/fs/cgroup. Any thread.
 */
public final class MountTable implements ConfigTree {
    /** Where relative paths land. */
    public static final String CGROUP = "cgroup";

    private final Map<String, ConfigTree> mounts = new LinkedHashMap<>();

    /** Mounts {@code tree} at {@code /name}; done once at start-up. */
    public synchronized MountTable mount(String name, ConfigTree tree) {
        if (mounts.putIfAbsent(name, tree) != null) throw new IllegalStateException(name + " is already mounted");
        return this;
    }

    /** A path resolved to its tree and the path inside it. */
    public record Resolved(String mount, ConfigTree tree, String path) {
    }

    public synchronized Resolved resolve(String path) throws ControlException {
        if (!path.startsWith("/")) return new Resolved(CGROUP, tree(CGROUP), path);
        List<String> names = TreePath.split(path);
        String name = names.isEmpty() ? "" : names.getFirst();
        return new Resolved(name, tree(name), String.join("/", names.subList(Math.min(1, names.size()), names.size())));
    }

    private ConfigTree tree(String name) throws ControlException {
        ConfigTree t = mounts.get(name);
        if (t == null) throw new ControlException(Errno.ENOENT, "no /" + name + " (mounted: " + String.join(", ", mounts.keySet()) + ")");
        return t;
    }

    /** Mount names, in mount order. */
    public synchronized List<String> mountNames() {
        return new ArrayList<>(mounts.keySet());
    }

    private static boolean isRoot(String path) {
        return path.equals("/");
    }

    @Override
    public Kind kind(String path) throws ControlException {
        if (isRoot(path)) return Kind.DIRECTORY;
        Resolved r = resolve(path);
        return r.tree.kind(r.path);
    }

    @Override
    public List<String> list(String path) throws ControlException {
        if (isRoot(path)) {
            List<String> names = new ArrayList<>();
            for (String n : mountNames()) names.add(n + "/");
            return names;
        }
        Resolved r = resolve(path);
        return r.tree.list(r.path);
    }

    @Override
    public String read(String path) throws ControlException {
        Resolved r = resolve(path);
        return r.tree.read(r.path);
    }

    @Override
    public void write(String path, String value) throws ControlException {
        Resolved r = resolve(path);
        r.tree.write(r.path, value);
    }

    @Override
    public List<String> replay(String path) throws ControlException {
        Resolved r = resolve(path);
        return r.tree.replay(r.path);
    }

    @Override
    public Watch watch(String path, String trigger) throws ControlException {
        Resolved r = resolve(path);
        return r.tree.watch(r.path, trigger);
    }

    @Override
    public void mkdir(String path) throws ControlException {
        Resolved r = resolve(path);
        r.tree.mkdir(r.path);
    }

    @Override
    public void rmdir(String path) throws ControlException {
        Resolved r = resolve(path);
        r.tree.rmdir(r.path);
    }

    @Override
    public void link(String target, String linkPath) throws ControlException {
        Resolved link = resolve(linkPath);
        Resolved to = resolve(target);
        if (!link.mount.equals(to.mount)) throw new ControlException(Errno.EINVAL, "a link must point inside its own tree (/" + link.mount + ")");
        link.tree.link(to.path, link.path);
    }

    @Override
    public void unlink(String linkPath) throws ControlException {
        Resolved r = resolve(linkPath);
        r.tree.unlink(r.path);
    }

    @Override
    public String readLink(String linkPath) throws ControlException {
        Resolved r = resolve(linkPath);
        return "/" + r.mount + "/" + r.tree.readLink(r.path);
    }
}
