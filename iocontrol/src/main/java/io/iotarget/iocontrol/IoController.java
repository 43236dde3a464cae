package io.iotarget.iocontrol;

import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.cost.CostPolicy;
import io.iotarget.iocontrol.policy.latency.LatencyPolicy;
import io.iotarget.iocontrol.policy.throttle.ThrottlePolicy;
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
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * The IO controller: a tree of groups with cgroup-v2 io interface files, and the one point
 * where every request is accounted and passed through the policy chain before it may reach a
 * backend.
 *
 * <pre>
 *  admit(io) ─► resolve group → (group, device) state, created lazily with its ancestors
 *            ─► throttle (io.max) ─► count io.stat ─► [latency] ─► cost (io.weight) ─► true
 *                    │ parked                                          │ parked
 *                    └──────── releaseDue(now) / complete(io) ─────────┴─► ready sink
 * </pre>
 *
 * <p>Thread-safety: every method may be called from any thread. The IO path takes no lock
 * when no policy applies to a request (only striped counters are touched); otherwise it takes
 * the device's lock, as the kernel takes the queue lock. Tree changes and configuration writes
 * take the tree lock (then, where needed, a device lock). The controller has no threads and
 * reads no clock: time comes in as {@code nowNs}, and when parked requests need a later call
 * it says so through the {@link ReleaseSignal}.
 */
public final class IoController {
    /** Policies before this index run before io.stat counts the request (the throttle only). */
    public static final int ACCOUNT_BEFORE_STAGE = 1;
    /** Bits of {@link IoRequest#policyFlags()} the controller uses to remember which stages admitted it. */
    public static final int STAGE_BITS_MASK = 0xff;

    private final ReentrantLock treeLock = new ReentrantLock();
    private final AtomicLong nextGroupId = new AtomicLong(1);
    private final StatFlusher flusher = new StatFlusher();
    private final List<IoPolicy> policies;
    private final Map<String, InterfaceFile> files = new LinkedHashMap<>();
    private final Group root;
    private volatile DeviceControl[] devices = new DeviceControl[0];
    private final Clock clock;
    private volatile ReleaseSignal signal = ReleaseSignal.NONE;

    /**
     * A controller with the standard chain: throttle (io.max), latency (io.latency), cost (io.weight).
     *
     * @param clock read only by configuration changes (a new limit starts a new slice "now");
     *              the IO path takes its time as an argument
     */
    public IoController(Clock clock) {
        this(clock, List.of(ThrottlePolicy::new, LatencyPolicy::new, CostPolicy::new));
    }

    public IoController(Clock clock, List<PolicyFactory> chain) {
        this.clock = clock;
        if (chain.size() > Integer.bitCount(STAGE_BITS_MASK)) throw new IllegalArgumentException("too many policies");
        List<IoPolicy> built = new ArrayList<>();
        for (int i = 0; i < chain.size(); i++) built.add(chain.get(i).create(this, i));
        this.policies = List.copyOf(built);
        for (InterfaceFile f : CoreFiles.all(this)) files.put(f.name(), f);
        for (IoPolicy p : policies) for (InterfaceFile f : p.files()) files.put(f.name(), f);
        this.root = newGroup("", null);
        this.root.ioInSubtree = true;
    }

    /** Where to ask for {@link #releaseDue} calls; set once by the engine. */
    public void releaseSignal(ReleaseSignal signal) {
        this.signal = signal;
    }

    /** The engine's clock, for configuration changes. */
    public Clock clock() {
        return clock;
    }

    public List<IoPolicy> policies() {
        return policies;
    }

    public StatFlusher flusher() {
        return flusher;
    }

    // ---------------------------------------------------------------- devices

    /** Makes a device of {@link DeviceControl#DEFAULT_QUEUE_DEPTH} known. */
    public DeviceControl registerDevice(Device device) {
        return registerDevice(device, DeviceControl.DEFAULT_QUEUE_DEPTH);
    }

