package io.iotarget.control.tree;

import io.iotarget.cluster.Fence;
import io.iotarget.cluster.GatewayGroup;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.TreePath;

import java.io.IOException;
import java.util.List;
import java.util.SortedSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * {@code /cluster}: this node's gateway group as the store last said (docs/ha.md), read-only but
 * for the pins. Mounted only when the config names a {@code cluster.group}.
 *
 * <pre>
 *  cluster/node                        this node's name (cluster.node)
 *  cluster/group                       the gateway group (cluster.group)
 *  cluster/fence_ms                    how long this node's lease holds by its own deadline, ms (0: fenced)
 *  cluster/members/NODE/lease          the member's etcd lease, hex
 *  cluster/members/NODE/cntlid_range   its controller ids: MIN MAX
 *  cluster/members/NODE/ana_groups     the ANA groups it owns (optimized on its ports), ascending
 *  cluster/members/NODE/serves         the ANA groups of its shared namespaces
 *  cluster/ana_groups/G/owner          G's owner; "OWNER -> NEXT" while a move is under way
 *  cluster/ana_groups/G/pin            the node G is pinned to (written: pins it; written empty: unpins)
 * </pre>
 * Members are the live ones (their lease is in etcd), as of the group's last interval. Nothing
 * here is saved by {@code save}: the store keeps it. Any thread.
 */
public final class ClusterTree implements ConfigTree {
    private static final List<String> ROOT = List.of("node", "group", "fence_ms", "members/", "ana_groups/");
    private static final List<String> MEMBER = List.of("lease", "cntlid_range", "ana_groups", "serves");
    private static final List<String> GROUP = List.of("owner", "pin");

    private final GatewayGroup group;
    private final Fence fence;

    public ClusterTree(GatewayGroup group, Fence fence) {
        this.group = group;
        this.fence = fence;
    }

    private static ControlException missing(String path) {
        return new ControlException(Errno.ENOENT, "/cluster/" + path + ": no such file or directory");
    }

    @Override
    public Kind kind(String path) throws ControlException {
        List<String> p = TreePath.split(path);
        GatewayGroup.View v = group.view();
        return switch (p.size()) {
            case 0 -> Kind.DIRECTORY;
            case 1 -> switch (p.get(0)) {
                case "node", "group", "fence_ms" -> Kind.FILE;
                case "members", "ana_groups" -> Kind.DIRECTORY;
                default -> throw missing(path);
            };
            case 2 -> {
                if (p.get(0).equals("members") && v.members().containsKey(p.get(1))) yield Kind.DIRECTORY;
                if (p.get(0).equals("ana_groups") && groupId(p.get(1)) != null && groups(v).contains(groupId(p.get(1)))) yield Kind.DIRECTORY;
                throw missing(path);
            }
            case 3 -> {
                kind(p.get(0) + "/" + p.get(1));
                if (p.get(0).equals("members") && MEMBER.contains(p.get(2)) || p.get(0).equals("ana_groups") && GROUP.contains(p.get(2))) yield Kind.FILE;
                throw missing(path);
            }
            default -> throw missing(path);
        };
    }

    private static Integer groupId(String name) {
        try {
            int g = Integer.parseInt(name);
            return name.equals(Integer.toString(g)) ? g : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** The ANA groups the group knows of: served by a live member, owned or pinned. */
    private static SortedSet<Integer> groups(GatewayGroup.View v) {
        SortedSet<Integer> out = new java.util.TreeSet<>(v.owners().keySet());
        for (GatewayGroup.MemberView m : v.members().values()) out.addAll(m.serves());
        return out;
    }

    @Override
    public List<String> list(String path) throws ControlException {
        if (kind(path) != Kind.DIRECTORY) throw new ControlException(Errno.ENOTDIR, "/cluster/" + path + ": not a directory");
        List<String> p = TreePath.split(path);
        GatewayGroup.View v = group.view();
        if (p.isEmpty()) return ROOT;
        if (p.size() == 1 && p.get(0).equals("members")) return v.members().keySet().stream().map(n -> n + "/").toList();
        if (p.size() == 1) return groups(v).stream().map(g -> g + "/").toList();
        return p.get(0).equals("members") ? MEMBER : GROUP;
    }

    @Override
    public String read(String path) throws ControlException {
        if (kind(path) != Kind.FILE) throw new ControlException(Errno.EISDIR, "/cluster/" + path + ": is a directory");
        List<String> p = TreePath.split(path);
        GatewayGroup.View v = group.view();
        if (p.size() == 1) {
            return switch (p.get(0)) {
                case "node" -> group.node();
                case "group" -> group.group();
                default -> Long.toString(Math.max(0, TimeUnit.NANOSECONDS.toMillis(fence.validUntilNs() - System.nanoTime())));
            };
        }
        if (p.get(0).equals("members")) {
            GatewayGroup.MemberView m = v.members().get(p.get(1));
            return switch (p.get(2)) {
                case "lease" -> Long.toHexString(m.lease());
                case "cntlid_range" -> m.cntlidMin() + " " + m.cntlidMax();
                case "ana_groups" -> join(m.owns());
                default -> join(m.serves());
            };
        }
        GatewayGroup.Owner o = v.owners().get(groupId(p.get(1)));
        if (p.get(2).equals("pin")) return o == null || o.pin() == null ? "" : o.pin();
        if (o == null || o.node() == null) return "";
        return o.next() == null ? o.node() : o.node() + " -> " + o.next();
    }

    private static String join(SortedSet<Integer> groups) {
        return groups.stream().map(String::valueOf).collect(Collectors.joining(" "));
    }

    @Override
    public void write(String path, String value) throws ControlException {
        List<String> p = TreePath.split(path);
        if (p.size() == 3 && p.get(0).equals("ana_groups") && p.get(2).equals("pin") && groupId(p.get(1)) != null) {
            int g = groupId(p.get(1));
            if (g < 1 || g > 128) throw new ControlException(Errno.EINVAL, "/cluster/" + path + ": no ANA group " + p.get(1) + " (expected: 1..128)");
            String node = value.strip();
            if (!node.isEmpty() && !node.matches("[A-Za-z0-9._:@+-]{1,64}")) {
                throw new ControlException(Errno.EINVAL, "/cluster/" + path + "=" + node + " (expected: a node's name, or empty to unpin)");
            }
            try {
                group.pin(g, node);
            } catch (IOException e) {
                throw new ControlException(Errno.EIO, "/cluster/" + path + ": the store: " + e.getMessage());
            }
            return;
        }
        kind(path);
        throw new ControlException(Errno.EACCES, "/cluster/" + path + ": read-only (the store keeps it)");
    }

    @Override
    public List<String> replay(String path) {
        return List.of();
    }

    @Override
    public void mkdir(String path) throws ControlException {
        throw new ControlException(Errno.EPERM, "/cluster/" + path + ": members join by starting with cluster.group");
    }

    @Override
    public void rmdir(String path) throws ControlException {
        kind(path);
        throw new ControlException(Errno.EPERM, "/cluster/" + path + ": members leave by stopping (their lease ends)");
    }
}
