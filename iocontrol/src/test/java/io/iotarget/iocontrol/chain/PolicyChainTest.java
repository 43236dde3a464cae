package io.iotarget.iocontrol.chain;

import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.PolicyFactory;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.Resumer;
import io.iotarget.iocontrol.policy.cost.CostPolicy;
import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.iocontrol.policy.throttle.ThrottlePolicy;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The chain is its list: a policy inserted between throttle and cost runs there, with no other change. */
class PolicyChainTest {
    /** A stand-in for io.latency: passes everything and records what it saw. */
    private static final class Probe implements IoPolicy {
        final List<IoRequest> admitted = new ArrayList<>();
        private final boolean precedesStat;

        Probe(boolean precedesStat) {
            this.precedesStat = precedesStat;
        }

        @Override
        public String name() {
            return "probe";
        }

        @Override
        public boolean precedesStat() {
            return precedesStat;
        }

        @Override
        public List<InterfaceFile> files() {
            return List.of();
        }

        @Override
        public DevicePolicy attach(PolicyDevice device) {
            return new DevicePolicy() {
                @Override
                public Object newGroupState(PolicyDeviceGroup group) {
                    return null;
                }

                @Override
                public boolean applies(IoRequest io, PolicyDeviceGroup group) {
                    return true;
                }

                @Override
                public boolean admit(IoRequest io, PolicyDeviceGroup group, long nowNs, Resumer resumer) {
                    admitted.add(io);
                    return true;
                }

                @Override
                public void releaseDue(long nowNs, Resumer resumer) {
                }

                @Override
                public long nextWakeNs() {
                    return Long.MAX_VALUE;
                }

                @Override
                public void onGroupOffline(PolicyDeviceGroup group, long nowNs, Resumer resumer) {
                }
            };
        }
    }

    private final ManualClock clock = new ManualClock(1_000_000_000L);
    private final Device dev = new Device(0, new DeviceNumber(259, 0), "mem0", 1L << 40, 512, false, 1);

    @Test
    void shouldRunAPolicyInsertedBetweenThrottleAndCostOnReleasedRequestsOnly() throws Exception {
        Probe probe = new Probe(false);
        IoController controller = new IoController(clock, List.<PolicyFactory>of(ThrottlePolicy::new, (c, i) -> probe, CostPolicy::new));
        controller.registerDevice(dev);
        Group a = controller.mkdir("a");
        controller.write("a/io.max", "259:0 riops=2");
        IoRequest first = new IoRequest().set(IoOp.READ, 0, 0, 4096, null).target(dev, a);
        IoRequest second = new IoRequest().set(IoOp.READ, 0, 0, 4096, null).target(dev, a);
        assertTrue(controller.admit(first, clock.nanoTime()));
        assertFalse(controller.admit(second, clock.nanoTime()), "io.max parks the second read");
        assertEquals(List.of(first), probe.admitted, "a parked request has not reached the next stage");
        assertTrue(controller.read("a/io.stat").contains("rios=1 "), "and is not counted yet");

        List<IoRequest> released = new ArrayList<>();
        clock.advance(1_000_000_000L);
        controller.releaseDue(clock.nanoTime(), released::add);
        assertEquals(List.of(second), released);
        assertEquals(List.of(first, second), probe.admitted);
        assertTrue(controller.read("a/io.stat").contains("rios=2 "), controller.read("a/io.stat"));
    }

    @Test
    void shouldRefuseAPolicyBeforeIoStatAfterOneThatIsNot() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new IoController(clock, List.<PolicyFactory>of(CostPolicy::new, (c, i) -> new Probe(true))));
        assertTrue(e.getMessage().contains("probe precedes io.stat and must come before cost"), e.getMessage());
    }
}