    /**
     * Makes a device known: creates its policy instances and the root group's state on it.
     *
     * @param queueDepth requests its dispatch queue runs at once, &gt; 0
     */
    public DeviceControl registerDevice(Device device, int queueDepth) {
        if (queueDepth <= 0) throw new IllegalArgumentException("queueDepth " + queueDepth + " (expected: > 0)");
        treeLock.lock();
        try {
            DeviceControl[] current = devices;
            int index = device.index();
            if (index < current.length && current[index] != null && !current[index].removed) {
                throw new IllegalStateException("device index " + index + " already registered");
            }
            for (DeviceControl dc : current) {
                if (dc != null && !dc.removed && (dc.device().number().equals(device.number()) || dc.device().name().equals(device.name()))) {
                    throw new IllegalStateException("device " + device.name() + " (" + device.number() + ") already registered");
                }
            }
            DeviceControl dc = new DeviceControl(device, queueDepth, policies.size());
            for (int i = 0; i < policies.size(); i++) {
                int stage = i;
                dc.policies[i] = policies.get(i).attach(dc);
                dc.resumers[i] = io -> resume(dc, io, stage + 1);
                if (dc.policies[i].tracksCompletions()) dc.trackingStages |= 1 << i;
            }
            DeviceControl[] next = java.util.Arrays.copyOf(current, Math.max(current.length, index + 1));
            next[index] = dc;
            devices = next;
            dc.root = createDeviceGroupLocked(root, dc);
            return dc;
        } finally {
            treeLock.unlock();
        }
    }

    /**
     * Forgets a device, as when a disk goes away: every group loses its state there (its
     * counters with it) and parked requests are released at once, to fail in dispatch.
     */
    public void unregisterDevice(Device device, long nowNs, Consumer<IoRequest> sink) {
        List<IoRequest> released = new ArrayList<>();
        treeLock.lock();
        try {
            DeviceControl dc = deviceControl(device.index());
            if (dc == null) return;
            dc.removed = true;
            dc.lock.lock();
            try {
                long now = lockTime(dc, nowNs);
                // Stage by stage, and children before parents: what a stage releases moves on to
                // a later stage or (in io.max's hierarchy) up to the parent, so each queue is
                // emptied only after everything that can still land in it has.
                for (int i = 0; i < dc.policies.length; i++) {
                    int stage = i;
                    forEachGroupChildrenFirst(root, g -> {
                        DeviceGroup dg = g.deviceGroup(device.index());
                        if (dg != null) dc.policies[stage].onGroupOffline(dg, now, dc.resumers[stage]);
                    });
                }
                released.addAll(dc.ready);
                dc.ready.clear();
            } finally {
                dc.lock.unlock();
            }
            forEachGroup(root, g -> g.removeDeviceGroup(device.index()));
            DeviceControl[] next = devices.clone();
            next[device.index()] = null;
            devices = next;
        } finally {
            treeLock.unlock();
        }
        released.forEach(sink);
    }

    /** The device with this dense index, or null. Lock-free. */
    public DeviceControl deviceControl(int index) {
        DeviceControl[] a = devices;
        return index < a.length ? a[index] : null;
    }

    /** Registered devices in index order. */
    public List<DeviceControl> devices() {
        List<DeviceControl> list = new ArrayList<>();
        for (DeviceControl dc : devices) if (dc != null) list.add(dc);
        return Collections.unmodifiableList(list);
    }

    /**
     * Finds a device by {@code MAJ:MIN} or by name, as io.* files do.
     *
     * @throws ControlException ENODEV when no such device exists
     */
    public DeviceControl findDevice(String key) throws ControlException {
        for (DeviceControl dc : devices) {
            if (dc != null && (dc.device().number().toString().equals(key) || dc.device().name().equals(key))) return dc;
        }
        throw new ControlException(Errno.ENODEV, "no device " + key);
    }

    // ---------------------------------------------------------------- IO path

