package io.iotarget.cluster;

import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The deadline arithmetic, on a manual clock: what a node paused (SIGSTOP, GC) past its lease
 * sees when it runs again, which no in-process test of the real thing can show.
 */
class FenceTest {
    private static final long TTL_NS = TimeUnit.SECONDS.toNanos(2);
    private static final long LEASE = 0x1234;

    @Test
    void deadlineIsTheKeepAlivesSendingTimePlusTtlLessTwoPercentAndFiveMs() {
        assertEquals(TimeUnit.MILLISECONDS.toNanos(40 + 5), Fence.marginNs(TTL_NS));
        assertEquals(1_000 + TTL_NS - TimeUnit.MILLISECONDS.toNanos(45), Fence.deadlineNs(1_000, TTL_NS));
    }

    @Test
    void holdsUntilTheDeadlineOfTheLastKeepAliveSentNotAnswered() {
        ManualClock clock = new ManualClock(1_000_000_000L);
        Fence fence = new Fence(clock.nanoTime());
        assertFalse(fence.holds(clock.nanoTime()), "no lease yet");
        fence.renew(LEASE, clock.nanoTime(), TTL_NS);
        long sentNs = clock.nanoTime() + TimeUnit.MILLISECONDS.toNanos(600);
        clock.advance(TimeUnit.MILLISECONDS.toNanos(900));          // the answer took 300 ms
        assertTrue(fence.extend(LEASE, sentNs, TTL_NS, clock.nanoTime()));
        long deadline = sentNs + TTL_NS - Fence.marginNs(TTL_NS);
        assertEquals(deadline, fence.validUntilNs(), "counted from the sending, not from the answer");
        assertTrue(fence.holds(deadline - 1));
        assertFalse(fence.holds(deadline));
    }

    @Test
    void nodePausedPastItsDeadlineIsFencedWhenItRunsAgainAndALateAnswerDoesNotUnfenceIt() {
        ManualClock clock = new ManualClock(1_000_000_000L);
        Fence fence = new Fence(clock.nanoTime());
        fence.renew(LEASE, clock.nanoTime(), TTL_NS);
        long sentNs = clock.nanoTime();
        clock.advance(3 * TTL_NS);                                  // SIGSTOP for three leases, keep-alive in flight
        assertFalse(fence.holds(clock.nanoTime()), "the first check after the pause already refuses: no timer had to run");
        assertFalse(fence.extend(LEASE, sentNs, TTL_NS, clock.nanoTime()), "an answer read after the deadline is refused");
        assertFalse(fence.holds(clock.nanoTime()));
    }

    @Test
    void answersOutOfOrderNeverMoveTheDeadlineBackAndAnotherLeasesAnswerIsIgnored() {
        ManualClock clock = new ManualClock(1_000_000_000L);
        Fence fence = new Fence(clock.nanoTime());
        fence.renew(LEASE, clock.nanoTime(), TTL_NS);
        long early = clock.nanoTime();
        clock.advance(TimeUnit.MILLISECONDS.toNanos(500));
        long late = clock.nanoTime();
        assertTrue(fence.extend(LEASE, late, TTL_NS, clock.nanoTime()));
        assertTrue(fence.extend(LEASE, early, TTL_NS, clock.nanoTime()));
        assertEquals(Fence.deadlineNs(late, TTL_NS), fence.validUntilNs());
        assertFalse(fence.extend(LEASE + 1, clock.nanoTime(), TTL_NS, clock.nanoTime()));
        fence.fence(clock.nanoTime());
        assertFalse(fence.holds(clock.nanoTime()));
        assertEquals(0, fence.lease());
        assertFalse(fence.extend(LEASE, clock.nanoTime(), TTL_NS, clock.nanoTime()), "a given-up lease stays given up");
    }
}
