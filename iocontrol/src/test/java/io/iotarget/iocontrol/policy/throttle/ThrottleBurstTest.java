package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.ControllerHarness;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static io.iotarget.iocontrol.policy.throttle.ThrottlePolicyTest.closedLoop;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** io.max.burst on a manual clock: the numbers of section 10 of the package documentation, exactly. */
class ThrottleBurstTest {
    private static final long MS = 1_000_000L;
    private static final long SEC = 1_000_000_000L;

    private final ControllerHarness h = new ControllerHarness();

    @Test
    void shouldRunAtTheBurstRateForLenSecondsThenAtTheLimitAndRefillWhenIdle() throws Exception {
        Group a = h.group("tenants/a");
        h.controller.write("tenants/a/io.max", "259:0 riops=1000");
        h.controller.write("tenants/a/io.max.burst", "259:0 riops=5000 len=2");
        assertEquals("259:0 riops=8000/8000\n", h.controller.read("tenants/a/io.max.burst.stat"), "a new group starts with full credit");
        long first = closedLoop(h, h.dev0, IoOp.READ, 4096, 32, 2 * SEC, a)[0];
        long rest = closedLoop(h, h.dev0, IoOp.READ, 4096, 32, 4 * SEC, a)[0];
        // min(5 + 5000 t, 8001 + 1000 t): the two meet at 1.999 s, the last release before 2 s.
        assertEquals(10_000, first, "2 s at 5000");
        assertEquals(4_000, rest, "then 1000 a second");
        assertEquals(14_000, first + rest, "1000 × 6 s + (5000 − 1000) × 2 s");
        assertEquals("259:0 riops=1/8000\n", h.controller.read("tenants/a/io.max.burst.stat"), "1 ms after the last release");
        h.runUntil(h.clock.nanoTime() + 100 * MS, MS);   // what the closed loops left waiting goes at 1000/s
        h.dispatched.clear();
        h.clock.advance(8 * SEC);
        assertEquals("259:0 riops=8000/8000\n", h.controller.read("tenants/a/io.max.burst.stat"), "full again after 8 s idle");
        h.clock.advance(60 * SEC);
        assertEquals("259:0 riops=8000/8000\n", h.controller.read("tenants/a/io.max.burst.stat"), "and no fuller");
        // The 10 ms a bucket makes up for late releases (section 1) is held within the credit, not on top.
        assertEquals(10_000, closedLoop(h, h.dev0, IoOp.READ, 4096, 32, 2 * SEC, a)[0], "a second burst exactly as the first");
    }

    /**
     * What a group leaves unused below L refills its credit: 4 s at 500 IOPS under riops=1000
     * saves 2000 IOs. 8001 META reads take all the credit at once, and put the 5000 IOPS burst
     * rate 1.6 s in debt, in which the credit refills at 1000 a second.
     */
    @Test
    void shouldRefillTheCreditWithWhatGoesUnusedBelowTheLimit() throws Exception {
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 riops=1000");
        h.controller.write("a/io.max.burst", "259:0 riops=5000 len=2");
        for (int i = 0; i < 8001; i++) {       // metadata is never delayed but is charged: all the credit, at once
            IoRequest meta = h.request(IoOp.READ, 4096, h.dev0, a);
            meta.set(IoOp.READ, IoFlags.META, 0, 4096, null);
            assertTrue(h.submit(meta));
        }
        assertEquals("259:0 riops=0/8000\n", h.controller.read("a/io.max.burst.stat"));
        h.clock.advance(1600 * MS);
        assertEquals("259:0 riops=1600/8000\n", h.controller.read("a/io.max.burst.stat"));
        for (int i = 0; i < 2000; i++) {
            h.clock.advance(2 * MS);
            assertTrue(h.submit(h.request(IoOp.READ, 4096, h.dev0, a)), "500 a second fit under 1000");
        }
        assertEquals("259:0 riops=3600/8000\n", h.controller.read("a/io.max.burst.stat"));
    }

