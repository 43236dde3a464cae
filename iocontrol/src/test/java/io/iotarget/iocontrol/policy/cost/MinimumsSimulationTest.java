package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.model.ControlException;
import io.iotarget.model.IoOp;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * io.min on a device of known capacity, as the iocost tests with a user model and a pinned
 * vrate make one: io.cost.model says 10,000 4 KiB reads per second (random or sequential)
 * and vrate is pinned at 100% ({@code min=100 max=100}), so iocost admits exactly that; the
 * {@link SimulatedDevice} behind it takes 1 µs per request with a queue depth of 64, so it
 * never holds a request back itself. Every group floods with 4 KiB reads at queue depth 32.
 * The numbers are the package documentation's section 12; time is simulated, so they are the
 * same on any machine.
 */
class MinimumsSimulationTest {
    private static final long SECOND = 1_000_000_000L;
    private static final double CAPACITY = 10_000;            // 4 KiB reads per second

    private SimulatedDevice sim;
    private IoController controller;

    @BeforeEach
    void setUp() throws ControlException {
        sim = new SimulatedDevice(1_000, 0, 64);
        controller = sim.controller;
        controller.write("cgroup.subtree_control", "+io");
        controller.write("io.cost.model", sim.device.number() + " ctrl=user model=linear rbps=40960000 rseqiops=10000 rrandiops=10000"
                                          + " wbps=40960000 wseqiops=10000 wrandiops=10000");
        controller.write("io.cost.qos", sim.device.number() + " enable=1 ctrl=user min=100 max=100");
    }

    private Group group(String path, int weight, String minimum) throws ControlException {
        Group g = controller.mkdir(path);
        controller.write(path + "/io.weight", Integer.toString(weight));
        if (minimum != null) controller.write(path + "/io.min", sim.device.number() + " " + minimum);
        return g;
    }

    /** Reads per second of each stream over 4 s, after 1 s to settle. */
    private double[] measure(SimulatedDevice.Stream... streams) {
        for (var s : streams) s.start();
        sim.runFor(SECOND);
        long[] before = new long[streams.length];
        for (int i = 0; i < streams.length; i++) before[i] = streams[i].iosDone;
        sim.runFor(4 * SECOND);
        double[] rates = new double[streams.length];
        for (int i = 0; i < streams.length; i++) rates[i] = (streams[i].iosDone - before[i]) / 4.0;
        return rates;
    }

    private static void assertNear(double expected, double actual, double tolerance, String what) {
        assertTrue(Math.abs(actual / expected - 1) <= tolerance, what + ": " + actual + " (expected " + expected + " ± " + tolerance * 100 + "%)");
    }

    @Test
    void shouldGiveAMinimumWhateverTheWeights() throws ControlException {
        var a = sim.stream(group("a", 1, "riops=3000"), IoOp.READ, 4096, 32);
        var b = sim.stream(group("b", 1000, null), IoOp.READ, 4096, 32);
        double[] rates = measure(a, b);
        report("a riops=3000 weight 1, b weight 1000: a %.1f/s b %.1f/s", rates[0], rates[1]);
        // a: its 3000 plus 1/1001 of the 7000 left = 3007; b: 1000/1001 of 7000 = 6993.
        assertNear(3007, rates[0], 0.02, "a");
        assertTrue(rates[0] >= 3000 * 0.98, "a gets its minimum: " + rates[0]);
        assertNear(6993, rates[1], 0.02, "b, the rest");
        assertNear(CAPACITY, rates[0] + rates[1], 0.02, "the device stays busy");
        assertTrue(controller.read("a/iotarget.io.stat").contains(" min_pct=100.00 "), controller.read("a/iotarget.io.stat"));
    }

    @Test
    void shouldScaleMinimumsThatOvercommitTheDeviceAlike() throws ControlException {
        var a = sim.stream(group("a", 100, "riops=8000"), IoOp.READ, 4096, 32);
        var b = sim.stream(group("b", 100, "riops=6000"), IoOp.READ, 4096, 32);
        double[] rates = measure(a, b);
        report("a riops=8000, b riops=6000: a %.1f/s b %.1f/s, %s", rates[0], rates[1], controller.read("a/iotarget.io.stat").strip());
        assertNear(CAPACITY * 8 / 14, rates[0], 0.02, "a: 8/14 of the device");
        assertNear(CAPACITY * 6 / 14, rates[1], 0.02, "b: 6/14 of the device");
        // 10^6 / 1,400,009 ppm claimed (a 4 KiB read is 100000.7 ns of device time by the model).
        assertTrue(controller.read("a/iotarget.io.stat").contains(" min_pct=71.42 "), controller.read("a/iotarget.io.stat"));
    }