    /**
     * Accounts the request and runs it through the policy chain.
     *
     * @return true when it may be dispatched now; false when a policy parked it (it will come
     *         out of {@link #releaseDue} or {@link #complete} later)
     */
    public boolean admit(IoRequest io, long nowNs) {
        DeviceControl dc = controlOf(io);
        if (dc == null) return true;      // dispatch fails it: the device is gone
        DeviceGroup dg = deviceGroupFor(io, dc);
        DevicePolicy[] chain = dc.policies;
        boolean anyApplies = false;
        for (DevicePolicy p : chain) {
            if (p.applies(io, dg)) {
                anyApplies = true;
                break;
            }
        }
        if (!anyApplies) {
            account(io, dg);
            io.admitNs(nowNs);
            return true;
        }
        boolean admitted;
        boolean resumedOthers;
        long wakeBefore;
        dc.lock.lock();
        try {
            long now = lockTime(dc, nowNs);
            wakeBefore = dc.nextWakeNs;
            admitted = advance(dc, io, dg, 0, now);
            if (admitted) io.admitNs(now);
            // A stage may have started a timer (iocost's period) or resumed others' requests.
            updateNextWake(dc);
            resumedOthers = !dc.ready.isEmpty();
            if (resumedOthers) dc.readyPending = true;
        } finally {
            dc.lock.unlock();
        }
        if (resumedOthers) signal.releaseBy(Long.MIN_VALUE);
        else if (dc.nextWakeNs < wakeBefore) signal.releaseBy(dc.nextWakeNs);
        return admitted;
    }

    /** The request is leaving for the backend: policies that admitted it learn the issue time. */
    public void issue(IoRequest io, long nowNs) {
        DeviceControl dc = controlOf(io);
        if (dc == null) return;
        int stages = io.policyFlags() & dc.trackingStages;
        if (stages == 0) return;
        DeviceGroup dg = (DeviceGroup) io.policyGroup();
        dc.lock.lock();
        try {
            for (int i = 0; i < dc.policies.length; i++) {
                if ((stages & (1 << i)) != 0) dc.policies[i].onIssue(io, dg, lockTime(dc, nowNs));
            }
        } finally {
            dc.lock.unlock();
        }
    }

    /**
     * The backend finished the request: policies that admitted it see the completion, and any
     * request that this frees (a depth slot, say) goes to {@code sink}, outside the lock.
     *
     * @return how long the issuer must wait before hearing of the completion, in ns (iocost's
     *         delay for a group in debt); 0 to report it now
     */
    public long complete(IoRequest io, long nowNs, Consumer<IoRequest> sink) {
        DeviceControl dc = controlOf(io);
        if (dc == null) return 0;
        int stages = io.policyFlags() & dc.trackingStages;
        if (stages == 0) return 0;
        // The pair that was charged, not the group's current one: if io was enabled below it
        // meanwhile, iocost must still see its in-flight cost come back, or it never idles.
        DeviceGroup dg = (DeviceGroup) io.policyGroup();
        List<IoRequest> released = null;
        long holdNs = 0;
        long wakeBefore;
        dc.lock.lock();
        try {
            long now = lockTime(dc, nowNs);
            wakeBefore = dc.nextWakeNs;
            for (int i = 0; i < dc.policies.length; i++) {
                if ((stages & (1 << i)) != 0) holdNs = Math.max(holdNs, dc.policies[i].onComplete(io, dg, now, dc.resumers[i]));
            }
            if (!dc.ready.isEmpty()) {
                released = new ArrayList<>(dc.ready);
                dc.ready.clear();
            }
            updateNextWake(dc);
        } finally {
            dc.lock.unlock();
        }
        if (dc.nextWakeNs < wakeBefore) signal.releaseBy(dc.nextWakeNs);
        if (released != null) released.forEach(sink);
        return holdNs;
    }