    /** The parent's limit holds: a's burst runs at 3000, so its 8000 IOs of credit last 4 s. */
    @Test
    void shouldHoldABurstToEveryAncestorAndSpendTheCreditSlower() throws Exception {
        Group a = h.group("tenants/a");
        h.controller.write("tenants/io.max", "259:0 riops=3000");
        h.controller.write("tenants/a/io.max", "259:0 riops=1000");
        h.controller.write("tenants/a/io.max.burst", "259:0 riops=5000 len=2");
        long first = closedLoop(h, h.dev0, IoOp.READ, 4096, 32, 4 * SEC, a)[0];
        long rest = closedLoop(h, h.dev0, IoOp.READ, 4096, 32, 2 * SEC, a)[0];
        assertEquals(12_000, first, "3000 a second for 4 s");
        assertEquals(2_000, rest);
        assertEquals(14_000, first + rest, "the same 8000 IOs above 1000 a second");
    }

    @Test
    void shouldCarryTheCreditLeftAcrossIoMaxChangesUpToTheNewFullCredit() throws Exception {
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 riops=1000");
        h.controller.write("a/io.max.burst", "259:0 riops=5000 len=2");
        for (int i = 0; i < 5; i++) assertTrue(h.submit(h.request(IoOp.READ, 4096, h.dev0, a)), "5000's 1 ms burst: 5 at once");
        assertEquals("259:0 riops=7996/8000\n", h.controller.read("a/io.max.burst.stat"));
        h.controller.write("a/io.max", "259:0 riops=4000");
        assertEquals("259:0 riops=2000/2000\n", h.controller.read("a/io.max.burst.stat"), "(5000 − 4000) × 2 s: capped");
        h.controller.write("a/io.max", "259:0 riops=2000");
        assertEquals("259:0 riops=2000/6000\n", h.controller.read("a/io.max.burst.stat"), "what was left carries over, no more");
        h.controller.write("a/io.max", "259:0 riops=5000");
        assertEquals("", h.controller.read("a/io.max.burst.stat"), "io.max at the burst rate: no burst in effect");
        h.controller.write("a/io.max", "259:0 riops=max");
        assertEquals("259:0 rbps=max wbps=max riops=5000 wiops=max len=2\n", h.controller.read("a/io.max.burst"), "kept, dormant");
        h.controller.write("a/io.max", "259:0 riops=1000");
        assertEquals("259:0 riops=8000/8000\n", h.controller.read("a/io.max.burst.stat"), "a burst coming into effect starts full");
    }

    @Test
    void shouldKeepABurstForALimitIoMaxDoesNotSetDormant() throws Exception {
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 riops=1000");
        h.controller.write("a/io.max.burst", "259:0 wiops=5000 riops=800");
        assertEquals("259:0 rbps=max wbps=max riops=800 wiops=5000 len=1\n", h.controller.read("a/io.max.burst"));
        assertEquals("", h.controller.read("a/io.max.burst.stat"), "wiops is unlimited and 800 is below 1000");
        assertEquals("259:0 rbps=max wbps=max riops=1000 wiops=max\n", h.controller.read("a/io.max"), "io.max reads as Linux's");
        for (int i = 0; i < 100; i++) assertTrue(h.submit(h.request(IoOp.WRITE, 4096, h.dev0, a)), "writes are not limited");
        int now = 0;
        for (int i = 0; i < 100; i++) if (h.submit(h.request(IoOp.READ, 4096, h.dev0, a))) now++;
        assertEquals(1, now, "reads are held to io.max, 1 ms worth at once");
    }

