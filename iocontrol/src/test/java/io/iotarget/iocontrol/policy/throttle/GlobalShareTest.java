package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.ControllerHarness;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** io.max.global and a node's share of it (section 8 of the package documentation), on a manual clock. */
class GlobalShareTest {
    private static final long MS = 1_000_000L;
    private static final long SEC = 1_000_000_000L;
    private static final long MAX = ThrottlePolicy.UNLIMITED;

    private static ThrottlePolicy policy(ControllerHarness h) {
        return (ThrottlePolicy) h.controller.policies().getFirst();
    }

    /** Reads dispatched in one second by a client that always has 32 waiting. */
    private static long readsInOneSecond(ControllerHarness h, Group g) {
        h.dispatched.clear();
        for (int i = 0; i < 32; i++) h.submit(h.request(IoOp.READ, 4096, h.dev0, g));
        long end = h.clock.nanoTime() + SEC;
        long done = 0;
        while (h.clock.nanoTime() < end) {
            // What passed in this millisecond comes back as new requests (the backend takes 1 ms).
            List<IoRequest> passed = new java.util.ArrayList<>(h.dispatched);
            h.dispatched.clear();
            done += passed.size();
            h.clock.advance(MS);
            for (int i = 0; i < passed.size(); i++) h.submit(h.request(IoOp.READ, 4096, h.dev0, g));
            h.release();
        }
        return done;
    }

    @Test
    void shouldReadBackByNameInIoMaxSyntaxAndLeaveIoMaxAlone() throws Exception {
        ControllerHarness h = new ControllerHarness();
        h.group("tenants/a");
        h.controller.write("tenants/a/io.max", "259:0 riops=5000");
        h.controller.write("tenants/a/io.max.global", "259:0 riops=9000");
        h.controller.write("tenants/a/io.max.global", "mem0 wbps=1048576");
        assertEquals("mem0 rbps=max wbps=1048576 riops=9000 wiops=max\n", h.controller.read("tenants/a/io.max.global"));
        assertEquals("259:0 rbps=max wbps=max riops=5000 wiops=max\n", h.controller.read("tenants/a/io.max"));
        assertEquals(List.of("mem0 rbps=max wbps=1048576 riops=9000 wiops=max"), h.controller.tree().replay("tenants/a/io.max.global"));
        ControlException zero = assertThrows(ControlException.class, () -> h.controller.write("tenants/a/io.max.global", "mem0 riops=0"));
        assertEquals(Errno.ERANGE, zero.errno());
        assertThrows(ControlException.class, () -> h.controller.read("io.max.global"));      // not on the root, as io.max
    }

    @Test
    void shouldEnforceTheSmallerOfIoMaxAndTheShare() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("tenants/a");
        ThrottlePolicy policy = policy(h);
        policy.startingDivisor(3);
        h.controller.write("tenants/a/io.max.global", "mem0 riops=9000");
        // Before any coordinator: limit / the divisor. 3 ms of burst (1 ms worth) aside, exactly the rate.
        assertEquals(3000 + 3, readsInOneSecond(h, a), 3);
        ThrottlePolicy.GlobalLimit limit = policy.globalLimits().getFirst();
        assertEquals(a, limit.group());
        assertArrayEquals(new long[] {MAX, MAX, 9000, MAX}, limit.limits());
        assertArrayEquals(new long[] {MAX, MAX, 3000, MAX}, limit.shares(), "what the pair enforces now");
        policy.share(a, limit.device(), new long[] {MAX, MAX, 8000, MAX});
        assertArrayEquals(new long[] {MAX, MAX, 8000, MAX}, policy.globalLimits().getFirst().shares());
        assertEquals(8000, readsInOneSecond(h, a), 20);
        h.controller.write("tenants/a/io.max", "259:0 riops=5000");
        assertEquals(5000, readsInOneSecond(h, a), 20);
        assertEquals("259:0 rbps=max wbps=max riops=5000 wiops=max\n", h.controller.read("tenants/a/io.max"));
        policy.share(a, limit.device(), new long[] {MAX, MAX, 1000, MAX});
        assertEquals(1000, readsInOneSecond(h, a), 20);
    }

    @Test
    void shouldLimitWithAShareAloneAndStopWhenTheGlobalLimitGoes() throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("tenants/a");
        h.controller.write("tenants/a/io.max.global", "mem0 riops=2000");
        assertEquals(2000, readsInOneSecond(h, a), 20);
        h.controller.write("tenants/a/io.max.global", "mem0 riops=max");
        assertEquals("", h.controller.read("tenants/a/io.max.global"));
        assertEquals(List.of(), policy(h).globalLimits());
        long unthrottled = readsInOneSecond(h, a);                      // every request in flight passes each millisecond
        assertTrue(unthrottled >= 32 * 1000, unthrottled + " reads");
    }
}
