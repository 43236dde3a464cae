package io.iotarget.iocontrol;

import io.iotarget.iocontrol.policy.cost.CostPolicy;
import io.iotarget.iocontrol.policy.latency.LatencyPolicy;
import io.iotarget.iocontrol.policy.throttle.ThrottlePolicy;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;

import java.util.ArrayList;
import java.util.List;

/**
 * A controller on a manual clock with two devices, and a tiny stand-in for the engine:
 * requests that pass (at once or when released) reach the device's queue as the engine's do ({@link #dispatch}) and land in {@link #dispatched}.
 */
public final class ControllerHarness {
    /** The engine's chain (Engine.STANDARD_POLICIES, which iocontrol cannot see), for controllers built in these tests. */
    public static final List<PolicyFactory> ALL_POLICIES = List.of(ThrottlePolicy::new, LatencyPolicy::new, CostPolicy::new);

    public final ManualClock clock = new ManualClock(1_000_000_000L);
    public final IoController controller = new IoController(clock, ALL_POLICIES);
    public final Device dev0 = new Device(0, new DeviceNumber(259, 0), "mem0", 1L << 40, 512, false, 1);
    public final Device dev1 = new Device(1, new DeviceNumber(259, 1), "mem1", 1L << 40, 512, false, 1);
    public final List<IoRequest> dispatched = new ArrayList<>();

    public ControllerHarness() {
        controller.registerDevice(dev0);
        controller.registerDevice(dev1);
    }

    /** mkdir -p with +io enabled along the way, so io.* files exist in the new group. */
    public Group group(String path) throws ControlException {
        String[] parts = path.split("/");
        StringBuilder at = new StringBuilder();
        Group g = controller.root();
        for (String part : parts) {
            controller.write((at.isEmpty() ? "" : at + "/") + "cgroup.subtree_control", "+io");
            if (!at.isEmpty()) at.append('/');
            at.append(part);
            try {
                g = controller.mkdir(at.toString());
            } catch (ControlException e) {
                g = controller.group(at.toString());
            }
        }
        return g;
    }

    public IoRequest request(IoOp op, long length, Device device, Group group) {
        return new IoRequest().set(op, 0, 0, length, null).target(device, group);
    }

    /** Submits; returns true if it went straight through. */
    public boolean submit(IoRequest io) {
        boolean now = controller.admit(io, clock.nanoTime());
        if (now) dispatch(io);
        return now;
    }

    /** As the engine: the request reaches the device's queue now. */
    public void dispatch(IoRequest io) {
        io.admitNs(clock.nanoTime());
        dispatched.add(io);
    }

    /** Advances the clock by {@code stepNs} until {@code untilNs}, releasing at every step. */
    public void runUntil(long untilNs, long stepNs) {
        while (clock.nanoTime() < untilNs) {
            clock.advance(Math.min(stepNs, untilNs - clock.nanoTime()));
            controller.releaseDue(clock.nanoTime(), this::dispatch);
        }
    }

    public void release() {
        controller.releaseDue(clock.nanoTime(), this::dispatch);
    }
}