    @Test
    void shouldReadBackWritesAndDropALineWithoutRates() throws Exception {
        h.group("a");
        h.controller.write("a/io.max.burst", "259:0 rbps=209715200 len=30");
        h.controller.write("a/io.max.burst", "mem0 wiops=max riops=99999999999");
        assertEquals("259:0 rbps=209715200 wbps=max riops=max wiops=max len=30\n", h.controller.read("a/io.max.burst"), "iops clamp to max");
        h.controller.write("a/io.max.burst", "259:0 rbps=max");
        assertEquals("", h.controller.read("a/io.max.burst"));
        h.controller.write("a/io.max.burst", "259:0 wbps=4096");
        assertEquals("259:0 rbps=max wbps=4096 riops=max wiops=max len=1\n", h.controller.read("a/io.max.burst"), "len starts again at 1");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "259:0 len=0               | ERANGE",
            "259:0 riops=0             | ERANGE",
            "259:0 len=86401           | ERANGE",
            "259:0 len=max             | EINVAL",
            "259:0 len=2s              | EINVAL",
            "259:0 riops=1             | EINVAL",
            "259:0 iops=5000           | EINVAL",
            "259:0 riops               | EINVAL",
            "259:9 riops=5000          | ENODEV",
    })
    void shouldRefuseBadWritesAndChangeNothing(String value, Errno expected) throws Exception {
        h.group("a");
        h.controller.write("a/io.max.burst", "259:0 riops=3000 len=5");
        assertEquals(expected, assertThrows(ControlException.class, () -> h.controller.write("a/io.max.burst", value + " wiops=7")).errno());
        assertEquals("259:0 rbps=max wbps=max riops=3000 wiops=max len=5\n", h.controller.read("a/io.max.burst"));
    }

    @Test
    void shouldTakeLenAtItsBoundsAndOnlyInIoMaxBurst() throws Exception {
        h.group("a");
        h.controller.write("a/io.max.burst", "259:0 riops=3000 len=1");
        assertEquals("259:0 rbps=max wbps=max riops=3000 wiops=max len=1\n", h.controller.read("a/io.max.burst"));
        h.controller.write("a/io.max.burst", "259:0 len=86400");
        assertEquals("259:0 rbps=max wbps=max riops=3000 wiops=max len=86400\n", h.controller.read("a/io.max.burst"));
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> h.controller.write("a/io.max", "259:0 riops=3000 len=2")).errno(),
                "len is io.max.burst's key, not io.max's");
        assertEquals("", h.controller.read("a/io.max"));
    }

    @Test
    void shouldNotExistOnTheRoot() throws Exception {
        h.group("a");
        assertEquals(Errno.ENOENT, assertThrows(ControlException.class, () -> h.controller.read("io.max.burst")).errno());
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> h.controller.write("a/io.max.burst.stat", "259:0 riops=5")).errno());
    }

    /**
     * A burst that lags: the server's worker is descheduled for 120 ms at t = 1 s (nothing is
     * released), as on a very busy machine. The burst bucket makes up 100 ms of it while requests
     * wait (section 1), so the first 2 s send 105 fewer than 10000, and 106 IOs of credit are left
     * at 2 s. They are the group's (section 10): it spends them at 5000 a second within the next
     * 27 ms, then is held to 1000 a second exactly. So IOPS counted from 2 s read 4105 / 4 s = 1026
     * (+2.6%); from the moment the credit is spent the group runs at 1000, and the 6 s total is the
     * 14000 of a burst that never lagged.
     */
    @Test
    void shouldSpendWhatALaggingBurstLeftJustAfterLenThenHoldTheLimitExactly() throws Exception {
        Group a = h.group("tenants/a");
        h.controller.write("tenants/a/io.max", "259:0 riops=1000");
        h.controller.write("tenants/a/io.max.burst", "259:0 riops=5000 len=2");
        long beforeStall = closedLoop(h, h.dev0, IoOp.READ, 4096, 32, SEC, a)[0];
        h.clock.advance(120 * MS);
        long first = beforeStall + closedLoop(h, h.dev0, IoOp.READ, 4096, 32, 880 * MS, a)[0];
        assertEquals(9_895, first, "121 ms at 5000 went by unreleased (the last release before was at 0.999 s), 100 ms of it made up");
        assertEquals("259:0 riops=106/8000\n", h.controller.read("tenants/a/io.max.burst.stat"), "8001 + 1000 × 2 − 9895 left");
        long spending = closedLoop(h, h.dev0, IoOp.READ, 4096, 32, 100 * MS, a)[0];
        assertEquals(100 + 105, spending, "100 ms at 1000 and the credit left, at 5000 while it lasts");
        assertEquals("259:0 riops=1/8000\n", h.controller.read("tenants/a/io.max.burst.stat"));
        long steady = closedLoop(h, h.dev0, IoOp.READ, 4096, 32, 3900 * MS, a)[0];
        assertEquals(3_900, steady, "once the credit is spent: 1000 a second, exactly");
        assertEquals(14_000, first + spending + steady, "1000 × 6 s + 8000, as without the stall");
    }
}
