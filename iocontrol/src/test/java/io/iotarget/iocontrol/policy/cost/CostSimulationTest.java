package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.model.ControlException;
import io.iotarget.model.Counters;
import io.iotarget.model.IoOp;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * iocost against a device of known capacity ({@link SimulatedDevice}: 50 µs per request plus
 * 50 µs per 4 KiB, one at a time, queue depth 32; a 4 KiB write takes 100 µs, so the device
 * does 10000 of them per second, 40.96 MB/s). Time is simulated, so the numbers are the same
 * on any machine. Unless a test says otherwise, io.cost.model describes the device exactly
 * and io.cost.qos has the defaults (no latency targets: the device counts as saturated when
 * requests wait for a queue slot).
 */
class CostSimulationTest {
    private static final long SECOND = 1_000_000_000L;
    private static final long PERIOD = 50_000_000L;          // 2 × the default 25 ms latency target
    private static final double CAPACITY_4K = 4096 / 100e-6;  // bytes/s of 4 KiB writes

    private SimulatedDevice sim;
    private IoController controller;

    @BeforeEach
    void setUp() throws ControlException {
        sim = new SimulatedDevice(50_000, 50_000, 32);
        controller = sim.controller;
        controller.write("cgroup.subtree_control", "+io");
    }

    private void enable(String qos) throws ControlException {
        controller.write("io.cost.model", sim.matchingModel());
        controller.write("io.cost.qos", sim.device.number() + " enable=1 " + qos);
    }

    private Group group(String path, int weight) throws ControlException {
        Group g = controller.mkdir(path);
        controller.write(path + "/io.weight", Integer.toString(weight));
        return g;
    }

    private static void assertShare(double expected, double actual, String what) {
        assertTrue(Math.abs(actual / expected - 1) <= 0.05, what + ": " + actual + " (expected " + expected + " ± 5%)");
    }

    @Test
    void shouldShareASaturatedDeviceOneToTwoByWeight() throws ControlException {
        enable("");
        Group a = group("a", 100);
        Group b = group("b", 200);
        // Each keeps 32 writes outstanding: 64 against a queue depth of 32 saturates the device.
        var sa = sim.stream(a, IoOp.WRITE, 4096, 32);
        var sb = sim.stream(b, IoOp.WRITE, 4096, 32);
        sa.start();
        sb.start();
        sim.runFor(SECOND);                                    // vrate settles
        sa.takeBytes();
        sb.takeBytes();
        sim.runFor(4 * SECOND);
        double rateA = sa.takeBytes() / 4.0;
        double rateB = sb.takeBytes() / 4.0;
        report("weights 100:200, 4 s after 1 s warm-up: a %.4f b %.4f of the device, b:a %.3f", rateA / CAPACITY_4K, rateB / CAPACITY_4K, rateB / rateA);
        assertShare(1.0 / 3, rateA / CAPACITY_4K, "a's share of the device");
        assertShare(2.0 / 3, rateB / CAPACITY_4K, "b's share of the device");
        assertShare(2.0, rateB / rateA, "b : a");

        // b goes idle: it is deactivated at the end of the period it was last seen in, and a
        // gets the whole device from the period after.
        sb.stop();
        StringBuilder shares = new StringBuilder();
        for (int period = 1; period <= 20; period++) {
            sim.runFor(PERIOD);
            double share = sa.takeBytes() / (PERIOD / 1e9) / CAPACITY_4K;
            if (period <= 4) shares.append(String.format(" %.3f", share));
            if (period >= 3) assertTrue(share >= 0.95, "period " + period + " after b stopped: a has " + share + " of the device");
        }
        report("b stops: a's share in the 4 periods after:%s", shares);
    }