    /**
     * The request's issuer has gone away: if a policy still has it parked, it is dropped there
     * (never dispatched, never completed by the controller) and true is returned; false when it
     * is not parked (admitted, on the backend, or done). Requests this frees go to {@code sink}.
     */
    public boolean cancel(IoRequest io, long nowNs, Consumer<IoRequest> sink) {
        DeviceControl dc = controlOf(io);
        int stages = io.policyFlags() & STAGE_BITS_MASK;
        if (dc == null || stages == 0) return false;
        // The stage that parked it is the last one that took it.
        int stage = 31 - Integer.numberOfLeadingZeros(stages);
        DeviceGroup dg = (DeviceGroup) io.policyGroup();
        boolean cancelled;
        List<IoRequest> released = null;
        dc.lock.lock();
        try {
            long now = lockTime(dc, nowNs);
            cancelled = stage < dc.policies.length && dc.policies[stage].cancel(io, dg, now, dc.resumers[stage]);
            // The stages before it passed it on: it will never complete there either (rq_qos_cleanup).
            for (int i = 0; cancelled && i < stage; i++) {
                if ((stages & dc.trackingStages & (1 << i)) != 0) dc.policies[i].cleanup(io, dg, now, dc.resumers[i]);
            }
            if (!dc.ready.isEmpty()) {
                released = new ArrayList<>(dc.ready);
                dc.ready.clear();
            }
            updateNextWake(dc);
        } finally {
            dc.lock.unlock();
        }
        if (released != null) released.forEach(sink);
        return cancelled;
    }

    /** Hands every parked request whose time has come, on every device, to {@code sink}. */
    public void releaseDue(long nowNs, Consumer<IoRequest> sink) {
        for (DeviceControl dc : devices) {
            if (dc == null || (dc.nextWakeNs > nowNs && !dc.readyPending)) continue;
            List<IoRequest> released = null;
            dc.lock.lock();
            try {
                long now = lockTime(dc, nowNs);
                dc.readyPending = false;
                for (int i = 0; i < dc.policies.length; i++) dc.policies[i].releaseDue(now, dc.resumers[i]);
                if (!dc.ready.isEmpty()) {
                    released = new ArrayList<>(dc.ready);
                    dc.ready.clear();
                }
                updateNextWake(dc);
            } finally {
                dc.lock.unlock();
            }
            if (released != null) released.forEach(sink);
        }
    }

    /** The earliest time {@link #releaseDue} has work; {@link Long#MAX_VALUE} when nothing waits. */
    public long nextReleaseNs() {
        long next = Long.MAX_VALUE;
        for (DeviceControl dc : devices) {
            if (dc == null) continue;
            if (dc.readyPending) return Long.MIN_VALUE;
            next = Math.min(next, dc.nextWakeNs);
        }
        return next;
    }

    /** The live state of the request's device; null once it was removed (even if its index was reused). */
    private DeviceControl controlOf(IoRequest io) {
        DeviceControl dc = deviceControl(io.device().index());
        return dc != null && dc.device() == io.device() && !dc.removed ? dc : null;
    }

    /**
     * The time of the locked operation starting now: {@code nowNs}, or the device's latest if
     * that is later. Callers read the clock before they take the lock, so under contention a
     * time can arrive that the device has already passed; policies must never see time go
     * back (an io.max slice that started later would be rolled back and its charges wiped).
     * Device lock held.
     */
    private static long lockTime(DeviceControl dc, long nowNs) {
        if (nowNs > dc.lockedNowNs) dc.lockedNowNs = nowNs;
        return dc.lockedNowNs;
    }

    /** Continues a parked request after stage {@code fromStage - 1}. Device lock held. */
    private void resume(DeviceControl dc, IoRequest io, int fromStage) {
        DeviceGroup dg = existingDeviceGroup(io, dc);
        if (advance(dc, io, dg, fromStage, dc.lockedNowNs)) {
            io.admitNs(dc.lockedNowNs);
            dc.ready.add(io);
        }
    }

