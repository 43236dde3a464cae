package io.iotarget.iocontrol;

import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.iocontrol.chain.PolicyChain;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.host.ConfigChange;
import io.iotarget.iocontrol.pressure.Pressure;
import io.iotarget.iocontrol.pressure.Trigger;
import io.iotarget.iocontrol.stat.DeviceStats;
import io.iotarget.iocontrol.stat.StatFlusher;
import io.iotarget.model.Clock;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;
import io.iotarget.model.IoRequest;
import io.iotarget.model.tree.TreePath;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * The group tree, as cgroupfs presents it: groups addressed by path, mkdir and rmdir with the
 * kernel's rules, the interface files of each directory, members bound to groups, and the
 * (group, device) pairs ({@link DeviceGroup}, the kernel's blkg) made lazily, ancestors first.
 *
 * <p>Threads: any thread. Every change and every file read or write takes the tree lock, so
 * files see a tree that does not change under them; a configuration change then takes the
 * device's lock through the {@link PolicyChain} (lock order: tree, device, stats flusher). The
 * IO path reads the tree without locks ({@link Group#effective()}, {@link Group#deviceGroup}).
 */
public final class GroupTree {
    /** cgroup files take one write of at most a page (kernfs' atomic_write_len = PAGE_SIZE). */
    public static final int MAX_WRITE_BYTES = 4096;
    /** The file {@link #watch} takes triggers on. */
    public static final String PRESSURE_FILE = "io.pressure";
    /**
     * Idle automatic per-host children ({@link Group#automatic}) a group keeps: one more idle
     * one removes the one idle longest. Hosts connected at the moment are not counted (the
     * transport's connection limits bound them), so a host that cycles through identities
     * can push out only groups that hold nothing but stats and whose host is gone, never a
     * connected host's group nor one the operator has used. 256 keeps the io.stat of the
     * last 256 hosts that went, in well under a megabyte.
     */
    public static final int IDLE_HOST_CHILDREN_KEPT = 256;

    private final ReentrantLock treeLock = new ReentrantLock();
    private final AtomicLong nextGroupId = new AtomicLong(1);
    private final StatFlusher flusher = new StatFlusher();
    private final List<IoPolicy> policies;
    private final PolicyChain chain;
    private final Clock clock;
    private final Map<String, InterfaceFile> files = new LinkedHashMap<>();
    private final Group root;
    private volatile Runnable hostChildListener;
    private volatile BiConsumer<String, String> legacyHostGroupListener;
    /** The last {@link Group#idleOrder} given. Tree lock. */
    private long idleEvents;
    /** Written under the tree lock, read by metrics without it. */
    private volatile long hostChildrenRemoved;

    /**
     * @param clock read only by configuration changes (a new limit starts a new slice "now");
     *              the IO path takes its time as an argument
     */
    GroupTree(PolicyChain chain, Clock clock) {
        this.chain = chain;
        this.policies = chain.policies();
        this.clock = clock;
        for (InterfaceFile f : CoreFiles.all(this)) files.put(f.name(), f);
        for (IoPolicy p : policies) for (InterfaceFile f : p.files()) files.put(f.name(), f);
        this.root = newGroup("", null);
        this.root.ioInSubtree = true;
    }

    public Group root() {
        return root;
    }

    /** The tree lock, for policies' configuration writes (take it before any device lock). */
    public ReentrantLock treeLock() {
        return treeLock;
    }

    /** io.pressure's tracker. */
    public Pressure pressure() {
        return chain.pressure();
    }

    Clock clock() {
        return clock;
    }

    /** io.stat's "updated" list; readers hold its lock while they flush and read totals. */
    public StatFlusher flusher() {
        return flusher;
    }

    /**
     * Folds the latency recorded in {@code g}'s subtree into its pairs' totals, so that theirs
     * and {@code g}'s are up to date (ancestors' too). Tree lock and the flusher's lock held.
     */
    public void foldLatency(Group g) {
        forEachGroup(g, member -> {
            for (DeviceGroup dg : member.deviceGroups()) dg.latency().fold();
        });
    }

    // ---------------------------------------------------------------- (group, device) pairs

    /** The chain for a new device, with the root group's pair on it. */
    DeviceControl attach(Device device, int queueDepth) {
        treeLock.lock();
        try {
            return chain.attach(device, queueDepth, dc -> createDeviceGroupLocked(root, dc));
        } finally {
            treeLock.unlock();
        }
    }

    /**
     * The device goes away: every pair on it loses its parked requests (returned, to fail in
     * dispatch) and is removed, its counters with it. {@code beforeDetach} runs first, under
     * the tree lock (the registry forgets the device there).
     */
    List<IoRequest> detach(DeviceControl dc, long nowNs, Runnable beforeDetach) {
        treeLock.lock();
        try {
            beforeDetach.run();
            int index = dc.device().index();
            List<DeviceGroup> pairs = new ArrayList<>();
            forEachGroupChildrenFirst(root, g -> {
                DeviceGroup dg = g.deviceGroup(index);
                if (dg != null) pairs.add(dg);
            });
            List<IoRequest> released = chain.detach(dc, pairs, nowNs);
            forEachGroup(root, g -> g.removeDeviceGroup(index));
            return released;
        } finally {
            treeLock.unlock();
        }
    }

    /** The pair the request is charged to: its group's effective one on the device, made if missing. */
    DeviceGroup deviceGroupFor(IoRequest io, DeviceControl dc) {
        Group g = Group.of(io.group()).effective();
        DeviceGroup dg = g.deviceGroup(dc.device().index());
        return dg != null ? dg : ensureDeviceGroup(g, dc);
    }

    /** The group's state on the device, created (with missing ancestors) if needed. */
    public DeviceGroup ensureDeviceGroup(Group group, DeviceControl dc) {
        DeviceGroup dg = group.deviceGroup(dc.device().index());
        if (dg != null) return dg;
        treeLock.lock();
        try {
            return createDeviceGroupLocked(group, dc);
        } finally {
            treeLock.unlock();
        }
    }

    private DeviceGroup createDeviceGroupLocked(Group group, DeviceControl dc) {
        int index = dc.device().index();
        DeviceGroup existing = group.deviceGroup(index);
        if (existing != null) return existing;
        DeviceGroup parent = group.parent() == null ? null : createDeviceGroupLocked(group.parent(), dc);
        DeviceStats stats = new DeviceStats(parent == null ? null : parent.stats(), flusher);
        DeviceGroup dg = new DeviceGroup(group, dc, parent, stats);
        dg.policyStates(chain.newGroupStates(dg));
        group.putDeviceGroup(index, dg);
        return dg;
    }

    /**
     * Applies a configuration change to {@code group} on one device: creates the pair (and its
     * ancestors) if needed, as the kernel's {@code blkg_conf_prep} does, runs {@code change}
     * under the locks, and makes sure requests it released get dispatched.
     */
    public void configure(Group group, DeviceControl dc, ConfigChange change) throws ControlException {
        treeLock.lock();
        try {
            if (!group.online()) throw new ControlException(Errno.ENODEV, group.path() + " was removed");
            if (dc.removed()) throw new ControlException(Errno.ENODEV, "device " + dc.device().name() + " was removed");
            chain.configure(createDeviceGroupLocked(group, dc), clock.nanoTime(), change);
        } finally {
            treeLock.unlock();
        }
    }

    /** Removes every (group, device) state of {@code g}, releasing what its policies had parked. Tree lock held. */
    private void offlineDeviceGroups(Group g) {
        for (DeviceGroup dg : g.deviceGroups()) {
            chain.offline(dg, clock.nanoTime());
            // What it recorded stays in its ancestors, as its io.stat does.
            flusher.lock().lock();
            try {
                dg.latency().fold();
            } finally {
                flusher.lock().unlock();
            }
            g.removeDeviceGroup(dg.device().device().index());
        }
    }

    // ---------------------------------------------------------------- groups

    private Group newGroup(String name, Group parent) {
        Group g = new Group(nextGroupId.getAndIncrement(), name, parent, policies.size());
        for (int i = 0; i < policies.size(); i++) g.policyData[i] = policies.get(i).newGroupData(g);
        g.recomputeEffective();
        return g;
    }

    /** Finds a group by path ("" or "/" is the root). */
    public Group group(String path) throws ControlException {
        treeLock.lock();
        try {
            return resolve(path);
        } finally {
            treeLock.unlock();
        }
    }

    /** Finds an online group by id, or null. */
    public Group groupById(long id) {
        treeLock.lock();
        try {
            Group[] found = {null};
            forEachGroup(root, g -> {
                if (g.id() == id) found[0] = g;
            });
            return found[0];
        } finally {
            treeLock.unlock();
        }
    }

    /** mkdir(2) in the group tree. */
    public Group mkdir(String path) throws ControlException {
        List<String> parts = TreePath.split(path);
        if (parts.isEmpty()) throw new ControlException(Errno.EEXIST, "the root group exists");
        String name = parts.getLast();
        checkName(name);
        treeLock.lock();
        try {
            Group parent = resolve(parts.subList(0, parts.size() - 1));
            Group made = mkdirLocked(parent, name);
            claim(parent);
            return made;
        } finally {
            treeLock.unlock();
        }
    }

    /** mkdir of a checked name under {@code parent}, with cgroup's limits. Tree lock held. */
    private Group mkdirLocked(Group parent, String name) throws ControlException {
        if (parent.children.containsKey(name) || files.containsKey(name)) {
            throw new ControlException(Errno.EEXIST, (parent.isRoot() ? "" : parent.path().substring(1) + "/") + name + " exists");
        }
        int depth = 1;
        for (Group a = parent; a != null; a = a.parent(), depth++) {
            if (a.descendantCount() >= a.maxDescendants) {
                throw new ControlException(Errno.EAGAIN, a.path() + " has reached cgroup.max.descendants=" + a.maxDescendants);
            }
            if (depth > a.maxDepth) {
                throw new ControlException(Errno.EAGAIN, a.path() + " has reached cgroup.max.depth=" + a.maxDepth);
            }
        }
        Group g = newGroup(name, parent);
        parent.children.put(name, g);
        return g;
    }

    /**
     * A host's IO under {@code cgroup_per_host} is charged to the child of {@code parent} named
     * after it ({@link HostGroupName}): finds that child, or makes it with mkdir's rules
     * (cgroup.max.descendants, cgroup.max.depth, a name no file has) and has each policy seed it
     * ({@link IoPolicy#hostChildMade}: io.max.per_host); enables io in cgroup.subtree_control of
     * {@code parent} and of any ancestor that lacks it; and binds the child, so that rmdir fails
     * with EBUSY until {@link #unbind}. A child that exists already, made by an earlier connect
     * or by mkdir, is used as it is. A child made here is {@link Group#automatic}: a save leaves
     * it out, and once idle it may be removed ({@link #IDLE_HOST_CHILDREN_KEPT}). Where an
     * ancestor's cgroup.max.descendants is reached, the idle automatic group below it that has
     * been idle longest is removed to make room (as rmdir would; a connected host's group and one
     * the operator used never are), so that hosts that came and went cannot lock later ones out;
     * only without such a group is the host refused. Enabling io is reported to the
     * {@link #onHostChildMade} listener, under the tree lock. When the child is made and
     * {@code parent} has an ordinary child with the name versions before kind prefixes gave
     * the host ({@link HostGroupName#legacy}), the {@link #onLegacyHostGroup} listener hears of
     * it, once per such group: the operator configured it for this host, which no longer pays
     * there.
     *
     * @throws ControlException mkdir's errnos (EEXIST for a file's name, EAGAIN), ENOENT when
     *                          {@code parent} was removed
     */
    public Group bindHostChild(Group parent, HostIdentity identity) throws ControlException {
        String name = HostGroupName.of(identity);
        treeLock.lock();
        try {
            if (!parent.online()) throw new ControlException(Errno.ENOENT, parent.path() + " was removed");
            Group child = parent.children.get(name);
            boolean made = child == null;
            if (made) {
                checkName(name);
                if (files.containsKey(name)) {
                    throw new ControlException(Errno.EEXIST, "host " + identity + ": its group name " + name + " is a file of " + parent.path());
                }
                makeRoomForHostChild(parent);
                child = mkdirLocked(parent, name);
                child.automatic = true;
                warnOfLegacyGroup(parent, identity, child);
            }
            boolean enabled = enableIoDownTo(parent);
            if (made) for (IoPolicy p : policies) p.hostChildMade(parent, child);
            if (enabled) changedOutsideRequests();
            child.hostGroup = true;
            child.members++;
            return child;
        } finally {
            treeLock.unlock();
        }
    }

    /**
     * Tells the {@link #onLegacyHostGroup} listener of an ordinary child of {@code parent}
     * named as earlier versions named {@code identity}'s group, the first time a host of that
     * name gets its new {@code child}. Tree lock held.
     */
    private void warnOfLegacyGroup(Group parent, HostIdentity identity, Group child) {
        String text = identity.legacyText();
        if (text == null || text.isEmpty()) return;
        Group legacy = parent.children.get(HostGroupName.legacy(text));
        if (legacy == null || legacy == child || legacy.automatic || legacy.legacyWarned) return;
        legacy.legacyWarned = true;
        var listener = legacyHostGroupListener;
        if (listener != null) listener.accept(legacy.path(), child.path());
    }

    /**
     * Runs {@code listener} (under the tree lock; it must not block) with the path of an
     * ordinary group named as versions before kind prefixes named a host's group, and the path
     * of the group that host now pays in ({@link #bindHostChild}), so that the operator can
     * move the old group's settings. One listener; a later call replaces it.
     */
    public void onLegacyHostGroup(BiConsumer<String, String> listener) {
        legacyHostGroupListener = listener;
    }

    /**
     * For every ancestor of a new child of {@code parent} (itself included) at its
     * cgroup.max.descendants, removes the idle automatic group below it that has been idle
     * longest, while there is one. Tree lock held.
     */
    private void makeRoomForHostChild(Group parent) {
        for (Group a = parent; a != null; a = a.parent()) {
            while (a.descendantCount() >= a.maxDescendants) {
                Group idle = longestIdleAutomatic(a, null);
                if (idle == null) break;           // nothing to remove: mkdir refuses with EAGAIN
                removeHostChild(idle);
            }
        }
    }

    /** The idle automatic group in {@code g}'s subtree (below it) with the smallest idleOrder, or {@code best}. Tree lock held. */
    private static Group longestIdleAutomatic(Group g, Group best) {
        for (Group c : g.children.values()) {
            if (c.automatic && c.members == 0 && (best == null || c.idleOrder < best.idleOrder)) best = c;
            best = longestIdleAutomatic(c, best);
        }
        return best;
    }

    /**
     * Enables io in cgroup.subtree_control of {@code g} and of every ancestor that lacks it, top
     * first; true when one lacked it. Tree lock held.
     */
    private boolean enableIoDownTo(Group g) {
        if (g.ioInSubtree) return false;
        if (g.parent() != null) enableIoDownTo(g.parent());
        setIoInSubtree(g, true);
        return true;
    }

    /**
     * Runs {@code listener} (under the tree lock; it must not block) each time what a save keeps
     * changes without a request naming the change: {@link #bindHostChild} enabled io in a
     * cgroup.subtree_control, or an automatic child, which a save leaves out, became an
     * ordinary group ({@link #claim}) — so that whoever keeps the configuration saves it whole
     * rather than journal a change to a group its last save lacks. One listener; a later call
     * replaces it.
     */
    public void onHostChildMade(Runnable listener) {
        hostChildListener = listener;
    }

    private void changedOutsideRequests() {
        Runnable listener = hostChildListener;
        if (listener != null) listener.run();
    }

    /**
     * The operator used {@code g} by its path (wrote a file, made a group in it, bound it, or
     * removes it): if it was automatic it is an ordinary group from now on, which a save keeps
     * and nothing removes but rmdir. Tree lock held.
     */
    private void claim(Group g) {
        if (!g.automatic) return;
        g.automatic = false;
        changedOutsideRequests();
    }

    /** Whether the group at {@code path} is automatic ({@link Group#automatic}): a save leaves it out. */
    public boolean automatic(String path) throws ControlException {
        treeLock.lock();
        try {
            return resolve(path).automatic;
        } finally {
            treeLock.unlock();
        }
    }

    /**
     * rmdir(2): refuses (EBUSY) while the group has children or bound members. Parked IO is
     * released, and the group's counters stay in its ancestors' totals.
     */
    public void rmdir(String path) throws ControlException {
        treeLock.lock();
        try {
            Group g = resolve(path);
            if (g.isRoot()) throw new ControlException(Errno.EBUSY, "the root group cannot be removed");
            if (!g.children.isEmpty()) throw new ControlException(Errno.EBUSY, g.path() + " has child groups");
            if (g.members > 0) throw new ControlException(Errno.EBUSY, g.path() + " has " + g.members + " bound user(s): enabled exports or namespaces, nvmet host entries, hosts connected under cgroup_per_host");
            claim(g);
            remove(g);
        } finally {
            treeLock.unlock();
        }
    }

    /** Removes an idle group without children; its counters stay in its ancestors' totals. Tree lock held. */
    private void remove(Group g) {
        g.markOffline();
        g.pressure().markRemoved();
        g.recomputeEffective();
        offlineDeviceGroups(g);
        g.parent().children.remove(g.name());
    }

    /**
     * Removes the automatic children of {@code parent} that have been idle longest while more
     * than {@link #IDLE_HOST_CHILDREN_KEPT} are idle, as rmdir would. Tree lock held.
     */
    private void removeIdleHostChildren(Group parent) {
        List<Group> idle = new ArrayList<>();
        for (Group c : parent.children.values()) if (c.automatic && c.members == 0) idle.add(c);
        if (idle.size() <= IDLE_HOST_CHILDREN_KEPT) return;
        idle.sort(Comparator.comparingLong(c -> c.idleOrder));
        for (Group g : idle.subList(0, idle.size() - IDLE_HOST_CHILDREN_KEPT)) removeHostChild(g);
    }

    /** Removes an idle automatic group, as rmdir would, and counts it ({@link #hostChildrenRemoved}). Tree lock held. */
    private void removeHostChild(Group g) {
        remove(g);
        hostChildrenRemoved++;
    }

    /** Idle automatic per-host groups removed so far, to keep within {@link #IDLE_HOST_CHILDREN_KEPT} or cgroup.max.descendants. */
    public long hostChildrenRemoved() {
        return hostChildrenRemoved;
    }

    /** Binds a member (export, namespace) to the group: rmdir now fails with EBUSY. */
    public void bind(Group group) throws ControlException {
        treeLock.lock();
        try {
            if (!group.online()) throw new ControlException(Errno.ENOENT, group.path() + " was removed");
            claim(group);
            group.members++;
        } finally {
            treeLock.unlock();
        }
    }

    /** Undoes one {@link #bind} or {@link #bindHostChild}. */
    public void unbind(Group group) {
        treeLock.lock();
        try {
            if (group.members > 0) group.members--;
            if (group.automatic && group.members == 0 && group.online()) {
                group.idleOrder = ++idleEvents;
                removeIdleHostChildren(group.parent());
            }
        } finally {
            treeLock.unlock();
        }
    }

    /**
     * Applies a cgroup.subtree_control change: enabling io makes the children's io.* files
     * appear; disabling it discards the children's io state (their IO is charged here from
     * now on). Tree lock held; checks done by the caller.
     */
    void setIoInSubtree(Group group, boolean enabled) {
        if (group.ioInSubtree == enabled) return;
        group.ioInSubtree = enabled;
        for (Group child : group.children.values()) {
            if (!enabled) {
                offlineDeviceGroups(child);
                for (int i = 0; i < policies.size(); i++) child.policyData[i] = policies.get(i).newGroupData(child);
            }
            forEachGroup(child, Group::recomputeEffective);
        }
    }

    // ---------------------------------------------------------------- files

    /** Directory listing: child groups (with a trailing '/') then files, as {@code ls -p} would. */
    public List<String> list(String path) throws ControlException {
        treeLock.lock();
        try {
            Group g = resolve(path);
            List<String> out = new ArrayList<>();
            for (String child : g.children.keySet()) out.add(child + "/");
            for (InterfaceFile f : files.values()) if (f.presentIn(g)) out.add(f.name());
            return out;
        } finally {
            treeLock.unlock();
        }
    }

    /** Reads an interface file, e.g. {@code tenants/a/io.stat} or {@code io.cost.qos}. */
    public String read(String path) throws ControlException {
        treeLock.lock();
        try {
            FileRef ref = file(path);
            return ref.file.read(ref.group);
        } finally {
            treeLock.unlock();
        }
    }

    /** The writes that give the file its current value in a new tree: {@link InterfaceFile#replay}. */
    public List<String> replay(String path) throws ControlException {
        treeLock.lock();
        try {
            FileRef ref = file(path);
            return ref.file.replay(ref.group);
        } finally {
            treeLock.unlock();
        }
    }

    /**
     * Writes an interface file, {@code text} being what one write(2) carries; on error nothing
     * changed (io.cost.* aside, see their files). As cgroupfs: more than {@link #MAX_WRITE_BYTES}
     * bytes (UTF-8) is E2BIG, and an empty write succeeds without reaching the file. A NUL
     * character is EINVAL: the kernel would silently read the text only up to it.
     */
    public void write(String path, String text) throws ControlException {
        treeLock.lock();
        try {
            FileRef ref = file(path);
            int bytes = text.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_WRITE_BYTES) throw new ControlException(Errno.E2BIG, path + ": " + bytes + " bytes in one write (expected: at most " + MAX_WRITE_BYTES + ")");
            if (text.isEmpty()) return;
            if (text.indexOf('\0') >= 0) throw new ControlException(Errno.EINVAL, path + ": the write holds a NUL character");
            ref.file.write(ref.group, text);
            claim(ref.group);
        } finally {
            treeLock.unlock();
        }
    }

    /**
     * A trigger on a group's io.pressure, as a write to an open io.pressure file that is then
     * polled: {@code path} names the file ({@code tenants/a/io.pressure}), {@code text} is the
     * write ({@code some 150000 1000000}), with write's errors (E2BIG, EINVAL) and the kernel's
     * trigger rules. The caller polls it and must close it.
     */
    public Trigger watch(String path, String text) throws ControlException {
        treeLock.lock();
        try {
            FileRef ref = file(path);
            if (!ref.file.name().equals(PRESSURE_FILE)) throw new ControlException(Errno.EINVAL, path + ": only " + PRESSURE_FILE + " takes triggers");
            int bytes = text.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_WRITE_BYTES) throw new ControlException(Errno.E2BIG, path + ": " + bytes + " bytes in one write (expected: at most " + MAX_WRITE_BYTES + ")");
            return chain.pressure().watch(ref.group.pressure(), text, clock.nanoTime());
        } finally {
            treeLock.unlock();
        }
    }

    private record FileRef(Group group, InterfaceFile file) {
    }

    /** Tree lock held. */
    private FileRef file(String path) throws ControlException {
        List<String> parts = TreePath.split(path);
        if (parts.isEmpty()) throw new ControlException(Errno.EISDIR, "the root is a directory");
        String name = parts.getLast();
        Group g = resolve(parts.subList(0, parts.size() - 1));
        InterfaceFile f = files.get(name);
        if (f == null) {
            if (g.children.containsKey(name)) throw new ControlException(Errno.EISDIR, path + " is a group");
            throw new ControlException(Errno.ENOENT, "no file " + name + " in " + g.path());
        }
        if (!f.presentIn(g)) throw new ControlException(Errno.ENOENT, absentReason(g, f));
        return new FileRef(g, f);
    }

    private static String absentReason(Group g, InterfaceFile f) {
        return switch (f.placement()) {
            case ONLY_ON_ROOT -> f.name() + " exists only in the root group";
            case HOST_GROUPS -> f.name() + " exists only in a group a host has paid in under cgroup_per_host";
            case NOT_ON_ROOT -> g.isRoot() ? f.name() + " does not exist in the root group"
                    : f.name() + ": the io controller is not enabled for " + g.path()
                      + " (write +io to " + parentFile(g) + ")";
            case EVERYWHERE -> f.name() + ": the io controller is not enabled for " + g.path()
                    + " (write +io to " + parentFile(g) + ")";
        };
    }

    private static String parentFile(Group g) {
        return g.parent().isRoot() ? "cgroup.subtree_control" : g.parent().path().substring(1) + "/cgroup.subtree_control";
    }

    // ---------------------------------------------------------------- paths

    private Group resolve(String path) throws ControlException {
        return resolve(TreePath.split(path));
    }

    private Group resolve(List<String> parts) throws ControlException {
        Group g = root;
        for (String part : parts) {
            Group next = g.children.get(part);
            if (next == null) {
                if (files.containsKey(part)) throw new ControlException(Errno.ENOTDIR, part + " is a file");
                throw new ControlException(Errno.ENOENT, "no group " + (g.isRoot() ? "" : g.path().substring(1) + "/") + part);
            }
            g = next;
        }
        return g;
    }

    private static void checkName(String name) throws ControlException {
        // Paths drop empty and "." components (TreePath), so a group of such a name could be
        // neither read, saved nor removed: refused here too, whoever asks.
        if (name.isEmpty() || name.equals(".") || name.equals("..")) throw new ControlException(Errno.EINVAL, "group name '" + name + "' (expected: a name other than '', . and ..)");
        if (name.length() > 255) throw new ControlException(Errno.ENAMETOOLONG, "group name longer than 255 bytes");
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                         || c == '-' || c == '_' || c == '.' || c == '@' || c == '+' || c == ':' || c == '=' || c == ',';
            if (!ok) throw new ControlException(Errno.EINVAL, "group name '" + name + "' (expected: letters, digits and -_.@+:=,)");
        }
    }

    /** Visits every group, parents first, under the tree lock (which may already be held). */
    public void walk(Consumer<Group> action) {
        treeLock.lock();
        try {
            forEachGroup(root, action);
        } finally {
            treeLock.unlock();
        }
    }

    /** Pre-order walk. Tree lock held. */
    private static void forEachGroup(Group g, Consumer<Group> action) {
        action.accept(g);
        for (Group c : g.children.values()) forEachGroup(c, action);
    }

    /** Post-order walk. Tree lock held. */
    private static void forEachGroupChildrenFirst(Group g, Consumer<Group> action) {
        for (Group c : g.children.values()) forEachGroupChildrenFirst(c, action);
        action.accept(g);
    }
}
