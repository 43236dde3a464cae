package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.ControllerHarness;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** io.max on a manual clock: the numbers of the package documentation, exactly. */
class ThrottlePolicyTest {
    private static final long MS = 1_000_000L;
    private static final long SEC = 1_000_000_000L;

    /**
     * A closed-loop client: keeps {@code depth} requests outstanding per group, resubmitting as
     * soon as one is dispatched (the backend takes no time), for {@code durationNs}. Returns
     * per group the requests dispatched within the window.
     */
    static long[] closedLoop(ControllerHarness h, Device dev, IoOp op, long size, int depth, long durationNs, Group... groups) {
        long start = h.clock.nanoTime();
        long end = start + durationNs;
        long[] done = new long[groups.length];
        List<IoRequest> inFlight = new ArrayList<>();
        for (int g = 0; g < groups.length; g++) {
            for (int i = 0; i < depth; i++) {
                IoRequest io = h.request(op, size, dev, groups[g]);
                io.callback(null, g, 0);
                inFlight.add(io);
            }
        }
        for (IoRequest io : inFlight) h.submit(io);
        while (h.clock.nanoTime() < end) {
            while (!h.dispatched.isEmpty()) {
                IoRequest io = h.dispatched.removeFirst();
                int g = (Integer) io.attachment();
                done[g]++;
                IoRequest next = h.request(op, size, dev, groups[g]);
                next.callback(null, g, 0);
                h.submit(next);
            }
            h.clock.advance(Math.min(MS, end - h.clock.nanoTime()));
            if (h.clock.nanoTime() < end) h.release();
        }
        return done;
    }

