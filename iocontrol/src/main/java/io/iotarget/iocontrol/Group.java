package io.iotarget.iocontrol;

import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.pressure.PressureGroup;
import io.iotarget.model.IoGroup;

import java.util.Collections;
import java.util.List;
import java.util.TreeMap;

/**
 * A node of the group tree: the analogue of a cgroup with the io controller. Holds the tree
 * shape, cgroup.subtree_control, the members bound to it (NBD exports, NVMe namespaces), and
 * its per-device state ({@link DeviceGroup}, created lazily like a blkg).
 *
 * <p>Thread-safety: the shape and configuration change only under the controller's tree lock;
 * the IO path reads {@link #deviceGroup(int)} and {@link #effective()} without locks.
 */
public final class Group implements PolicyGroup {
    private static final DeviceGroup[] NO_DEVICES = new DeviceGroup[0];

    private final long id;
    private final String name;
    private final Group parent;
    private final int depth;
    final TreeMap<String, Group> children = new TreeMap<>();
    final Object[] policyData;
    /** io.pressure of this group and its descendants' queues. */
    private final PressureGroup pressure;

    /** cgroup.subtree_control has "io". Tree lock. */
    boolean ioInSubtree;
    /** Members bound to this group (exports, namespaces); rmdir refuses while non-zero. Tree lock. */
    int members;
    /** cgroup.max.descendants / cgroup.max.depth; Long.MAX_VALUE = max. Tree lock. */
    long maxDescendants = Long.MAX_VALUE;
    long maxDepth = Long.MAX_VALUE;
    /**
     * Made by a host's connect under cgroup_per_host, and not used by the operator since (no
     * file written, no group made in it, nothing bound to it): it holds nothing of its own, so
     * a save leaves it out and, once idle, {@link GroupTree} may remove it. Tree lock.
     */
    boolean automatic;
    /** A host's IO has been charged here under cgroup_per_host since the server started ({@link GroupTree#bindHostChild}). Tree lock. */
    boolean hostGroup;
    /** Named as a host's group was before kind prefixes, and reported as such once ({@link GroupTree#onLegacyHostGroup}). Tree lock. */
    boolean legacyWarned;
    /** When an automatic group last became idle, in the tree's order of such events (smaller is older). Tree lock. */
    long idleOrder;

    /** Where this group's IO is charged: itself, or its nearest ancestor with io enabled. */
    private volatile Group effective;
    private volatile boolean online = true;
    private volatile DeviceGroup[] perDevice = NO_DEVICES;

    Group(long id, String name, Group parent, int policyCount) {
        this.id = id;
        this.name = name;
        this.parent = parent;
        this.depth = parent == null ? 0 : parent.depth + 1;
        this.policyData = new Object[policyCount];
        this.pressure = new PressureGroup(parent == null ? null : parent.pressure);
        this.effective = this;
    }

    /**
     * The group a request or binding carries as an {@link IoGroup}, or a policy hands back as a
     * {@link PolicyGroup}: model and the policies name groups only by those interfaces, and the
     * controller's groups are their only implementation, so this one place turns them back (a
     * type check, no allocation). Any thread.
     */
    public static Group of(IoGroup group) {
        return (Group) group;
    }

    @Override
    public long id() {
        return id;
    }

    /** io.pressure's state (cgroup core: every group has it, io enabled or not). */
    public PressureGroup pressure() {
        return pressure;
    }

    /** The directory name; "" for the root. */
    public String name() {
        return name;
    }

    @Override
    public String path() {
        if (parent == null) return "/";
        StringBuilder sb = new StringBuilder();
        appendPath(sb);
        return sb.toString();
    }

    private void appendPath(StringBuilder sb) {
        if (parent == null) return;
        parent.appendPath(sb);
        sb.append('/').append(name);
    }

    /** The parent group, or null for the root. */
    public Group parent() {
        return parent;
    }

    public boolean isRoot() {
        return parent == null;
    }

    /** 0 for the root. */
    public int depth() {
        return depth;
    }

    public boolean online() {
        return online;
    }

    /** The io controller is enabled here: this is the root, or the parent lists io in cgroup.subtree_control. */
    public boolean ioEnabled() {
        return parent == null || parent.ioInSubtree;
    }

    /** cgroup.subtree_control has io. */
    public boolean ioInSubtree() {
        return ioInSubtree;
    }

    /** A snapshot of the children, by name. Tree lock: a host's disconnect may remove one meanwhile. */
    public List<Group> children() {
        return List.copyOf(children.values());
    }

    /** A host's automatic group under cgroup_per_host ({@link GroupTree#bindHostChild}), not yet the operator's. Tree lock. */
    public boolean automatic() {
        return automatic;
    }

    /** A host's group under cgroup_per_host: one of its connections has paid here since the server started. Tree lock. */
    public boolean hostGroup() {
        return hostGroup;
    }

    /** Members bound to this group. */
    public int members() {
        return members;
    }

    /**
     * The group that pays for this group's IO, as the kernel's {@code cgroup_e_css}: the group
     * itself when io is enabled here and it is online, else the nearest such ancestor.
     */
    public Group effective() {
        return effective;
    }

    void recomputeEffective() {
        Group g = this;
        while (g.parent != null && (!g.online || !g.parent.ioInSubtree)) g = g.parent;
        effective = g;
    }

    void markOffline() {
        online = false;
    }

    /** Per-device state, or null if this group has none on that device yet. Lock-free. */
    public DeviceGroup deviceGroup(int deviceIndex) {
        DeviceGroup[] a = perDevice;
        return deviceIndex < a.length ? a[deviceIndex] : null;
    }

    /** All per-device state of this group, in device order. Lock-free snapshot. */
    public List<DeviceGroup> deviceGroups() {
        DeviceGroup[] a = perDevice;
        java.util.ArrayList<DeviceGroup> list = new java.util.ArrayList<>(a.length);
        for (DeviceGroup dg : a) if (dg != null) list.add(dg);
        return Collections.unmodifiableList(list);
    }

    /** Tree lock. */
    void putDeviceGroup(int deviceIndex, DeviceGroup dg) {
        DeviceGroup[] a = perDevice;
        if (deviceIndex >= a.length) a = java.util.Arrays.copyOf(a, deviceIndex + 1);
        else a = a.clone();
        a[deviceIndex] = dg;
        perDevice = a;
    }

    /** Tree lock. */
    void removeDeviceGroup(int deviceIndex) {
        DeviceGroup[] a = perDevice;
        if (deviceIndex >= a.length || a[deviceIndex] == null) return;
        a = a.clone();
        a[deviceIndex] = null;
        perDevice = a;
    }

    /** The policy's device-independent data for this group. */
    public Object policyData(int policyIndex) {
        return policyData[policyIndex];
    }

    int descendantCount() {
        int n = 0;
        for (Group c : children.values()) n += 1 + c.descendantCount();
        return n;
    }

    @Override
    public String toString() {
        return path();
    }
}