    /** Runs stages {@code fromStage..} on the request. Device lock held. */
    private boolean advance(DeviceControl dc, IoRequest io, DeviceGroup dg, int fromStage, long nowNs) {
        DevicePolicy[] chain = dc.policies;
        for (int i = fromStage; i < chain.length; i++) {
            if (i == ACCOUNT_BEFORE_STAGE) account(io, dg);
            DevicePolicy p = chain[i];
            if (!p.applies(io, dg)) continue;
            io.policyFlags(io.policyFlags() | (1 << i));
            io.policyGroup(dg);
            if (!p.admit(io, dg, nowNs, dc.resumers[i])) return false;
        }
        if (chain.length <= ACCOUNT_BEFORE_STAGE && fromStage <= chain.length) account(io, dg);
        return true;
    }

    private static void account(IoRequest io, DeviceGroup dg) {
        dg.stats().add(io.op().statBucket(), io.length());
    }

    private void updateNextWake(DeviceControl dc) {
        long next = Long.MAX_VALUE;
        for (DevicePolicy p : dc.policies) next = Math.min(next, p.nextWakeNs());
        dc.nextWakeNs = next;
    }

    /** A policy's change to one (group, device) pair; runs under the tree and device locks. */
    @FunctionalInterface
    public interface DeviceConfigChange {
        void apply(DeviceGroup group, long nowNs);
    }

    /**
     * Applies a configuration change to {@code group} on one device: creates the pair (and its
     * ancestors) if needed, as the kernel's {@code blkg_conf_prep} does, runs {@code change}
     * under the locks, and makes sure requests it released get dispatched.
     */
    public void configure(Group group, DeviceControl dc, DeviceConfigChange change) throws ControlException {
        treeLock.lock();
        try {
            if (!group.online()) throw new ControlException(Errno.ENODEV, group.path() + " was removed");
            if (dc.removed) throw new ControlException(Errno.ENODEV, "device " + dc.device().name() + " was removed");
            DeviceGroup dg = createDeviceGroupLocked(group, dc);
            dc.lock.lock();
            try {
                change.apply(dg, lockTime(dc, clock.nanoTime()));
                afterConfigChange(dc);
            } finally {
                dc.lock.unlock();
            }
        } finally {
            treeLock.unlock();
        }
    }

    /**
     * After a configuration change released requests or moved a wake-up earlier: make sure
     * the owner calls {@link #releaseDue} soon. Device lock held.
     */
    private void afterConfigChange(DeviceControl dc) {
        long before = dc.nextWakeNs;
        updateNextWake(dc);
        if (!dc.ready.isEmpty()) {
            dc.readyPending = true;
            signal.releaseBy(Long.MIN_VALUE);
        } else if (dc.nextWakeNs < before) {
            signal.releaseBy(dc.nextWakeNs);
        }
    }

    /**
     * The request's (group, device) state without creating any (callers may hold a device
     * lock): the nearest existing one up the tree, as IO of a dying group spills to its parent.
     */
    private static DeviceGroup existingDeviceGroup(IoRequest io, DeviceControl dc) {
        int index = dc.device().index();
        for (Group g = ((Group) io.group()).effective(); g != null; g = g.parent()) {
            DeviceGroup dg = g.deviceGroup(index);
            if (dg != null) return dg;
        }
        return dc.root;
    }

    private DeviceGroup deviceGroupFor(IoRequest io, DeviceControl dc) {
        Group g = ((Group) io.group()).effective();
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
        DeviceGroup dg = new DeviceGroup(group, dc, parent, stats, policies.size());
        dc.lock.lock();
        try {
            for (int i = 0; i < policies.size(); i++) dg.policyState(i, dc.policies[i].newGroupState(dg));
        } finally {
            dc.lock.unlock();
        }
        group.putDeviceGroup(index, dg);
        return dg;
    }

    // ---------------------------------------------------------------- group tree

    public Group root() {
        return root;
    }

