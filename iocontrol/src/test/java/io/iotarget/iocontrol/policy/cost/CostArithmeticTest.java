package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.ControllerHarness;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static io.iotarget.iocontrol.policy.cost.CostTunables.WEIGHT_ONE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The package documentation's worked example, number by number, on a manual clock. The model
 * (2^32 bytes/s, 65536 sequential and 1024 random IOPS) makes the costs powers of two:
 * page = 2^17, seqio = 2^21 − 2^17, randio = 2^27 − 2^17, so a sequential 4 KiB write costs
 * 2^21 vtime (1/65536 s) and a random one 2^27 (1/1024 s).
 */
class CostArithmeticTest {
    private static final long MS = 1_000_000;
    private static final long SEQ_4K = 1L << 21;
    private static final String MODEL = "259:0 rbps=4294967296 rseqiops=65536 rrandiops=1024 wbps=4294967296 wseqiops=65536 wrandiops=1024";

    private final ManualClock clock = new ManualClock(0);
    private IoController controller;
    private DeviceControl dc;
    private CostDevice cost;
    private final Map<Group, Long> nextOffset = new HashMap<>();
    private final List<IoRequest> completed = new ArrayList<>();

    @BeforeEach
    void setUp() throws ControlException {
        controller = new IoController(clock, ControllerHarness.ALL_POLICIES);
        dc = controller.registerDevice(new Device(0, new DeviceNumber(259, 0), "d0", 1L << 40, 512, false, 1));
        controller.write("cgroup.subtree_control", "+io");
        controller.write("io.cost.model", MODEL);
        controller.write("io.cost.qos", "259:0 enable=1");
        cost = ((CostPolicy) controller.policies().stream().filter(p -> p instanceof CostPolicy).findFirst().orElseThrow()).device(dc);
    }

    private Group group(String path, int weight) throws ControlException {
        Group g = controller.mkdir(path);
        controller.write(path + "/io.weight", Integer.toString(weight));
        return g;
    }

    private CostGroup state(Group g) {
        return cost.state(controller.tree().ensureDeviceGroup(g, dc));
    }

    /** A sequential 4 KiB write from {@code g}; completes at once when admitted. True when admitted. */
    private boolean write(Group g, int flags) {
        long offset = nextOffset.merge(g, 4096L, Long::sum);
        IoRequest io = new IoRequest().set(IoOp.WRITE, flags, offset, 4096, null).target(dc.device(), g);
        if (!controller.admit(io, clock.nanoTime())) return false;
        completeAll(List.of(io));
        return true;
    }

    private void completeAll(List<IoRequest> ios) {
        for (IoRequest io : ios) {
            io.admitNs(clock.nanoTime());
            io.issueNs(clock.nanoTime());
            completed.add(io);
            controller.complete(io, clock.nanoTime(), r -> { });
        }
    }

    /** Runs every timer due up to {@code untilNs}, completing released requests at once. */
    private void runUntil(long untilNs) {
        long next;
        while ((next = controller.nextReleaseNs()) <= untilNs) {
            clock.set(Math.max(next, clock.nanoTime()));
            List<IoRequest> released = new ArrayList<>();
            controller.releaseDue(clock.nanoTime(), released::add);
            completeAll(released);
        }
        clock.set(untilNs);
    }

    @Test
    void shouldDeriveTheLinearCoefficients() {
        LinearModel m = cost.config().model();
        assertEquals(1L << 17, m.pageCost(LinearModel.WRITE));
        assertEquals((1L << 21) - (1L << 17), m.seqioCost(LinearModel.WRITE));
        assertEquals((1L << 27) - (1L << 17), m.randioCost(LinearModel.WRITE));
        LinearModel dfl = AutoParams.SSD_DFL.model;
        assertEquals(1_315_634, dfl.pageCost(LinearModel.WRITE), "ceil(2^37 / ceil(427891549 / 4096))");
        assertEquals(3_464_021, dfl.seqioCost(LinearModel.WRITE), "ceil(2^37 / 28755) - page");
    }