    @Test
    void shouldShowEachGroupsShareOfTheDeviceInIotargetIoStat() throws ControlException {
        enable("");
        Group a = group("a", 100);
        Group b = group("b", 300);
        var sa = sim.stream(a, IoOp.WRITE, 4096, 32);
        var sb = sim.stream(b, IoOp.WRITE, 4096, 32);
        sa.start();
        sb.start();
        sim.runFor(SECOND);
        // Both saturate the device, so neither donates: active and inuse shares are 1/4 and 3/4.
        report("weights 100:300, both busy: a %s, b %s", hweightFields("a"), hweightFields("b"));
        assertEquals(25.0, hweightPct("a", "active"), 0.05, "a: 100 of 400");
        assertEquals(75.0, hweightPct("b", "active"), 0.05, "b: 300 of 400");
        assertEquals(25.0, hweightPct("a", "inuse"), 0.05, "a spends its whole share");
        assertEquals(75.0, hweightPct("b", "inuse"), 0.05, "b spends its whole share");

        // b goes idle: at the end of the period it is deactivated, and a has the whole device.
        sb.stop();
        sim.runFor(4 * PERIOD);
        assertEquals(0.0, hweightPct("b", "active"), "b idle: no share now");
        assertEquals(0.0, hweightPct("b", "inuse"), "b idle");
        assertEquals(100.0, hweightPct("a", "active"), 0.05, "a alone");
    }

    private String hweightFields(String group) throws ControlException {
        Matcher m = Pattern.compile("hweight_active_pct=\\S+ hweight_inuse_pct=\\S+").matcher(controller.read(group + "/iotarget.io.stat"));
        assertTrue(m.find(), controller.read(group + "/iotarget.io.stat"));
        return m.group();
    }

    private double hweightPct(String group, String kind) throws ControlException {
        String stat = controller.read(group + "/iotarget.io.stat");
        Matcher m = Pattern.compile(" hweight_" + kind + "_pct=(\\d+\\.\\d\\d)").matcher(stat);
        assertTrue(m.find(), stat);
        return Double.parseDouble(m.group(1));
    }

    @Test
    void shouldComposeNestedWeights() throws ControlException {
        enable("");
        Group x = group("x", 100);
        controller.write("x/cgroup.subtree_control", "+io");
        Group x1 = group("x/x1", 100);
        Group x2 = group("x/x2", 300);
        Group y = group("y", 200);
        var s1 = sim.stream(x1, IoOp.WRITE, 4096, 32);
        var s2 = sim.stream(x2, IoOp.WRITE, 4096, 32);
        var sy = sim.stream(y, IoOp.WRITE, 4096, 32);
        s1.start();
        s2.start();
        sy.start();
        sim.runFor(SECOND);
        s1.takeBytes();
        s2.takeBytes();
        sy.takeBytes();
        sim.runFor(4 * SECOND);
        // x gets 100/300 and splits it 1:3; y gets 200/300.
        double share1 = s1.takeBytes() / 4.0 / CAPACITY_4K;
        double share2 = s2.takeBytes() / 4.0 / CAPACITY_4K;
        double shareY = sy.takeBytes() / 4.0 / CAPACITY_4K;
        report("nested x(100){x1(100),x2(300)}, y(200): x1 %.4f x2 %.4f y %.4f", share1, share2, shareY);
        assertShare(1.0 / 12, share1, "x/x1");
        assertShare(1.0 / 4, share2, "x/x2");
        assertShare(2.0 / 3, shareY, "y");
    }

    @Test
    void shouldShareDeviceTimeNotBytes() throws ControlException {
        enable("");
        Group a = group("a", 100);
        Group b = group("b", 200);
        // 4 KiB writes take 100 µs, 64 KiB writes 850 µs; the model knows it. a needs more
        // requests outstanding to keep up: 32 small ones behind 64 KiB ones would leave it
        // latency-bound, and a group that cannot use its share donates it.
        var sa = sim.stream(a, IoOp.WRITE, 4096, 256);
        var sb = sim.stream(b, IoOp.WRITE, 65536, 32);
        sa.start();
        sb.start();
        sim.runFor(SECOND);
        long iosA = sa.iosDone;
        long iosB = sb.iosDone;
        sim.runFor(4 * SECOND);
        double timeA = (sa.iosDone - iosA) * 100e-6 / 4;
        double timeB = (sb.iosDone - iosB) * 850e-6 / 4;
        report("4 KiB (100) vs 64 KiB (200) writes: device time a %.4f b %.4f, b:a %.3f", timeA, timeB, timeB / timeA);
        assertShare(2.0, timeB / timeA, "b : a in device time");
        assertTrue(timeA + timeB >= 0.95, "device busy " + (timeA + timeB));
    }

