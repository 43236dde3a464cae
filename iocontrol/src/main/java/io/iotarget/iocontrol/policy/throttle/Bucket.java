package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.policy.MulDiv;

/**
 * One limit's token bucket (sections 1 and 10 of the package documentation), in the limit's
 * units: bytes for bps, IOs for iops. It holds {@code burst + allowed(now − start) − dispatched}
 * units, {@code burst} being {@link #burst} ({@link #BURST_NS} worth), and a request fits once it
 * holds the request's cost (bytes, or 1 IO). A bucket starts with its burst plus its
 * {@link #credit} (io.max.burst's (R − L) × len, 0 without a burst) and may fill beyond the
 * burst or the request's cost by {@link #CATCH_UP_NS} worth, or by the credit when that is more:
 * a release the releaser made late, or a client, backend or server thread that fell behind for a
 * moment, is made up by letting the next requests out that much sooner, so the average stays
 * exact; longer gaps are idleness and are not made up, except into the credit. The catch-up is
 * held within the credit, not on top of it, so that a full credit is exactly io.max.burst's
 * (R − L) × len above L, after idle time as for a new group. Device lock.
 */
final class Bucket {
    /**
     * A bucket holds at most 1 ms worth of its limit: what an idle group may send at once, and
     * what evens out the releaser's wake-up jitter, small enough that no 100 ms window overshoots.
     */
    static final long BURST_NS = 1_000_000L;
    /**
     * A bucket may hold this much more than its burst: the gap of a client (or a request that
     * arrives late) it makes up for. Longer gaps are idleness and are not made up, so that a
     * group that comes back from idle sends no more than about 111% of its limit in 100 ms.
     */
    static final long CATCH_UP_NS = 10_000_000L;
    /**
     * While requests wait in the bucket, it may hold this much more than its burst: lateness of
     * the server (its releaser or threads without a core on a loaded machine) is not the
     * group's idleness, and a group held back all along gets its whole average once the server
     * runs again. The kernel's throttle slice (throtl_slice, 100 ms) bounds it the same way: a
     * 100 ms window after a server stall may hold up to twice the limit, any 200 ms window no
     * more than it plus the burst.
     */
    static final long BACKLOG_CATCH_UP_NS = 100_000_000L;
    /** Once a bucket has run this long its start moves on by whole seconds (its numbers stay small, exactly). */
    static final long TRIM_AFTER_NS = 2 * ThrottleGroup.NS_PER_SEC;
    /** {@link #limit} when the bucket limits nothing. */
    static final long NO_LIMIT = 0;
    private static final long NEVER = Long.MIN_VALUE;

    /** The rate the bucket enforces, units per second, or {@link #NO_LIMIT}. */
    private long limit = NO_LIMIT;
    /** Units it may hold beyond its burst (its catch-up included): io.max.burst's credit, 0 without one. */
    private long credit;
    /** When the bucket started filling, full; {@link #NEVER} before its first request. */
    private long startNs = NEVER;
    /** Units dispatched since {@link #startNs}; negative is credit (carried over, or io.max.burst's). */
    private long dispatched;

    /** Units {@code limit} allows in {@code ns}; Long.MAX_VALUE when that overflows (unlimited in practice). */
    static long allowed(long limit, long ns) {
        return MulDiv.floor(limit, ns, ThrottleGroup.NS_PER_SEC);
    }

    boolean limited() {
        return limit != NO_LIMIT;
    }

    /**
     * How long until a request costing {@code cost} fits; 0 when it fits now. {@code backlogged}:
     * the request waits in the group already (its queue's head), so the time since the last call
     * was the server's, made up to {@link #BACKLOG_CATCH_UP_NS}; a newcomer to an empty queue
     * gets {@link #CATCH_UP_NS}. Only while {@link #limited}.
     */
    long waitNs(long cost, long nowNs, boolean backlogged) {
        long burst = burst(limit);
        if (startNs == NEVER) {
            startNs = nowNs;
            dispatched = -credit;
        }
        long elapsed = Math.max(0, nowNs - startNs);
        long allowedNow = allowed(limit, elapsed);
        if (allowedNow != Long.MAX_VALUE) {
            long most = Math.max(burst, cost) + Math.max(allowed(limit, backlogged ? BACKLOG_CATCH_UP_NS : CATCH_UP_NS), credit);
            if (burst + allowedNow - dispatched > most) dispatched = burst + allowedNow - most;
        }
        long target = dispatched + cost - burst;
        if (target <= allowedNow) return 0;
        return Math.max(1, MulDiv.ceil(target, ThrottleGroup.NS_PER_SEC, limit) - elapsed);
    }

    /**
     * The credit left now, 0 to {@link #credit}: what the bucket holds, burst included, up to
     * the credit. Full for a bucket that never ran; it refills at the limit while the group
     * uses less. Only while {@link #limited}.
     */
    long creditLeft(long nowNs) {
        if (startNs == NEVER) return credit;
        long allowedNow = allowed(limit, Math.max(0, nowNs - startNs));
        if (allowedNow == Long.MAX_VALUE) return credit;
        return Math.clamp(burst(limit) + allowedNow - dispatched, 0, credit);
    }

    long credit() {
        return credit;
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
     * {@link #dispatched}, so nothing is rounded away. Only while {@link #limited}.
     */
    void trim(long nowNs) {
        if (startNs == NEVER || nowNs - startNs < TRIM_AFTER_NS) return;
        long seconds = (nowNs - startNs) / ThrottleGroup.NS_PER_SEC - 1;
        long allowed = allowed(limit, seconds * ThrottleGroup.NS_PER_SEC);
        // A limit too large for that product has no debt worth keeping.
        dispatched = allowed == Long.MAX_VALUE ? Math.min(dispatched, 0) : dispatched - allowed;
        startNs += seconds * ThrottleGroup.NS_PER_SEC;
    }

    /**
     * A limit change (section 5): the bucket restarts now under {@code newLimit} (or
     * {@link #NO_LIMIT}) and {@code newCredit}. While requests are {@code queued}, what the old
     * limit still allowed beyond the burst (or was owed) carries over as credit (or debt). With
     * nothing queued, debt is wiped and the credit left carries, up to the new credit: the
     * bucket holds that, or its burst if more. A bucket that limited nothing, or whose credit
     * comes into effect now, starts full, as a new group's does. Nothing changes when neither
     * changes.
     */
    void set(long newLimit, long newCredit, long nowNs, boolean queued) {
        if (newLimit == limit && newCredit == credit) return;
        if (startNs != NEVER) {
            if (limit == NO_LIMIT || (credit == 0 && newCredit > 0)) {
                dispatched = -newCredit;
            } else {
                long allowed = allowed(limit, Math.max(0, nowNs - startNs));
                if (queued) {
                    if (allowed != Long.MAX_VALUE) dispatched -= allowed;
                } else {
                    long left = allowed == Long.MAX_VALUE ? credit : Math.clamp(burst(limit) + allowed - dispatched, 0, credit);
                    long burst = burst(newLimit);
                    dispatched = burst - Math.max(burst, Math.min(left, newCredit));
                }
            }
            startNs = nowNs;
        }
        limit = newLimit;
        credit = newCredit;
    }
}