    @Test
    void shouldSplitTheDeviceByHierarchicalWeights() throws ControlException {
        Group x = group("x", 100);
        controller.write("x/cgroup.subtree_control", "+io");
        Group x1 = group("x/x1", 100);
        Group x2 = group("x/x2", 300);
        Group y = group("y", 200);
        for (Group g : List.of(x1, x2, y)) assertTrue(write(g, 0));
        // x = 100/300 of the device, split 1:3 between x1 and x2; y = 200/300.
        assertHweight(5461, x1);
        assertHweight(16383, x2);
        assertHweight(43690, y);
        assertTrue(write(x, 0), "x has active children: its own IO goes out uncontrolled, like root IO");
        assertEquals(0, state(x).vtime, "and is not charged");
    }

    private void assertHweight(long expected, Group g) {
        CostGroup s = state(g);
        // IO just refreshed the cache: read it as the IO path does.
        assertTrue(write(g, 0));
        assertEquals(expected, s.hweightActive, g.path());
        assertEquals(expected, s.hweightInuse, g.path());
    }

    @Test
    void shouldChargeEachIoItsCostOverItsHweight() throws ControlException {
        Group a = group("a", 100);
        Group b = group("b", 200);
        assertTrue(write(b, 0));
        CostGroup sa = state(a);
        long vnow = 0;
        long target = 25_000 * CostTunables.VTIME_PER_USEC;       // half of the 50 ms period, vtime
        // a's first write activates it with the target budget and costs 2^21 × 65536 / 21845.
        assertTrue(write(a, 0));
        assertEquals(vnow - target + 6_291_553, sa.vtime);
        assertEquals(sa.vtime, sa.doneVtime, "completed: nothing in flight");
        // 546 writes fit in the 25 ms budget (3435950000 / 6291553); the 547th waits.
        int admitted = 1;
        while (write(a, 0)) admitted++;
        assertEquals(546, admitted);
        assertEquals(1, sa.waiters.size());
        // It fits once vtime has run for the shortage: ceil(shortage / vrate) µs, plus 1% slack.
        long shortage = (vnow - target + 547 * 6_291_553L) - vnow;
        long shortageUs = Math.ceilDiv(shortage, CostTunables.VTIME_PER_USEC);
        assertEquals(shortageUs * 1000 + 500_000, sa.waitTimerNs);
        runUntil(sa.waitTimerNs);
        assertEquals(0, sa.waiters.size());
        assertEquals(547, completed.stream().filter(io -> io.group() == a).count());
    }

    @Test
    void shouldDonateTheUnusedShareToTheBusySibling() throws ControlException {
        Group a = group("a", 100);
        Group b = group("b", 100);
        CostGroup sa = state(a);
        CostGroup sb = state(b);
        // b activates alone (one write at hweight 1), a floods, b writes 159 more at hweight 1/2.
        assertTrue(write(b, 0));
        for (int i = 0; i < 5000; i++) write(a, 0);
        for (int i = 0; i < 159; i++) assertTrue(write(b, 0));
        assertEquals(-25_000 * CostTunables.VTIME_PER_USEC + SEQ_4K + 159 * 2 * SEQ_4K, sb.vtime);
        assertEquals(32768, sb.hweightInuse);
        runUntil(50 * MS);                                       // the first period ends
        assertFalse(sa.waiters.isEmpty(), "a is short of budget all period");
        // b used 160 × 2^21 vtime = 2441 µs in 50 ms: usage = ceil(2441 × 65536 / 50000) = 3200.
        // Its budget above the target was thrown away, leaving delta = 1/2 a period, so the
        // hweight it keeps is usage / (1 - 1/2 + 1/2) = 3200.
        // Andy's method at the root: gamma = ceil((65536 - 3200) × 65536 / (65536 - 32768)) = 124672,
        // child_adjusted_sum = ceil(200·W × 32768 / 62336) = 6890028,
        // b.inuse = ceil(6890028 × 3200 / 65536) = 336428 (5.13 of a's 100).
        assertEquals(100 * WEIGHT_ONE, sb.active);
        assertEquals(336_428, sb.inuse);
        assertEquals(100 * WEIGHT_ONE, sa.inuse);
        assertTrue(write(b, 0));
        assertEquals(3200, sb.hweightInuse);
        assertEquals(62_335, currentHweightInuse(a), "a now uses 95.1% of the device");
        // The 6202908512 vtime thrown away from b, weighted by its hweight (3101454256), comes back
        // as a faster clock over the next period: 137438 + 3101454256 / 50000 = 199467 per µs.
        assertEquals(199_467, cost.vtimeRate());
        assertEquals(CostTunables.VTIME_PER_USEC, cost.baseVrate(), "vrate itself did not move");
    }

