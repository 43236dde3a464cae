package io.iotarget.iocontrol;

import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.iocontrol.chain.DeviceRegistry;
import io.iotarget.iocontrol.chain.PolicyChain;
import io.iotarget.iocontrol.chain.ReleaseSignal;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.host.ConfigChange;
import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.Clock;
import io.iotarget.model.ControlException;
import io.iotarget.model.Counters;
import io.iotarget.model.Device;
import io.iotarget.model.IoRequest;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The IO controller: the one point where every request is accounted and passed through the
 * policy chain before it may reach a backend, and the cgroupfs tree that configures it. It
 * puts together three parts, each with one job, and is their common front door:
 *
 * <ul>
 *   <li>the {@link GroupTree}: groups, paths, mkdir/rmdir, interface files, (group, device) pairs;</li>
 *   <li>the {@link PolicyChain}: admit, issue, complete, release, cancel, over the policies of
 *       the caller's list ({@code Engine.STANDARD_POLICIES} in the engine);</li>
 *   <li>the {@link DeviceRegistry}, shared with the engine, which adds its dispatch queues to it.</li>
 * </ul>
 *
 * <pre>
 *  admit(io) ─► tree: the (group, device) pair that pays, made lazily with its ancestors
 *            ─► chain: throttle (io.max) ─► count io.stat ─► latency (io.latency) ─► cost (io.weight) ─► true
 *                            │ parked                            │ parked               │ parked
 *                            └──── releaseDue(now) / complete(io) ┴──────────────────────┴─► ready sink
 * </pre>
 *
 * <p>Thread-safety: every method may be called from any thread; see {@link GroupTree} and
 * {@link PolicyChain} for the locks. The controller has no threads and reads no clock on the
 * IO path: time comes in as {@code nowNs}, and when parked requests need a later call it says
 * so through the {@link ReleaseSignal}.
 */
public final class IoController implements PolicyHost {
    private final Clock clock;
    private final DeviceRegistry<?> registry;
    private final PolicyChain chain;
    private final GroupTree tree;

    /**
     * A controller with the given chain and a registry of its own (tests, benchmarks); the
     * engine's chain is {@code Engine.STANDARD_POLICIES}.
     *
     * @param clock read only by configuration changes (a new limit starts a new slice "now");
     *              the IO path takes its time as an argument
     */
    public IoController(Clock clock, List<PolicyFactory> policies) {
        this(clock, policies, new DeviceRegistry<Void>());
    }

    /** A controller on an owner's registry: the engine adds its devices with {@link #attach}. */
    public IoController(Clock clock, List<PolicyFactory> policies, DeviceRegistry<?> registry) {
        this.clock = clock;
        this.registry = registry;
        List<IoPolicy> built = new ArrayList<>();
        for (int i = 0; i < policies.size(); i++) built.add(policies.get(i).create(this, i));
        this.chain = new PolicyChain(built, registry);
        this.tree = new GroupTree(chain, clock);
    }

    public GroupTree tree() {
        return tree;
    }

    public PolicyChain chain() {
        return chain;
    }

    public DeviceRegistry<?> registry() {
        return registry;
    }

    /** The engine's clock, for configuration changes. */
    public Clock clock() {
        return clock;
    }

    /** Where to ask for {@link #releaseDue} calls; set once by the engine. */
    public void releaseSignal(ReleaseSignal signal) {
        chain.releaseSignal(signal);
    }

    public List<IoPolicy> policies() {
        return chain.policies();
    }

    // ---------------------------------------------------------------- devices

    /**
     * The chain for a new device, with the root group's state on it, for an owner that then
     * adds it to the registry (with its queue) itself. The device's index must be free.
     *
     * @param queueDepth requests its dispatch queue runs at once (io.latency scales by it), &gt; 0
     */
    public DeviceControl attach(Device device, int queueDepth) {
        return tree.attach(device, queueDepth);
    }

    /**
     * Makes a device known to a controller used without an engine: attached with
     * {@link DeviceControl#DEFAULT_QUEUE_DEPTH} and registered, with no queue.
     */
    public DeviceControl registerDevice(Device device) {
        tree.treeLock().lock();
        try {
            registry.requireFree(device);
            DeviceControl dc = tree.attach(device, DeviceControl.DEFAULT_QUEUE_DEPTH);
            registry.add(dc, null);
            return dc;
        } finally {
            tree.treeLock().unlock();
        }
    }