    @Test
    void shouldHoldReadIopsToTheLimitOverTenSeconds() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("tenants/a");
        h.controller.write("tenants/a/io.max", "259:0 riops=20000");
        long[] done = closedLoop(h, h.dev0, IoOp.READ, 4096, 32, 10 * SEC, a);
        // 20 at once (1 ms worth), then one per 50 µs until the last release at 9.999 s: exactly 200000.
        assertEquals(200_000, done[0]);
    }

    @Test
    void shouldHoldReadBandwidthToTheLimit() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("tenants/a");
        h.controller.write("tenants/a/io.max", "259:0 rbps=104857600");
        long[] done = closedLoop(h, h.dev0, IoOp.READ, 128 * 1024, 32, 10 * SEC, a);
        assertEquals(10L * 104_857_600, done[0] * 128 * 1024);
    }

    @Test
    void shouldHoldWriteIopsAndBandwidthToTheLimit() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("tenants/a");
        h.controller.write("tenants/a/io.max", "259:0 wiops=20000");
        long[] iops = closedLoop(h, h.dev0, IoOp.WRITE, 4096, 32, 10 * SEC, a);
        ControllerHarness h2 = new ControllerHarness();
        Group b = h2.group("tenants/b");
        h2.controller.write("tenants/b/io.max", "259:0 wbps=104857600");
        long[] bytes = closedLoop(h2, h2.dev0, IoOp.WRITE, 1 << 20, 8, 10 * SEC, b);
        assertEquals(200_000, iops[0]);
        assertEquals(10L * 104_857_600, bytes[0] << 20);
    }

    @Test
    void shouldCapTheSumOfChildrenAtTheParentLimit() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("tenants/a");
        Group b = h.group("tenants/b");
        h.controller.write("tenants/io.max", "259:0 wiops=10000");
        h.controller.write("tenants/a/io.max", "259:0 wiops=8000");
        long[] done = closedLoop(h, h.dev0, IoOp.WRITE, 4096, 32, 10 * SEC, a, b);
        assertEquals(100_000, done[0] + done[1], "a + b held to the parent's 10000 IOPS");
        assertTrue(done[0] <= 80_000, "a within its own limit: " + done[0]);
        // Round-robin at the parent: neither child starves.
        assertTrue(done[0] > 40_000 && done[1] > 40_000, "a=" + done[0] + " b=" + done[1]);
    }

    @Test
    void shouldLeaveOtherDevicesAndDirectionsAlone() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("tenants/a");
        h.controller.write("tenants/a/io.max", "259:0 riops=100");
        for (int i = 0; i < 1000; i++) {
            assertTrue(h.submit(h.request(IoOp.WRITE, 4096, h.dev0, a)), "writes are not limited");
            assertTrue(h.submit(h.request(IoOp.READ, 4096, h.dev1, a)), "the other device is not limited");
        }
    }

    @Test
    void shouldQueueBehindWaitingRequestsInArrivalOrder() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 rbps=1048576");
        // The bucket holds 1 ms worth, 1048 bytes: a 512-byte read passes, a 64 KiB one waits...
        IoRequest first = h.request(IoOp.READ, 512, h.dev0, a);
        IoRequest second = h.request(IoOp.READ, 65536, h.dev0, a);
        IoRequest third = h.request(IoOp.READ, 512, h.dev0, a);
        assertTrue(h.submit(first));
        assertFalse(h.submit(second));
        // ...and a small one that would fit what is left still queues behind it (FIFO).
        assertFalse(h.submit(third));
        h.runUntil(h.clock.nanoTime() + SEC, MS);
        assertEquals(List.of(first, second, third), h.dispatched);
    }

    @Test
    void shouldApplyARaisedLimitAtOnce() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 riops=10");
        List<IoRequest> waiting = new ArrayList<>();
        for (int i = 0; i < 100; i++) {
            IoRequest io = h.request(IoOp.READ, 4096, h.dev0, a);
            if (!h.submit(io)) waiting.add(io);
        }
        assertEquals(99, waiting.size(), "a full bucket at 10 IOPS holds one IO");
        h.controller.write("a/io.max", "259:0 riops=max");
        assertEquals(h.clock.nanoTime(), h.controller.nextReleaseNs(), "lifting the limit makes them due now");
        h.release();
        assertEquals(100, h.dispatched.size());
        assertEquals("", h.controller.read("a/io.max"), "all max: the line disappears");
    }

    @Test
    void shouldNeverDelayMetadataButChargeIt() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 wiops=10");
        for (int i = 0; i < 50; i++) {
            IoRequest meta = h.request(IoOp.WRITE, 4096, h.dev0, a);
            meta.set(IoOp.WRITE, IoFlags.META, 0, 4096, null);
            assertTrue(h.submit(meta));
        }
        // 50 IOs of debt at 10 IOPS: an ordinary write now waits about five seconds.
        IoRequest normal = h.request(IoOp.WRITE, 4096, h.dev0, a);
        assertFalse(h.submit(normal));
        h.runUntil(h.clock.nanoTime() + 4 * SEC, MS);
        assertEquals(50, h.dispatched.size());
        h.runUntil(h.clock.nanoTime() + 2 * SEC, MS);
        assertEquals(51, h.dispatched.size());
    }

    @Test
    void shouldReleaseParkedRequestsWhenTheirGroupIsRemoved() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 riops=10");
        for (int i = 0; i < 5; i++) h.submit(h.request(IoOp.READ, 4096, h.dev0, a));
        assertEquals(1, h.dispatched.size());
        h.controller.rmdir("a");
        h.release();
        assertEquals(5, h.dispatched.size(), "nothing waits for a removed group");
        assertEquals("259:0 rbytes=20480 wbytes=0 rios=5 wios=0 dbytes=0 dios=0\n259:1 \n", h.controller.read("io.stat"),
                "the root keeps the removed group's IO");
    }

    /**
     * Submitters read the clock before they take the device lock, so under contention a
     * request can arrive with a time earlier than one the device has already seen. It must
     * not restart the bucket and wipe what was charged in it.
     */
    @Test
    void shouldNotResetTheBucketForARequestThatReadTheClockEarlier() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 riops=10");
        long now = h.clock.nanoTime() + SEC;
        assertTrue(h.controller.admit(h.request(IoOp.READ, 4096, h.dev0, a), now), "a full bucket at 10 IOPS holds one IO");
        assertFalse(h.controller.admit(h.request(IoOp.READ, 4096, h.dev0, a), now - 1000), "read the clock 1 µs before the first");
    }

    /**
     * While requests wait, a bucket makes up for releases that came late, up to 100 ms worth
     * (Bucket.BACKLOG_CATCH_UP_NS): at riops=1000 a 50 ms stall of the server lets the 50 IOs it
     * owed out at once, a 300 ms one only 100 ms worth (and the one due now).
     */
    @Test
    void shouldMakeUpForALateReleaseButNotForAStall() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 riops=1000");
        for (int i = 0; i < 500; i++) h.submit(h.request(IoOp.READ, 4096, h.dev0, a));
        assertEquals(1, h.dispatched.size(), "a 1 ms burst at 1000 IOPS is one IO");
        h.clock.advance(2 * MS + MS / 2);
        h.release();
        assertEquals(3, h.dispatched.size(), "2.5 ms late: both IOs that fell due went");
        h.clock.advance(50 * MS);
        h.release();
        assertEquals(3 + 50, h.dispatched.size(), "after a 50 ms stall: the 50 it owed");
        h.clock.advance(300 * MS);
        h.release();
        assertEquals(3 + 50 + 1 + 100, h.dispatched.size(), "after a 300 ms stall: the one due now and 100 ms worth");
    }

    /** A client that falls behind for a moment gets the time back too; a long pause is idleness. */
    @Test
    void shouldMakeUpAShortGapOfTheClientButNotALongOne() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 riops=1000");
        assertTrue(h.submit(h.request(IoOp.READ, 4096, h.dev0, a)));
        h.clock.advance(5 * MS);
        int now = 0;
        for (int i = 0; i < 20; i++) if (h.submit(h.request(IoOp.READ, 4096, h.dev0, a))) now++;
        assertEquals(5, now, "5 ms without requests: the 5 IOs they allowed go at once");
        h.runUntil(h.clock.nanoTime() + SEC, MS);
        h.clock.advance(50 * MS);
        now = 0;
        for (int i = 0; i < 20; i++) if (h.submit(h.request(IoOp.READ, 4096, h.dev0, a))) now++;
        assertEquals(11, now, "after 50 ms: the 1 ms burst and 10 ms made up, no more");
    }

    @Test
    void shouldNotLimitTheRootGroup() throws Exception {
        ControllerHarness h = new ControllerHarness();
        h.group("a");
        h.controller.write("a/io.max", "259:0 riops=2");
        for (int i = 0; i < 100; i++) assertTrue(h.submit(h.request(IoOp.READ, 4096, h.dev0, h.controller.root())));
    }
}