    private long currentHweightInuse(Group g) {
        write(g, 0);
        return state(g).hweightInuse;
    }

    @Test
    void shouldSnapBackDonatedWeightWhenTheDonorNeedsIt() throws ControlException {
        Group a = group("a", 100);
        Group b = group("b", 100);
        assertTrue(write(b, 0));
        for (int i = 0; i < 5000; i++) write(a, 0);
        for (int i = 0; i < 159; i++) assertTrue(write(b, 0));
        runUntil(50 * MS);
        CostGroup sb = state(b);
        assertEquals(336_428, sb.inuse);
        // b now writes flat out: once its budget falls below margin.low it takes weight back in
        // steps of 25% of its active weight, without waiting for the period to end.
        int n = 0;
        while (sb.inuse != sb.active && write(b, 0)) n++;
        assertEquals(sb.active, sb.inuse, "after " + n + " writes");
    }

    @Test
    void shouldChargeMetadataAsDebtAndDelayItsIssuer() throws ControlException {
        Group a = group("a", 100);
        group("b", 100);
        CostGroup sa = state(a);
        while (write(a, 0)) {
            // spend a's budget
        }
        int waiting = sa.waiters.size();
        // META cannot wait behind data: it goes out and its cost becomes debt; a donates everything meanwhile.
        assertTrue(write(a, IoFlags.META));
        assertEquals(waiting, sa.waiters.size());
        assertEquals(SEQ_4K, sa.absVdebt);
        assertEquals(1, sa.inuse);
        // Debt far beyond 5 periods' worth of vtime delays the issuer: here 30000 more writes.
        IoRequest last = null;
        for (int i = 0; i < 30_000; i++) {
            last = new IoRequest().set(IoOp.WRITE, IoFlags.META, nextOffset.merge(a, 4096L, Long::sum), 4096, null).target(dc.device(), a);
            assertTrue(controller.admit(last, clock.nanoTime()));
        }
        assertTrue(sa.issuerDelayUs >= CostTunables.MIN_DELAY_US, "delay " + sa.issuerDelayUs);
        long holdNs = controller.complete(last, clock.nanoTime(), r -> { });
        assertEquals(sa.issuerDelayUs * 1000, holdNs, "the completion is held back for the delay");
        // Paid back from budget as vtime runs; only then do the waiters move.
        long debt = sa.absVdebt;
        runUntil(200 * MS);
        assertTrue(sa.absVdebt < debt);
    }

    @Test
    void shouldReleaseEveryWaiterWhenIocostIsDisabled() throws ControlException {
        Group a = group("a", 100);
        int admitted = 0;
        for (int i = 0; i < 2000; i++) if (write(a, 0)) admitted++;
        assertEquals(2000 - admitted, state(a).waiters.size());
        controller.write("io.cost.qos", "259:0 enable=0");
        assertEquals(Long.MIN_VALUE, controller.nextReleaseNs(), "released at once, not at vrate");
        List<IoRequest> released = new ArrayList<>();
        controller.releaseDue(clock.nanoTime(), released::add);
        assertEquals(2000 - admitted, released.size());
        assertTrue(state(a).waiters.isEmpty());
        assertTrue(write(a, 0), "no longer costed");
    }

    @Test
    void shouldReleaseTheWaitersOfARemovedGroupAndGiveItsShareBack() throws ControlException {
        Group a = group("a", 100);
        Group b = group("b", 100);
        assertTrue(write(b, 0));
        int admitted = 0;
        for (int i = 0; i < 2000; i++) if (write(a, 0)) admitted++;
        controller.rmdir("a");
        List<IoRequest> released = new ArrayList<>();
        controller.releaseDue(clock.nanoTime(), released::add);
        assertEquals(2000 - admitted, released.size());
        completeAll(released);
        assertTrue(write(b, 0));
        assertEquals(WEIGHT_ONE, state(b).hweightActive, "b alone again");
    }
}
