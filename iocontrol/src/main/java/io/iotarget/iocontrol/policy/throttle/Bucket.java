package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.policy.MulDiv;

/**
 * One limit's token bucket (section 1 of the package documentation), in the limit's units:
 * bytes for bps, IOs for iops. It holds {@code burst + allowed(now − start) − dispatched}
 * units, {@code burst} being {@link #burst} ({@link #BURST_NS} worth), and a request fits once it
 * holds the request's cost (bytes, or 1 IO). A bucket starts with its burst and may fill up to
 * {@link #CATCH_UP_NS} worth more than the burst or the request's cost: a release the releaser
 * made late, or a client, backend or server thread that fell behind for a moment, is made up
 * by letting the next requests out that much sooner, so the average stays exact; longer gaps
 * are idleness and are not made up. Device lock.
 */
final class Bucket {
    /**
     * A bucket holds at most 1 ms worth of its limit: what an idle group may send at once, and
     * what evens out the releaser's wake-up jitter, small enough that no 100 ms window overshoots.
     */
    static final long BURST_NS = 1_000_000L;
    /**
     * A bucket may hold this much more than its burst: the lateness it makes up for. Longer
     * gaps are not made up, so that no 100 ms window holds more than about 111% of the limit.
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

    /** How long until a request costing {@code cost} fits under {@code limit}; 0 when it fits now. */
    long waitNs(long limit, long cost, long nowNs) {
        long burst = burst(limit);
        if (startNs == NEVER) {
            startNs = nowNs;
            dispatched = 0;
        }
        long elapsed = Math.max(0, nowNs - startNs);
        long allowedNow = allowed(limit, elapsed);
        if (allowedNow != Long.MAX_VALUE) {
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