    @Test
    void shouldComposeWithIoMax() throws ControlException {
        enable("");
        Group a = group("a", 100);
        Group b = group("b", 100);
        // a's io.max is a tenth of the device: it cannot use its half, so b gets the rest.
        controller.write("a/io.max", sim.device.number() + " wbps=4096000");
        var sa = sim.stream(a, IoOp.WRITE, 4096, 32);
        var sb = sim.stream(b, IoOp.WRITE, 4096, 32);
        sa.start();
        sb.start();
        sim.runFor(SECOND);
        sa.takeBytes();
        sb.takeBytes();
        sim.runFor(4 * SECOND);
        double rateA = sa.takeBytes() / 4.0;
        double rateB = sb.takeBytes() / 4.0;
        report("io.max wbps=4096000 on a (100), b (100): a %.0f B/s, device busy %.4f", rateA, (rateA + rateB) / CAPACITY_4K);
        assertTrue(Math.abs(rateA / 4_096_000 - 1) <= 0.01, "a at its io.max: " + rateA);
        assertTrue((rateA + rateB) / CAPACITY_4K >= 0.95, "the device stays busy: " + (rateA + rateB) / CAPACITY_4K);
    }

    @Test
    void shouldFindTheDeviceCapacityWithLatencyQos() throws ControlException {
        // The model claims twice what the device can do; with a p90 write latency target the
        // QoS loop brings vrate down to about 50%, where the model and the device agree again.
        String optimistic = sim.matchingModel().replace("81920000", "163840000").replace("=10000", "=20000");
        controller.write("io.cost.model", optimistic);
        controller.write("io.cost.qos", sim.device.number() + " enable=1 wpct=90 wlat=5000");
        Group a = group("a", 100);
        Group b = group("b", 200);
        var sa = sim.stream(a, IoOp.WRITE, 4096, 32);
        var sb = sim.stream(b, IoOp.WRITE, 4096, 32);
        sa.start();
        sb.start();
        sim.runFor(6 * SECOND);
        sa.takeBytes();
        sb.takeBytes();
        sim.runFor(4 * SECOND);
        double vrate = vratePercent();
        double rateA = sa.takeBytes() / 4.0;
        double rateB = sb.takeBytes() / 4.0;
        report("model 2x optimistic, wpct=90 wlat=5000: vrate %.2f%%, b:a %.3f, device busy %.4f", vrate, rateB / rateA, (rateA + rateB) / CAPACITY_4K);
        assertTrue(vrate >= 40 && vrate <= 60, "vrate " + vrate + "%");
        assertTrue(Math.abs(rateB / rateA / 2 - 1) <= 0.10, "b : a = " + rateB / rateA);
        assertTrue((rateA + rateB) / CAPACITY_4K >= 0.85, "device busy " + (rateA + rateB) / CAPACITY_4K);
        // Why: the writes missed their target, and the 64 requests waited for the 32 slots; no
        // reads. The period is twice the larger target, rlat's default 25 ms: 200 in 10 s.
        Counters<CostCounter> c = costCounters();
        report("why: %d periods, write latency busy %d, rq_wait busy %d, lowered %d, raised %d", c.counter(CostCounter.PERIODS),
                c.counter(CostCounter.WRITE_LATENCY_BUSY_PERIODS), c.counter(CostCounter.RQ_WAIT_BUSY_PERIODS),
                c.counter(CostCounter.VRATE_LOWERED_PERIODS), c.counter(CostCounter.VRATE_RAISED_PERIODS));
        assertTrue(Math.abs(c.counter(CostCounter.PERIODS) - 200) <= 1, "periods: " + c.counter(CostCounter.PERIODS));
        assertTrue(c.counter(CostCounter.WRITE_LATENCY_BUSY_PERIODS) > 0 && c.counter(CostCounter.RQ_WAIT_BUSY_PERIODS) > 0);
        assertEquals(0, c.counter(CostCounter.READ_LATENCY_BUSY_PERIODS));
        assertTrue(c.counter(CostCounter.VRATE_LOWERED_PERIODS) > 0 && c.counter(CostCounter.VRATE_RAISED_PERIODS) > 0, "vrate found 50% from both sides");
        assertTrue(c.counter(CostCounter.VRATE_LOWERED_PERIODS)
                   <= c.counter(CostCounter.WRITE_LATENCY_BUSY_PERIODS) + c.counter(CostCounter.RQ_WAIT_BUSY_PERIODS),
                "vrate falls only after a busy period (it starts inside min and max)");
    }

