package io.iotarget.cluster;

import java.util.concurrent.TimeUnit;

/**
 * Whether this node may still execute IO that the cluster's state governs (reservations on a
 * shared namespace): true only while its etcd lease cannot yet have expired in the store.
 *
 * <h2>The deadline</h2>
 * {@link Membership} sends a keep-alive at {@code sentNs}; when etcd answers with the lease's TTL,
 * the server has refreshed the lease at some moment after {@code sentNs}, so the store cannot
 * expire it before {@code sentNs + TTL} by the server's clock. This node stops
 * {@link #marginNs} before that by its own monotonic clock:
 * <pre>
 *   validUntilNs = sentNs + ttlNs - marginNs,   marginNs = ttlNs * CLOCK_RATE_PPM / 1e6 + SLACK_NS
 * </pre>
 * The margin covers the two clocks running at different rates (2 % of the TTL, far above what
 * NTP-disciplined or even free-running quartz clocks drift) and the few milliseconds between a
 * check and the IO it admits ({@link #SLACK_NS}). A deadline is only ever moved forward by a later
 * keep-alive of the same lease; a new lease starts a new one ({@link #renew}).
 *
 * <h2>The IO path</h2>
 * {@link #holds(long)} is one volatile read and one compare: no lock, no allocation, any thread,
 * for every command. There is no timer flag: the answer turns false by itself when the deadline
 * passes, even if every other thread of the process is stalled. What remains is a pause of the
 * checking thread between the check and the backend's submission (GC, SIGSTOP, a VM freeze):
 * only fencing at the storage closes it ({@link StorageFence}: Ceph's blocklist, on RBD backends).
 *
 * <p>Written by the membership thread ({@link #extend}, {@link #renew}, {@link #fence}) and by
 * any thread that gives the lease up ({@link #giveUp}, through {@link Membership#relinquish}):
 * the writers hold the fence's monitor, so a keep-alive's late answer cannot move a deadline
 * forward after the lease was given up; read by any thread without it.
 */
public final class Fence {
    /** Clock-rate error allowed between this node and etcd's leader, in parts per million of the TTL: 2 %. */
    public static final long CLOCK_RATE_PPM = 20_000;
    /** Added to the rate margin: scheduling between a check and its IO, in ns (5 ms). */
    public static final long SLACK_NS = TimeUnit.MILLISECONDS.toNanos(5);

    /**
     * The monotonic time (System.nanoTime's scale) after which this node is fenced. Written with
     * one volatile write by the membership thread; read with one volatile read by any thread.
     * A fenced node has a value in the past.
     */
    private volatile long validUntilNs;
    /** The lease the deadline belongs to; 0 while fenced. Same writer. */
    private volatile long lease;

    /** A new fence is fenced: nothing holds until the first lease is granted. */
    public Fence(long nowNs) {
        this.validUntilNs = nowNs - 1;
    }

    /** The margin subtracted from a lease of {@code ttlNs}. */
    public static long marginNs(long ttlNs) {
        return ttlNs / 1_000_000 * CLOCK_RATE_PPM + SLACK_NS;
    }

    /** The deadline a keep-alive (or grant) sent at {@code sentNs} that the server answered with {@code ttlNs} gives. */
    public static long deadlineNs(long sentNs, long ttlNs) {
        return sentNs + ttlNs - marginNs(ttlNs);
    }

    /** True while the node may execute governed IO at {@code nowNs} (System.nanoTime's scale). Any thread; one volatile read. */
    public boolean holds(long nowNs) {
        return nowNs - validUntilNs < 0;
    }

    /** {@link #holds(long)} now. */
    public boolean holds() {
        return holds(System.nanoTime());
    }

    /** The current deadline (in the past while fenced). Any thread. */
    public long validUntilNs() {
        return validUntilNs;
    }

    /** The lease the node holds, 0 while it has none (fenced). Any thread. */
    public long lease() {
        return lease;
    }

    /**
     * A keep-alive of {@code lease} sent at {@code sentNs} succeeded with {@code ttlNs}, its answer
     * read at {@code nowNs}: moves the deadline forward (never back: answers may arrive out of
     * order) and returns true. Returns false, changing nothing, when the deadline had already
     * passed at {@code nowNs} (the node was fenced meanwhile and must re-join with a new lease,
     * whatever this late answer says) or {@code lease} is not the current one.
     */
    synchronized boolean extend(long lease, long sentNs, long ttlNs, long nowNs) {
        if (lease != this.lease || lease == 0 || !holds(nowNs)) return false;
        long next = deadlineNs(sentNs, ttlNs);
        if (next - validUntilNs > 0) validUntilNs = next;
        return true;
    }

    /** A new lease, granted by a request sent at {@code sentNs} with {@code ttlNs}: the deadline starts from it. */
    synchronized void renew(long lease, long sentNs, long ttlNs) {
        this.validUntilNs = sentNs - 1;           // fenced until the lease is published with its deadline
        this.lease = lease;
        this.validUntilNs = deadlineNs(sentNs, ttlNs);
    }

    /** Fenced from {@code nowNs} on: the lease is lost or given up. */
    synchronized void fence(long nowNs) {
        this.validUntilNs = nowNs - 1;
        this.lease = 0;
    }

    /** Fenced from {@code nowNs} on, if a lease is held; returns the lease given up, 0 when none was. Any thread. */
    synchronized long giveUp(long nowNs) {
        long held = lease;
        if (held != 0) fence(nowNs);
        return held;
    }
}