    /** The tree lock, for policies' configuration writes (take it before any device lock). */
    public ReentrantLock treeLock() {
        return treeLock;
    }

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
            if (g.members > 0) throw new ControlException(Errno.EBUSY, g.path() + " has " + g.members + " bound export(s)/namespace(s)");
            g.markOffline();
            g.recomputeEffective();
            offlineDeviceGroups(g);
            g.parent().children.remove(g.name());
        } finally {
            treeLock.unlock();
        }
    }

    /** Removes every (group, device) state of {@code g}, releasing what its policies had parked. Tree lock held. */
    private void offlineDeviceGroups(Group g) {
        for (DeviceGroup dg : g.deviceGroups()) {
            DeviceControl dc = dg.device();
            dc.lock.lock();
            try {
                long now = lockTime(dc, clock.nanoTime());
                for (int i = 0; i < dc.policies.length; i++) dc.policies[i].onGroupOffline(dg, now, dc.resumers[i]);
                afterConfigChange(dc);
            } finally {
                dc.lock.unlock();
            }
            g.removeDeviceGroup(dc.device().index());
        }
    }

    /** Binds a member (export, namespace) to the group: rmdir now fails with EBUSY. */
    public void bind(Group group) throws ControlException {
        treeLock.lock();
        try {
            if (!group.online()) throw new ControlException(Errno.ENOENT, group.path() + " was removed");
            group.members++;
        } finally {
            treeLock.unlock();
        }
    }

    public void unbind(Group group) {
        treeLock.lock();
        try {
            if (group.members > 0) group.members--;
        } finally {
            treeLock.unlock();
        }
    }

    /**
     * Applies a cgroup.subtree_control change: enabling io makes the children's io.* files
     * appear; disabling it discards the children's io state (their IO is charged here from
     * now on). Tree lock held; checks done by the caller.
     */
    public void setIoInSubtree(Group group, boolean enabled) {
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

    /**
     * Reads an interface file, e.g. {@code tenants/a/io.stat} or {@code io.cost.qos}. Control
     * operations are serialized by the tree lock, so files read a consistent tree.
     */
    public String read(String path) throws ControlException {
        treeLock.lock();
        try {
            FileRef ref = file(path);
            return ref.file.read(ref.group);
        } finally {
            treeLock.unlock();
        }
    }

    /** cgroup files take one write of at most a page (kernfs' atomic_write_len = PAGE_SIZE). */
    public static final int MAX_WRITE_BYTES = 4096;

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
            if (!ref.file.writable()) throw new ControlException(Errno.EACCES, path + " is read-only");
            int bytes = text.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_WRITE_BYTES) throw new ControlException(Errno.E2BIG, path + ": " + bytes + " bytes in one write (expected: at most " + MAX_WRITE_BYTES + ")");
            if (text.isEmpty()) return;
            if (text.indexOf('\0') >= 0) throw new ControlException(Errno.EINVAL, path + ": the write holds a NUL character");
            ref.file.write(ref.group, text);
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
        if (name.length() > 255) throw new ControlException(Errno.ENAMETOOLONG, "group name longer than 255 bytes");
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                         || c == '-' || c == '_' || c == '.' || c == '@' || c == '+' || c == ':';
            if (!ok) throw new ControlException(Errno.EINVAL, "group name '" + name + "' (expected: letters, digits and -_.@+:)");
        }
    }

    /** Pre-order walk. Tree lock held. */
    static void forEachGroup(Group g, Consumer<Group> action) {
        action.accept(g);
        for (Group c : g.children.values()) forEachGroup(c, action);
    }

    /** Post-order walk. Tree lock held. */
    private static void forEachGroupChildrenFirst(Group g, Consumer<Group> action) {
        for (Group c : g.children.values()) forEachGroupChildrenFirst(c, action);
        action.accept(g);
    }

    /** Visits every group, parents first, under the tree lock. */
    public void walk(Consumer<Group> action) {
        treeLock.lock();
        try {
            forEachGroup(root, action);
        } finally {
            treeLock.unlock();
        }
    }

    /** Interface files by name, in listing order. */
    public Map<String, InterfaceFile> files() {
        return Collections.unmodifiableMap(files);
    }
}