    @Test
    void shouldCountRqWaitAsTheOnlyBusySignalWithoutLatencyTargets() throws ControlException {
        // A model twice the device and no latency targets: 64 requests on 32 slots wait for one,
        // and that alone brings vrate down.
        String optimistic = sim.matchingModel().replace("81920000", "163840000").replace("=10000", "=20000");
        controller.write("io.cost.model", optimistic);
        controller.write("io.cost.qos", sim.device.number() + " enable=1");
        var sa = sim.stream(group("a", 100), IoOp.WRITE, 4096, 32);
        var sb = sim.stream(group("b", 200), IoOp.WRITE, 4096, 32);
        sa.start();
        sb.start();
        sim.runFor(5 * SECOND);
        Counters<CostCounter> c = costCounters();
        report("rq_wait only: vrate %.2f%%, %d periods, rq_wait busy %d, lowered %d, raised %d, busy level %d", vratePercent(),
                c.counter(CostCounter.PERIODS), c.counter(CostCounter.RQ_WAIT_BUSY_PERIODS),
                c.counter(CostCounter.VRATE_LOWERED_PERIODS), c.counter(CostCounter.VRATE_RAISED_PERIODS), c.counter(CostCounter.BUSY_LEVEL));
        assertTrue(c.counter(CostCounter.RQ_WAIT_BUSY_PERIODS) > 0);
        assertEquals(0, c.counter(CostCounter.READ_LATENCY_BUSY_PERIODS) + c.counter(CostCounter.WRITE_LATENCY_BUSY_PERIODS), "no targets, no latency signal");
        assertEquals(0, c.counter(CostCounter.LAGGING_PERIODS), "lagging counts with latency targets only");
        assertTrue(c.counter(CostCounter.VRATE_LOWERED_PERIODS) > 0 && vratePercent() < 100);
        assertTrue(c.counter(CostCounter.VRATE_LOWERED_PERIODS) <= c.counter(CostCounter.RQ_WAIT_BUSY_PERIODS));
    }

    @Test
    void shouldHoldVratePinnedByMinAndMax() throws ControlException {
        // min = max = 50%: the walk from 100% takes 4% steps per period; then half the device.
        enable("ctrl=user min=50 max=50");
        var sa = sim.stream(group("a", 100), IoOp.WRITE, 4096, 32);
        sa.start();
        sim.runFor(2 * SECOND);
        assertEquals(50.0, vratePercent());
        sa.takeBytes();
        sim.runFor(2 * SECOND);
        double share = sa.takeBytes() / 2.0 / CAPACITY_4K;
        report("min=max=50: a alone gets %.4f of the device", share);
        assertShare(0.5, share, "a alone at vrate 50%");
    }

    /** One line per scenario with the measured values (deterministic), for bench/results/iocost.md. */
    private static void report(String format, Object... args) {
        System.out.println("[iocost-sim] " + String.format(format, args));
    }

    private Counters<CostCounter> costCounters() {
        return controller.policyCounters(sim.device).get("cost").as(CostCounter.class);
    }

    private double vratePercent() throws ControlException {
        Matcher m = Pattern.compile("cost\\.vrate=(\\d+\\.\\d\\d)").matcher(controller.read("io.stat"));
        assertTrue(m.find());
        return Double.parseDouble(m.group(1));
    }
}
