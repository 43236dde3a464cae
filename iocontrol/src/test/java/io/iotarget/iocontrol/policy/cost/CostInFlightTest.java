package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.ControllerHarness;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A request's cost goes back, on completion, to the group that paid it, whatever changed meanwhile. */
class CostInFlightTest {
    private static final long MS = 1_000_000;

    private final ManualClock clock = new ManualClock(0);
    private IoController controller;
    private DeviceControl dc;
    private CostDevice cost;
    private long offset;

    @BeforeEach
    void setUp() throws ControlException {
        controller = new IoController(clock, ControllerHarness.ALL_POLICIES);
        dc = controller.registerDevice(new Device(0, new DeviceNumber(259, 0), "d0", 1L << 40, 512, false, 1));
        controller.write("io.cost.qos", "259:0 enable=1");
        cost = ((CostPolicy) controller.policies().stream().filter(p -> p instanceof CostPolicy).findFirst().orElseThrow()).device(dc);
    }

    private IoRequest write(Group g) {
        IoRequest io = new IoRequest().set(IoOp.WRITE, 0, offset += 4096, 4096, null).target(dc.device(), g);
        assertTrue(controller.admit(io, clock.nanoTime()));
        io.admitNs(clock.nanoTime());
        io.issueNs(clock.nanoTime());
        return io;
    }

    private void complete(IoRequest io) {
        controller.complete(io, clock.nanoTime(), r -> { });
    }

    private void runPeriods(int n) {
        for (int i = 0; i < n; i++) {
            clock.advance(cost.periodUs() * 1000);
            controller.releaseDue(clock.nanoTime(), r -> { });
        }
    }

    private CostGroup state(Group g) {
        return cost.state(g.deviceGroup(dc.device().index()));
    }

    @Test
    void shouldLetAGroupGoIdleWhenIoWasEnabledBelowItWhileItsIoWasInFlight() throws Exception {
        Group g = controller.mkdir("g");
        Group c = controller.mkdir("g/c");          // io not enabled in g: c's IO is g's
        IoRequest first = write(c);
        assertTrue(state(g).onActiveList);
        controller.write("g/cgroup.subtree_control", "+io");
        complete(write(c));                         // c has its own state now (g, active, keeps it a leaf)
        clock.advance(MS);
        complete(first);                            // g paid for it: g gets it back
        runPeriods(5);
        assertFalse(state(g).onActiveList, "g has been idle for periods, nothing in flight");
        complete(write(c));
        assertTrue(state(c).onActiveList, "c's IO is costed once g is idle");
    }
}
