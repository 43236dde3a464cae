package io.iotarget.engine;

import io.iotarget.backend.Backend;
import io.iotarget.backend.file.IoEngine;
import io.iotarget.buffer.BufferPool;
import io.iotarget.dispatch.DispatchCounter;
import io.iotarget.dispatch.DispatchQueue;
import io.iotarget.dispatch.RequestCheck;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.HostIdentity;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.PolicyFactory;
import io.iotarget.iocontrol.chain.DeviceRegistry;
import io.iotarget.iocontrol.policy.cost.CostPolicy;
import io.iotarget.iocontrol.policy.latency.LatencyPolicy;
import io.iotarget.iocontrol.policy.throttle.ThrottlePolicy;
import io.iotarget.iocontrol.pressure.TenantQueue;
import io.iotarget.model.Clock;
import io.iotarget.model.ControlException;
import io.iotarget.model.CountedErrorHandler;
import io.iotarget.model.Counters;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.Errno;
import io.iotarget.model.IoGate;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.tree.GroupBinding;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * One iotarget instance: devices (backend + dispatch queue), the IO controller, and the single
 * entry point of the request path, {@link #submit}. Also the embedded Java API (see
 * {@link #open}).
 *
 * <p>Backend IO of files and block devices runs on the engine's {@link IoEngine} (io_uring, or
 * a pool of IO threads where io_uring is unavailable): {@link #submit} starts it and returns,
 * and the request completes on an IO thread. Memory and null devices complete during
 * {@link #submit} unless a policy delays them.
 *
 * <p>Any thread. Device registration is rare and synchronized; {@link #submit} is lock-free
 * unless a policy applies to the request.
 */
public final class Engine implements AutoCloseable {
    /**
     * The group the calling code runs as, for {@link Volume}s opened without an explicit group:
     * {@code ScopedValue.where(Engine.CURRENT_GROUP, group).run(...)}. Unbound means the root.
     */
    public static final ScopedValue<Group> CURRENT_GROUP = ScopedValue.newInstance();

    /**
     * The IO controller's chain, in order; the one place the policies are named. A policy that
     * {@linkplain io.iotarget.iocontrol.policy.IoPolicy#precedesStat() precedes io.stat} comes
     * first (blk-throttle acts on the bio before it is counted); io.latency sits between io.max
     * and iocost, as its rq_qos runs before iocost's in the kernel.
     */
    public static final List<PolicyFactory> STANDARD_POLICIES = List.of(ThrottlePolicy::new, LatencyPolicy::new, CostPolicy::new);

    /** blkext's major: the kernel numbers extended-devt block devices 259:N, and so do we by default. */
    public static final int DEFAULT_MAJOR = 259;
    public static final int DEFAULT_QUEUE_DEPTH = 256;

    private final Clock clock;
    private final IoController controller;
    private final Releaser releaser;
    /** What the engine's own thread (the releaser) met and survived. */
    private final CountedErrorHandler errors = new CountedErrorHandler("iotarget-releaser");
    private final HeldCompletions held = new HeldCompletions(errors, this::report);
    private final BufferPool buffers;
    private final IoEngine ioEngine;
    /** The one device table: the controller's state and the dispatch queue of every device. */
    private final DeviceRegistry<DispatchQueue> registry = new DeviceRegistry<>();
    private final List<Consumer<Device>> resizeListeners = new CopyOnWriteArrayList<>();

    /** An engine on the system clock with its releaser thread running, on io_uring where it works. */
    public Engine() {
        this(Clock.SYSTEM, true);
    }

    /**
     * @param clock          the engine's only time source
     * @param releaserThread false for tests that drive time by hand and call {@link #releaseDue()}
     */
    public Engine(Clock clock, boolean releaserThread) {
        this(clock, releaserThread, Settings.defaults());
    }

    /**
     * How the engine's backend IO runs and how much memory its data buffers may hold.
     *
     * @param bufferMemoryBytes the buffer pool's capacity (the config's {@code server.buffer_memory})
     * @param bufferShareBytes  most one group's requests may hold at once ({@code server.buffer_share})
     * @param ioEngine          how file and block-device IO runs ({@code server.io_engine})
     */
    public record Settings(long bufferMemoryBytes, long bufferShareBytes, IoEngine.Kind ioEngine) {
        /** The pool's defaults (a quarter of RAM within 128 MiB-16 GiB, a quarter of that per group), io_uring where it works. */
        public static Settings defaults() {
            long capacity = BufferPool.defaultCapacity();
            return new Settings(capacity, BufferPool.defaultShare(capacity), IoEngine.Kind.AUTO);
        }

        /** These settings with another IO engine. */
        public Settings ioEngine(IoEngine.Kind kind) {
            return new Settings(bufferMemoryBytes, bufferShareBytes, kind);
        }
    }

    /** @throws UncheckedIOException {@link IoEngine.Kind#IO_URING} was asked for and is unavailable */
    public Engine(Clock clock, boolean releaserThread, Settings settings) {
        try {
            this.ioEngine = IoEngine.open(settings.ioEngine());
        } catch (IOException e) {
            throw new UncheckedIOException("io engine " + settings.ioEngine() + " unavailable", e);
        }
        this.clock = clock;
        this.buffers = new BufferPool(settings.bufferMemoryBytes(), settings.bufferShareBytes());
        this.controller = new IoController(clock, STANDARD_POLICIES, registry);
        this.releaser = releaserThread ? new Releaser(controller, held, clock, this::dispatchReleased, errors) : null;
        if (releaser != null) {
            controller.releaseSignal(releaser);
            releaser.start();
        }
    }

    /** The controller's groups as the config trees' {@code cgroup} and {@code cgroup_id} attributes find them. */
    public GroupBinding.Groups<Group> groups() {
        return new GroupBinding.Groups<>() {
            @Override
            public Group byId(long id) {
                return controller.groupById(id);
            }

            @Override
            public Group byPath(String path) throws ControlException {
                return controller.group(path);
            }
        };
    }

    public IoController controller() {
        return controller;
    }

    public Clock clock() {
        return clock;
    }

    /** The data buffers of every request: bounded for the server, and per group ({@code pool.account(group)}). */
    public BufferPool buffers() {
        return buffers;
    }

    /**
     * Failures the engine's own thread met and survived (a completion callback that threw on the
     * releaser, running out of memory): each was logged, rate-limited. 0 in a healthy server.
     */
    public long unexpectedErrors() {
        return errors.count();
    }

    /** The IO engine in use: {@link IoEngine.Kind#IO_URING} or {@link IoEngine.Kind#THREADS}. */
    public IoEngine.Kind ioEngine() {
        return ioEngine.kind();
    }

    /**
     * Gathers the calling thread's backend submissions until the plug is closed, then hands
     * them to the kernel in one call (see {@link IoEngine#plug()}); front ends plug around
     * each batch of decoded commands. Nestable; close on the same thread, before blocking.
     */
    public IoEngine.Plug plug() {
        return ioEngine.plug();
    }

    // ---------------------------------------------------------------- devices

    /**
     * Adds a device on {@code backend}. Its number is {@code number}, or the next free
     * {@code 259:N} when null. The backend belongs to the engine from now on.
     *
     * @throws ControlException EEXIST when the name or number is taken
     */
    public synchronized Device addDevice(String name, Backend backend, DeviceNumber number, int queueDepth) throws ControlException {
        number = registry.claim(name, number, DEFAULT_MAJOR);
        int alignment = backend.needsAlignedIo() ? backend.logicalBlockSize() : 1;
        Device device = new Device(registry.freeIndex(), number, name, backend.sizeBytes(), backend.logicalBlockSize(), backend.readOnly(), alignment);
        DispatchQueue queue = new DispatchQueue(device, backend, queueDepth, new Hooks(), ioEngine, clock);
        registry.add(controller.attach(device, queueDepth), queue);
        return device;
    }

    /**
     * An export or namespace starts serving {@code device}, charged to {@code group} (null: to
     * the root, without a binding): until the lease is closed, removing the device or the group
     * fails with EBUSY.
     *
     * @throws ControlException ENODEV when the device was removed, ENOENT when the group was
     */
    public Lease bind(Device device, Group group) throws ControlException {
        synchronized (this) {
            registry.acquire(device);
        }
        if (group != null) {
            try {
                controller.bind(group);
            } catch (ControlException e) {
                release(device);
                throw e;
            }
        }
        return new Lease(this, device, group);
    }

    /**
     * A host starts using a member bound with {@code cgroup_per_host}: its IO is charged to the
     * child of {@code parent} named after {@code identity} ({@link io.iotarget.iocontrol.HostGroupName}),
     * found or made and then bound ({@link io.iotarget.iocontrol.GroupTree#bindHostChild}) until
     * {@link #releaseHostGroup}.
     */
    public Group bindHostGroup(Group parent, HostIdentity identity) throws ControlException {
        return controller.tree().bindHostChild(parent, identity);
    }

    /** The host has finished with its group: undoes one {@link #bindHostGroup}; the group stays, an ordinary group. */
    public void releaseHostGroup(Group group) {
        controller.unbind(group);
    }

    /** Undoes the device half of one {@link #bind}; {@link Lease#close} only. */
    synchronized void release(Device device) {
        registry.release(device);
    }

    /** {@code listener} hears of each device whose size {@link #revalidateSize} changed, on the thread that revalidated it. */
    public void onResize(Consumer<Device> listener) {
        resizeListeners.add(listener);
    }

    /**
     * nvmet's {@code revalidate_size}: the device takes the size its backend has now (a file grown
     * on disk, a block device resized, a memory backend's new {@code configuredBytes}), rounded
     * down to whole logical blocks, and the {@link #onResize} listeners hear of it. Growing is
     * always allowed; shrinking only while no export or namespace uses the device, since a host
     * may hold data past the new end.
     *
     * @return the size now
     * @throws ControlException ENODEV when the device was removed; EBUSY when it would shrink
     *                          while in use (the device keeps its size); EINVAL when the memory
     *                          backend cannot be that large
     */
    public long revalidateSize(Device device, long configuredBytes) throws ControlException, IOException {
        long size;
        synchronized (this) {
            DispatchQueue queue = queue(device);
            if (queue == null) throw new ControlException(Errno.ENODEV, "device " + device.name() + " was removed");
            size = queue.backend().revalidatedSize(configuredBytes);
            size -= size % device.logicalBlockSize();
            long before = device.sizeBytes();
            if (size == before) return size;
            int users = registry.users(device);
            if (size < before && users > 0) {
                throw new ControlException(Errno.EBUSY, "device " + device.name() + " would shrink from " + before + " to " + size
                                           + " bytes while " + users + " export(s)/namespace(s) use it");
            }
            try {
                queue.backend().resize(size);
            } catch (IllegalArgumentException e) {
                throw new ControlException(Errno.EINVAL, e.getMessage());
            }
            device.resize(size);
        }
        for (Consumer<Device> listener : resizeListeners) listener.accept(device);
        return size;
    }

    /** Exports and namespaces using the device. */
    public synchronized int users(Device device) {
        return registry.users(device);
    }

    /**
     * Removes a device: requests parked in the controller or waiting for the device fail with
     * {@link IoStatus#ABORTED}, requests running on the backend are waited for, and the backend
     * is closed. Not from an IO thread (a completion callback).
     *
     * @throws ControlException EBUSY while an export or namespace uses it
     */
    public synchronized void removeDevice(Device device) throws ControlException, IOException {
        DispatchQueue queue = queue(device);
        if (queue == null) return;
        int users = users(device);
        if (users > 0) throw new ControlException(Errno.EBUSY, "device " + device.name() + " is used by " + users + " export(s)/namespace(s)");
        controller.unregisterDevice(device, clock.nanoTime(), io -> finish(io, IoStatus.ABORTED));
        queue.close();
        queue.backend().close();
    }

    /** Devices in index order. */
    public List<Device> devices() {
        return registry.devices();
    }

    /** The device with this name, or null. */
    public Device device(String name) {
        return registry.device(name);
    }

    /** The backend behind a device (for front ends that map extents or report capabilities). */
    public Backend backend(Device device) {
        DispatchQueue q = queue(device);
        return q == null ? null : q.backend();
    }

    /**
     * The device's dispatch counters (backend errors, aborted requests, queue depths), or null
     * when it was removed; the policies' counters are {@code controller().policyCounters(device)}.
     */
    public Counters<DispatchCounter> dispatchCounters(Device device) {
        DispatchQueue q = queue(device);
        return q == null ? null : q.counters();
    }

    private DispatchQueue queue(Device device) {
        return registry.queue(device);
    }

    // ---------------------------------------------------------------- tenant queues

    /**
     * A tenant queue (an NBD connection, an NVMe/TCP IO queue, a volume) whose requests are
     * charged to {@code group}: io.pressure's "task" ({@code IoRequest.queue}). Close it with
     * {@link #closeQueue} once its last request has completed.
     */
    public TenantQueue newQueue(Group group) {
        return controller.tree().pressure().newQueue(group.pressure());
    }

    /** The queue is gone: io.pressure counts it nowhere any more. Idempotent; any thread. */
    public void closeQueue(TenantQueue queue) {
        queue.close(clock.nanoTime());
    }

    // ---------------------------------------------------------------- request path

    /**
     * Submits a request. Its callback runs exactly once: on this thread when the request is
     * refused, or on a memory or null device when nothing delays it; later on another thread
     * when a policy parks it or the device is a file or block device (an IO thread).
     */
    public void submit(IoRequest io) {
        long now = clock.nanoTime();
        io.submitNs(now);
        if (io.queue() instanceof TenantQueue q) q.begin(now);
        IoStatus check = RequestCheck.check(io);
        if (check != IoStatus.OK) {
            finish(io, check);
            return;
        }
        DispatchQueue queue = queue(io.device());
        if (queue == null) {
            finish(io, IoStatus.ABORTED);
            return;
        }
        queue.tenantSubmitted(now);
        if (controller.admit(io, now)) proceed(io, queue, now);
    }

    /**
     * Runs a request on its device past the controller: charged to no group (io.stat, the
     * latency histograms and io.pressure never see it), held by no policy, only the device's
     * queue depth between it and the backend — the device measured as it is, for calibrate
     * ({@code control.calibrate}). The request names a group all the same ({@link RequestCheck});
     * its callback runs once, as {@link #submit}'s does. Any thread.
     */
    public void submitUncharged(IoRequest io) {
        long now = clock.nanoTime();
        io.submitNs(now);
        io.admitNs(now);
        IoStatus check = RequestCheck.check(io);
        DispatchQueue queue = check == IoStatus.OK ? queue(io.device()) : null;
        if (queue == null) {
            finish(io, check == IoStatus.OK ? IoStatus.ABORTED : check);
            return;
        }
        queue.counters().increment(DispatchCounter.UNCHARGED);
        IoStatus gate = enterGate(io);
        if (gate != IoStatus.OK) {
            finish(io, gate);
            return;
        }
        queue.dispatch(io);
    }

    /** The device's queue depth (its backend's {@code queue_depth}), or 0 when it was removed. */
    public int queueDepth(Device device) {
        DispatchQueue q = queue(device);
        return q == null ? 0 : q.depth();
    }

    /**
     * When a tenant last submitted a request for the device (engine clock), {@link Long#MIN_VALUE}
     * if never or the device is gone; requests of {@link #submitUncharged} do not count.
     */
    public long lastTenantSubmitNs(Device device) {
        DispatchQueue q = queue(device);
        return q == null ? Long.MIN_VALUE : q.lastTenantSubmitNs();
    }

    /** An admitted request goes to its device, or back to its creator for its data first. */
    private void proceed(IoRequest io, DispatchQueue queue, long nowNs) {
        if (io.isDataLater()) io.callback().admitted(io);
        else toQueue(io, queue, nowNs);
    }

    /**
     * The request reaches its device's queue: the kernel's {@code rq->alloc_time_ns}, from which
     * iocost times the wait for a slot (rq_wait) and the latency. Not when the controller let it
     * go: a released request goes out on the releasing thread after the others released with
     * it, and a data-later write waits for its data; neither is the device's doing.
     *
     * <p>Every admitted request passes here, and nothing but the dispatch queue lies between
     * here and the backend, so this is where its {@link IoGate} is asked: a request a policy
     * or a buffer wait held since its front end checked it is checked again now. One the gate
     * refuses never reaches the backend; the policies see it complete (as an abandoned one).
     */
    private void toQueue(IoRequest io, DispatchQueue queue, long nowNs) {
        IoStatus gate = enterGate(io);
        if (gate != IoStatus.OK) {
            refuse(io, gate, nowNs);
            return;
        }
        io.admitNs(nowNs);
        queue.dispatch(io);
    }

    /** Asks the request's gate, if it has one: OK, or the status it ends with. One null check without a gate. */
    private static IoStatus enterGate(IoRequest io) {
        IoGate gate = io.gate();
        if (gate == null) return IoStatus.OK;
        IoStatus s = gate.enter(io);
        if (s == IoStatus.OK) io.gatePassed(true);
        return s;
    }

    /** The backend is done with the request: its gate, if it let it in, hears so (once). */
    private static void leaveGate(IoRequest io) {
        if (!io.gatePassed()) return;
        io.gatePassed(false);
        io.gate().leave(io);
    }

    /** An admitted request its gate refused ends with {@code status}; the controller sees it complete. */
    private void refuse(IoRequest io, IoStatus status, long nowNs) {
        io.completeNs(nowNs);
        io.status(status);
        controller.complete(io, nowNs, this::dispatchReleased);
        report(io, nowNs);
    }

    /**
     * A {@linkplain IoRequest#dataLater() data-later} request whose data has arrived
     * ({@link IoRequest#data(ByteBuffer)}) runs now. Any thread.
     */
    public void dispatchAdmitted(IoRequest io) {
        DispatchQueue queue = queue(io.device());
        if (queue == null || io.data() == null || io.data().remaining() != io.length()) {
            abandon(io);
            return;
        }
        toQueue(io, queue, clock.nanoTime());
    }

    /**
     * A {@linkplain IoRequest#dataLater() data-later} request whose data will never come (its
     * connection closed): the policies see it complete, and it ends {@link IoStatus#ABORTED}
     * without reaching the backend. Any thread.
     */
    public void abandon(IoRequest io) {
        long now = clock.nanoTime();
        io.completeNs(now);
        io.status(IoStatus.ABORTED);
        controller.complete(io, now, this::dispatchReleased);
        report(io, now);
    }

    /**
     * The request's issuer has gone away (its connection closed): if a policy still holds it,
     * it is dropped there and completes now with {@link IoStatus#ABORTED}, never having reached
     * the backend — it was never acknowledged, so nothing is lost. A request already admitted
     * runs to its end as usual. Any thread.
     *
     * @return true when the request was dropped (its callback has run)
     */
    public boolean cancel(IoRequest io) {
        if (!controller.cancel(io, clock.nanoTime(), this::dispatchReleased)) return false;
        finish(io, IoStatus.ABORTED);
        return true;
    }

    /**
     * Parked requests whose time has come go to dispatch, and held completions whose time has
     * come are reported; for engines without a releaser thread.
     */
    public void releaseDue() {
        long now = clock.nanoTime();
        controller.releaseDue(now, this::dispatchReleased);
        held.deliverDue(now);
    }

    /**
     * When {@link #releaseDue()} next has work (engine clock); {@link Long#MIN_VALUE} for now,
     * {@link Long#MAX_VALUE} when nothing waits. For drivers of a manual clock.
     */
    public long nextReleaseNs() {
        return Math.min(controller.nextReleaseNs(), held.nextNs());
    }

    /** A request a policy released: dispatch never blocks, so the releaser itself dispatches it. */
    private void dispatchReleased(IoRequest io) {
        DispatchQueue queue = queue(io.device());
        if (queue == null) {
            finish(io, IoStatus.ABORTED);
        } else {
            proceed(io, queue, clock.nanoTime());
        }
    }

    private void finish(IoRequest io, IoStatus status) {
        io.status(status);
        long now = clock.nanoTime();
        io.completeNs(now);
        report(io, now);
    }

    /** The request's creator hears of its end; its queue has one command fewer outstanding. */
    private void report(IoRequest io, long nowNs) {
        leaveGate(io);                                  // normally done at the backend's completion already
        if (io.queue() instanceof TenantQueue q) q.end(nowNs);
        io.callback().complete(io);
    }

    /** A held completion is due (releaser thread). */
    private void report(IoRequest io) {
        report(io, clock.nanoTime());
    }

    /** Dispatch hooks: issue and completion times for the policies, then the creator's callback. */
    private final class Hooks implements DispatchQueue.Listener {
        @Override
        public void issued(IoRequest io) {
            long now = clock.nanoTime();
            io.issueNs(now);
            controller.issue(io, now);
        }

        @Override
        public void completed(IoRequest io, IoStatus status) {
            leaveGate(io);                              // before anything else: a reservation change may be waiting for it
            long now = clock.nanoTime();
            io.completeNs(now);
            io.status(status);
            long holdNs = controller.complete(io, now, Engine.this::dispatchReleased);
            // The issuer delay stalls the tenant's queue, whether it pauses itself or its completion is held.
            if (holdNs > 0) controller.tree().pressure().delayed(io, now + holdNs, now);
            if (holdNs <= 0 || io.callback().delayIssuer(io, holdNs)) {
                report(io, now);
                return;
            }
            held.add(io, now + holdNs);
            if (releaser != null) releaser.releaseBy(now + holdNs);
        }
    }

    // ---------------------------------------------------------------- embedded API

    /**
     * Opens a device for embedded use. IO through the volume is charged to {@code group}, or,
     * when null, to the {@link #CURRENT_GROUP} of the thread that submits each request.
     *
     * @throws ControlException ENODEV when there is no such device
     */
    public Volume open(String deviceName, Group group) throws ControlException {
        Device device = device(deviceName);
        if (device == null) throw new ControlException(Errno.ENODEV, "no device " + deviceName);
        return new Volume(this, device, group);
    }

    /**
     * Stops: requests still parked in the controller fail with {@link IoStatus#ABORTED} (so
     * nobody waits for them forever), held completions are reported, requests on the backends
     * are waited for, backends are closed, and the IO engine ends its threads and closes its
     * ring. Not from an IO thread.
     */
    @Override
    public void close() {
        if (releaser != null) releaser.stop();
        List<DispatchQueue> queues = registry.queues();
        for (DispatchQueue q : queues) controller.unregisterDevice(q.device(), clock.nanoTime(), io -> finish(io, IoStatus.ABORTED));
        held.deliverDue(Long.MAX_VALUE);
        for (DispatchQueue q : queues) {
            q.close();
            try {
                q.backend().close();
            } catch (IOException e) {
                // closing: nothing left to tell
            }
        }
        held.deliverDue(Long.MAX_VALUE);
        ioEngine.close();
        buffers.close();
    }
}
