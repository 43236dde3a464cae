package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.policy.MulDiv;

/**
 * One limit's token bucket (section 1 of the package documentation), in the limit's units:
 * bytes for bps, IOs for iops. It holds {@code burst + allowed(now − start) − dispatched}
 * units, {@code burst} being {@link #burst} ({@link #BURST_NS} worth), and a request fits once it
 * holds the request's cost (bytes, or 1 IO). A bucket whose direction has nothing queued is
 * capped at its burst (refilled to exactly that); while requests wait it may hold up to
 * {@link #CATCH_UP_NS} worth more than the burst or the head request's cost, so that a release
 * the releaser made late lets the next ones out that much sooner instead of losing the time,
 * and the average stays exact. Device lock.
 */
final class Bucket {
    /**
     * A bucket holds at most 1 ms worth of its limit: what an idle group may send at once, and
     * what evens out the releaser's wake-up jitter, small enough that no 100 ms window overshoots.
     */
    static final long BURST_NS = 1_000_000L;
    /**
     * While requests wait, a bucket may hold this much more than its burst: the lateness of
     * releases it makes up for. Longer stalls (a paused process) are not made up, so that
     * no 100 ms window holds more than about 111% of the limit.
     */
    static final long CATCH_UP_NS = 10_000_000L;
    /** Once a bucket has run this long its start moves on by whole seconds (its numbers stay small, exactly). */
    static final long TRIM_AFTER_NS = 2 * ThrottleGroup.NS_PER_SEC;
    /** {@link #carryOver}'s old limit when there was none. */
    static final long NO_LIMIT = 0;
    private static final long NEVER = Long.MIN_VALUE;

    /** When the bucket started filling, full; {@link #NEVER} before its first request. */
    private long startNs = NEVER;
    /** Units dispatched since {@link #startNs}; negative is credit carried over from a limit change. */
    private long dispatched;

    /** Units {@code limit} allows in {@code ns}; Long.MAX_VALUE when that overflows (unlimited in practice). */
    static long allowed(long limit, long ns) {
        return MulDiv.floor(limit, ns, ThrottleGroup.NS_PER_SEC);
    }

    /**
     * How long until a request costing {@code cost} fits under {@code limit}; 0 when it fits
     * now. {@code idle}: nothing is queued in this direction, so a bucket holding more than its
     * burst is refilled to exactly that first (else it keeps at most {@link #CATCH_UP_NS} worth
     * more than the burst or the cost, whichever is larger).
     */
    long waitNs(long limit, long cost, long nowNs, boolean idle) {
        long elapsed = startNs == NEVER ? 0 : Math.max(0, nowNs - startNs);
        long allowedNow = allowed(limit, elapsed);
        long burst = burst(limit);
        if (startNs == NEVER || (idle && allowedNow > dispatched)) {
            startNs = nowNs;
            dispatched = 0;
            elapsed = 0;
            allowedNow = 0;
        } else if (!idle && allowedNow != Long.MAX_VALUE) {
            long most = Math.max(burst, cost) + allowed(limit, CATCH_UP_NS);
            if (burst + allowedNow - dispatched > most) dispatched = burst + allowedNow - most;
        }
        long target = dispatched + cost - burst;
        if (target <= allowedNow) return 0;
        return Math.max(1, MulDiv.ceil(target, ThrottleGroup.NS_PER_SEC, limit) - elapsed);
    }

    /** {@link #BURST_NS} worth of {@code limit}, rounded up, and at least one unit (one IO). */
    static long burst(long limit) {
        return Math.max(1, MulDiv.ceil(limit, BURST_NS, ThrottleGroup.NS_PER_SEC));
    }

    void charge(long cost) {
        dispatched += cost;
    }

    /**
     * After a dispatch: once the bucket has run for {@link #TRIM_AFTER_NS}, its start moves on
     * by whole seconds and what they allowed (exactly the limit per second) leaves
     * {@link #dispatched}, so nothing is rounded away.
     */
    void trim(long limit, long nowNs) {
        if (startNs == NEVER || nowNs - startNs < TRIM_AFTER_NS) return;
        long seconds = (nowNs - startNs) / ThrottleGroup.NS_PER_SEC - 1;
        long allowed = allowed(limit, seconds * ThrottleGroup.NS_PER_SEC);
        // A limit too large for that product has no debt worth keeping.
        dispatched = allowed == Long.MAX_VALUE ? Math.min(dispatched, 0) : dispatched - allowed;
        startNs += seconds * ThrottleGroup.NS_PER_SEC;
    }

    /**
     * A limit change: what {@code oldLimit} still allowed (or was owed) becomes credit (or
     * debt) of a bucket that starts now; with nothing {@code queued}, or no old limit (what
     * was counted then was never limited), the slate is wiped.
     */
    void carryOver(long oldLimit, long nowNs, boolean queued) {
        if (startNs == NEVER) return;
        if (!queued || oldLimit == NO_LIMIT) {
            dispatched = 0;
        } else {
            long allowed = allowed(oldLimit, Math.max(0, nowNs - startNs));
            if (allowed != Long.MAX_VALUE) dispatched -= allowed;
        }
        startNs = nowNs;
    }
}