    /**
     * Forgets a device, as when a disk goes away: it leaves the registry, every group loses its
     * state there (its counters with it), and parked requests go to {@code sink} at once, to
     * fail in dispatch.
     */
    public void unregisterDevice(Device device, long nowNs, Consumer<IoRequest> sink) {
        DeviceControl dc = registry.control(device.index());
        if (dc == null || dc.device() != device) return;
        tree.detach(dc, nowNs, () -> registry.remove(device)).forEach(sink);
    }

    /** The device with this dense index, or null. Lock-free. */
    public DeviceControl deviceControl(int index) {
        return registry.control(index);
    }

    @Override
    public List<DeviceControl> devices() {
        return registry.controls();
    }

    @Override
    public DeviceControl findDevice(String key) throws ControlException {
        return registry.find(key);
    }

    /**
     * The counters the policies keep on the device, by policy name ({@code "throttle"} →
     * {@code ThrottleCounter}); policies that keep none are left out, and so is a device that is
     * not registered. Any thread.
     */
    public Map<String, Counters<?>> policyCounters(Device device) {
        Map<String, Counters<?>> byPolicy = new LinkedHashMap<>();
        DeviceControl dc = registry.control(device.index());
        if (dc == null || dc.device() != device) return byPolicy;
        for (int i = 0; i < dc.policyCount(); i++) {
            Counters<?> counters = dc.policy(i).counters();
            if (counters != null) byPolicy.put(chain.policies().get(i).name(), counters);
        }
        return byPolicy;
    }

    // ---------------------------------------------------------------- IO path

    /**
     * Accounts the request and runs it through the policy chain.
     *
     * @return true when it may be dispatched now; false when a policy parked it (it will come
     *         out of {@link #releaseDue} or {@link #complete} later)
     */
    public boolean admit(IoRequest io, long nowNs) {
        DeviceControl dc = chain.controlOf(io);
        if (dc == null) return true;      // dispatch fails it: the device is gone
        return chain.admit(io, tree.deviceGroupFor(io, dc), nowNs);
    }

    /** See {@link PolicyChain#issue}. */
    public void issue(IoRequest io, long nowNs) {
        chain.issue(io, nowNs);
    }

    /** See {@link PolicyChain#complete}. */
    public long complete(IoRequest io, long nowNs, Consumer<IoRequest> sink) {
        return chain.complete(io, nowNs, sink);
    }

    /** See {@link PolicyChain#cancel}. */
    public boolean cancel(IoRequest io, long nowNs, Consumer<IoRequest> sink) {
        return chain.cancel(io, nowNs, sink);
    }

    /** Hands every parked request whose time has come, on every device, to {@code sink}. */
    public void releaseDue(long nowNs, Consumer<IoRequest> sink) {
        chain.releaseDue(nowNs, sink);
    }

    /** The earliest time {@link #releaseDue} has work; {@link Long#MAX_VALUE} when nothing waits. */
    public long nextReleaseNs() {
        return chain.nextReleaseNs();
    }

    // ---------------------------------------------------------------- the tree (see GroupTree)

    /** See {@link GroupTree#configure}; the policies' files change their state through it. */
    @Override
    public void configure(PolicyGroup group, PolicyDevice device, ConfigChange change) throws ControlException {
        tree.configure(Group.of(group), DeviceControl.of(device), change);
    }

    @Override
    public Group root() {
        return tree.root();
    }

    @Override
    public void walk(Consumer<PolicyGroup> action) {
        tree.walk(action::accept);
    }

    public Group group(String path) throws ControlException {
        return tree.group(path);
    }

    public Group groupById(long id) {
        return tree.groupById(id);
    }

    public Group mkdir(String path) throws ControlException {
        return tree.mkdir(path);
    }

    public void rmdir(String path) throws ControlException {
        tree.rmdir(path);
    }

    public void bind(Group group) throws ControlException {
        tree.bind(group);
    }

    public void unbind(Group group) {
        tree.unbind(group);
    }

    public List<String> list(String path) throws ControlException {
        return tree.list(path);
    }

    public String read(String path) throws ControlException {
        return tree.read(path);
    }

    public void write(String path, String text) throws ControlException {
        tree.write(path, text);
    }
}