    @Test
    void shouldGiveTheWholeDeviceToAMinimumAlone() throws ControlException {
        var a = sim.stream(group("a", 100, "riops=3000"), IoOp.READ, 4096, 32);
        double[] rates = measure(a);
        report("a riops=3000 alone: a %.1f/s", rates[0]);
        assertNear(CAPACITY, rates[0], 0.02, "a alone, work conserving");
    }

    @Test
    void shouldLeaveTheMinimumToTheWeightsWhenItsGroupIsQuiet() throws ControlException {
        group("a", 100, "riops=8000");
        var b = sim.stream(group("b", 100, null), IoOp.READ, 4096, 32);
        double[] rates = measure(b);
        report("a riops=8000 idle, b weight 100: b %.1f/s", rates[0]);
        assertNear(CAPACITY, rates[0], 0.02, "b");
    }

    @Test
    void shouldCoverAndBoundChildrenWithTheParentsMinimum() throws ControlException {
        // t's riops=5000 covers t/x, which has none, and bounds t/y's own riops=4000, which comes
        // first: y gets 4000, x the other 1000. c (weight 1000) floods beside t (weight 1): t's
        // children also split t's 1/1001 of what the minimums leave (5000), c gets the rest.
        group("t", 1, "riops=5000");
        controller.write("t/cgroup.subtree_control", "+io");
        var x = sim.stream(group("t/x", 100, null), IoOp.READ, 4096, 32);
        var y = sim.stream(group("t/y", 100, "riops=4000"), IoOp.READ, 4096, 32);
        var c = sim.stream(group("c", 1000, null), IoOp.READ, 4096, 32);
        double[] rates = measure(x, y, c);
        report("t riops=5000 {x, y riops=4000} (weight 1), c weight 1000: x %.1f/s y %.1f/s c %.1f/s", rates[0], rates[1], rates[2]);
        assertNear(5005, rates[0] + rates[1], 0.02, "t's children together");
        assertNear(4002.5, rates[1], 0.02, "y: its own minimum first");
        assertNear(1002.5, rates[0], 0.02, "x: the rest of t's");
        assertNear(4995, rates[2], 0.02, "c, the rest");
        assertTrue(controller.read("t/iotarget.io.stat").contains(" min_pct=100.00 "), "5000 fits the device");
    }

    @Test
    void shouldStillCapAMinimumWithIoMax() throws ControlException {
        // io.max runs first: a's riops=1000 ceiling holds under its riops=3000 floor; b gets the rest.
        var a = sim.stream(group("a", 1, "riops=3000"), IoOp.READ, 4096, 32);
        controller.write("a/io.max", sim.device.number() + " riops=1000");
        var b = sim.stream(group("b", 1000, null), IoOp.READ, 4096, 32);
        double[] rates = measure(a, b);
        report("a riops=3000 under io.max riops=1000, b weight 1000: a %.1f/s b %.1f/s", rates[0], rates[1]);
        assertNear(1000, rates[0], 0.02, "a at its io.max");
        assertNear(9000, rates[1], 0.02, "b, the rest");
    }

    @Test
    void shouldReadBackWhatWasWritten() throws ControlException {
        group("a", 100, "riops=3000");
        controller.write("a/io.min", "259:0 wbps=1048576");
        assertEquals("259:0 rbps=0 wbps=1048576 riops=3000 wiops=0\n", controller.read("a/io.min"));
        controller.write("a/io.min", "259:0 riops=0 wbps=0");
        assertEquals("", controller.read("a/io.min"));
    }

    /** One line per scenario with the measured values (deterministic), for bench/results/iocost.md. */
    private static void report(String format, Object... args) {
        System.out.println("[iomin-sim] " + String.format(format, args));
    }
}
