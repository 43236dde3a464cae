package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.ControllerHarness;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.model.Clock;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.function.Function;

/**
 * A deterministic test bench: the real {@link IoController} on a manual clock, in front of a
 * modeled device of known capacity. The device serves one request at a time, in FIFO order,
 * each taking {@code perIoNs + pages × perPageNs} (4 KiB pages), behind a queue depth of
 * {@code depth} slots; requests beyond the depth wait for a slot (the kernel's rq wait).
 * Load comes from closed-loop {@link Stream}s that keep a fixed number of requests
 * outstanding. Nothing depends on the machine: time is simulated, events are ordered.
 */
final class SimulatedDevice {
    static final long PAGE = 4096;

    final ManualClock clock = new ManualClock(0);
    final IoController controller;
    final Device device;
    final DeviceControl control;
    private final long perIoNs;
    private final long perPageNs;
    private final int depth;

    private int inFlight;
    private final ArrayDeque<IoRequest> slotWaiters = new ArrayDeque<>();
    private long serverFreeAtNs;
    private long nextSeq;
    private final PriorityQueue<Event> events = new PriorityQueue<>(Comparator.comparingLong(Event::atNs).thenComparingLong(Event::seq));
    private final List<Stream> streams = new ArrayList<>();

    private record Event(long atNs, long seq, IoRequest io, boolean completion) {
    }

    /**
     * @param perIoNs   fixed time per request
     * @param perPageNs time per 4 KiB of data
     * @param depth     queue depth (requests on the device at once)
     */
    SimulatedDevice(Function<Clock, IoController> controllerOnClock, long perIoNs, long perPageNs, int depth) {
        this.controller = controllerOnClock.apply(clock);
        this.perIoNs = perIoNs;
        this.perPageNs = perPageNs;
        this.depth = depth;
        this.device = new Device(0, new DeviceNumber(259, 0), "sim0", 1L << 50, 512, false, 1);
        this.control = controller.registerDevice(device);
    }

    SimulatedDevice(long perIoNs, long perPageNs, int depth) {
        this(clock -> new IoController(clock, ControllerHarness.ALL_POLICIES), perIoNs, perPageNs, depth);
    }

    /**
     * The io.cost.model line matching this device exactly, so that vrate 100% is its capacity:
     * bps from perPageNs, seq and rand IOPS of a 4 KiB request.
     */
    String matchingModel() {
        long bps = PAGE * 1_000_000_000L / perPageNs;
        long iops = 1_000_000_000L / (perIoNs + perPageNs);
        return device.number() + " ctrl=user model=linear rbps=" + bps + " rseqiops=" + iops + " rrandiops=" + iops
               + " wbps=" + bps + " wseqiops=" + iops + " wrandiops=" + iops;
    }

    long serviceNs(IoRequest io) {
        return perIoNs + Math.ceilDiv(io.length(), PAGE) * perPageNs;
    }

    long now() {
        return clock.nanoTime();
    }

    /** A closed-loop stream of {@code size}-byte requests from {@code group}, {@code queueDepth} outstanding. */
    Stream stream(Group group, IoOp op, long size, int queueDepth) {
        Stream s = new Stream(group, op, size, queueDepth, streams.size());
        streams.add(s);
        return s;
    }

    /** Submits as the engine does: admitted requests go to dispatch, parked ones come back later. */
    void submit(IoRequest io) {
        io.submitNs(now());
        if (controller.admit(io, now())) dispatch(io);
    }

    private void dispatch(IoRequest io) {
        io.admitNs(now());
        if (inFlight < depth) issue(io);
        else slotWaiters.addLast(io);
    }

    private void issue(IoRequest io) {
        inFlight++;
        io.issueNs(now());
        controller.issue(io, now());
        long start = Math.max(now(), serverFreeAtNs);
        serverFreeAtNs = start + serviceNs(io);
        events.add(new Event(serverFreeAtNs, nextSeq++, io, true));
    }

    /** Runs the simulation up to {@code endNs}. */
    void runUntil(long endNs) {
        while (true) {
            long release = controller.nextReleaseNs();
            long event = events.isEmpty() ? Long.MAX_VALUE : events.peek().atNs();
            long next = Math.max(Math.min(release, event), now());
            if (next > endNs) {
                clock.set(endNs);
                return;
            }
            clock.set(next);
            if (release <= next) controller.releaseDue(next, this::dispatch);
            while (!events.isEmpty() && events.peek().atNs() <= next) {
                Event e = events.poll();
                if (e.completion()) complete(e.io());
                else deliver(e.io());
            }
        }
    }

    void runFor(long ns) {
        runUntil(now() + ns);
    }

    private void complete(IoRequest io) {
        io.completeNs(now());
        inFlight--;
        long holdNs = controller.complete(io, now(), this::dispatch);
        while (inFlight < depth && !slotWaiters.isEmpty()) issue(slotWaiters.pollFirst());
        if (holdNs > 0) events.add(new Event(now() + holdNs, nextSeq++, io, false));
        else deliver(io);
    }

    private void deliver(IoRequest io) {
        streams.get((int) io.tag()).completed(io);
    }

    /** One tenant's load: keeps queueDepth requests outstanding while running; counts what completes. */
    final class Stream {
        final Group group;
        final IoOp op;
        final long size;
        final int queueDepth;
        final int id;
        private boolean running;
        private int outstanding;
        private long nextOffset;
        long bytesDone;
        long iosDone;

        Stream(Group group, IoOp op, long size, int queueDepth, int id) {
            this.group = group;
            this.op = op;
            this.size = size;
            this.queueDepth = queueDepth;
            this.id = id;
        }

        void start() {
            running = true;
            while (outstanding < queueDepth) submitOne();
        }

        void stop() {
            running = false;
        }

        private void submitOne() {
            IoRequest io = new IoRequest().set(op, 0, nextOffset, size, null).target(device, group).callback(null, null, id);
            nextOffset += size;
            outstanding++;
            submit(io);
        }

        void completed(IoRequest io) {
            outstanding--;
            bytesDone += io.length();
            iosDone++;
            if (running) submitOne();
        }

        /** Bytes completed since the last call. */
        long takeBytes() {
            long b = bytesDone;
            bytesDone = 0;
            return b;
        }
    }
}
