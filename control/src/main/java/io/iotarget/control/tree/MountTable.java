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
public final class MountTable extends ForwardingTree {
    /** Where relative paths land. */
    public static final String CGROUP = "cgroup";

    private final Map<String, ConfigTree> mounts = new LinkedHashMap<>();

    /** Mounts {@code tree} at {@code /name}; done once at start-up. */
    public synchronized MountTable mount(String name, ConfigTree tree) {
        if (mounts.putIfAbsent(name, tree) != null) throw new IllegalStateException(name + " is already mounted");
        return this;
    }

    @Override
    public Target resolve(String path) throws ControlException {
        return mounted(path).target();
    }

    /** A path resolved to the name of its mount, its tree and the path inside it. */
    private record Mounted(String mount, ConfigTree tree, String path) {
        Target target() {
            return new Target(tree, path);
        }
    }

    private synchronized Mounted mounted(String path) throws ControlException {
        if (!path.startsWith("/")) return new Mounted(CGROUP, tree(CGROUP), path);
        List<String> names = TreePath.split(path);
        String name = names.isEmpty() ? "" : names.getFirst();
        return new Mounted(name, tree(name), String.join("/", names.subList(Math.min(1, names.size()), names.size())));
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
        return isRoot(path) ? Kind.DIRECTORY : super.kind(path);
    }

    @Override
    public List<String> list(String path) throws ControlException {
        if (!isRoot(path)) return super.list(path);
        List<String> names = new ArrayList<>();
        for (String n : mountNames()) names.add(n + "/");
        return names;
    }

    @Override
    public void link(String target, String linkPath) throws ControlException {
        Mounted link = mounted(linkPath);
        Mounted to = mounted(target);
        if (!link.mount.equals(to.mount)) throw new ControlException(Errno.EINVAL, "a link must point inside its own tree (/" + link.mount + ")");
        link.tree.link(to.path, link.path);
    }

    @Override
    public String readLink(String linkPath) throws ControlException {
        Mounted m = mounted(linkPath);
        return "/" + m.mount + "/" + m.tree.readLink(m.path);
    }
}
