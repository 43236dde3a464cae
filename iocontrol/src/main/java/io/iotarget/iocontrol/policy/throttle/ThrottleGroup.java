package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoRequest;

import java.util.ArrayDeque;
import java.util.List;

/**
 * io.max state of one (group, device) pair: the kernel's {@code throtl_grp}. Limits, the
 * token buckets (when they started and what was dispatched since), and the queue of requests
 * waiting here (from this group and from its children), per direction. Device lock, except
 * {@link #hasRules} which the IO path reads without it.
 */
final class ThrottleGroup {
    static final int READ = 0;
    static final int WRITE = 1;

    static final long NS_PER_SEC = 1_000_000_000L;
    /** "max" for bps limits (U64_MAX). */
    static final long BPS_MAX = -1L;
    /** "max" for iops limits (UINT_MAX); larger values are clamped to it. */
    static final long IOPS_MAX = 0xffff_ffffL;
    /** Per pass, a group releases at most this many reads and writes (THROTL_GRP_QUANTUM = 8, 75% reads). */
    static final int QUANTUM_READS = 6;
    static final int QUANTUM_WRITES = 2;
    /** io.max.burst's len when a line gives none: one second, as QEMU's {@code *-max-length}. */
    static final long DEFAULT_BURST_LEN_SEC = 1;
    /** Credit is capped here (2^52 units: 4 PiB, or 4.5e15 IOs), so the buckets' arithmetic never overflows. */
    static final long MAX_CREDIT = 1L << 52;

    final PolicyDeviceGroup deviceGroup;
    /** The parent group's state on this device; null for the root group, which is never limited. */
    final ThrottleGroup parent;

    /** io.max as configured (what it reads back). */
    final long[] bps = {BPS_MAX, BPS_MAX};
    final long[] iops = {IOPS_MAX, IOPS_MAX};
    /** io.max.global as configured: the limit all nodes hold together; never enforced as such here. */
    final long[] globalBps = {BPS_MAX, BPS_MAX};
    final long[] globalIops = {IOPS_MAX, IOPS_MAX};
    /** This node's share of io.max.global (section 8 of the package documentation); max without one. */
    final long[] shareBps = {BPS_MAX, BPS_MAX};
    final long[] shareIops = {IOPS_MAX, IOPS_MAX};
    /** io.max.per_host: the io.max a child made here for a host starts with (section 9); never enforced here. */
    final long[] perHostBps = {BPS_MAX, BPS_MAX};
    final long[] perHostIops = {IOPS_MAX, IOPS_MAX};
    /** What the buckets enforce: the smaller of io.max and the share, per direction. */
    final long[] bpsEffective = {BPS_MAX, BPS_MAX};
    final long[] iopsEffective = {IOPS_MAX, IOPS_MAX};
    /** io.max.burst as configured (what it reads back): the rates R, and how long a full credit lasts at R. */
    final long[] burstBps = {BPS_MAX, BPS_MAX};
    final long[] burstIops = {IOPS_MAX, IOPS_MAX};
    long burstLenSec = DEFAULT_BURST_LEN_SEC;
    /** A limit applies here or above, per direction: the IO path's lock-free test. */
    private volatile int hasRules;

    /** Per direction, the token buckets of the bps and the iops limit, with io.max.burst's credit. */
    final Bucket[] byteBuckets = {new Bucket(), new Bucket()};
    final Bucket[] ioBuckets = {new Bucket(), new Bucket()};
    /** Per direction, the buckets that hold a burst to its rate R while credit lasts (section 10); unlimited without one. */
    final Bucket[] peakByteBuckets = {new Bucket(), new Bucket()};
    final Bucket[] peakIoBuckets = {new Bucket(), new Bucket()};

    /** Per direction, qnodes with waiting requests, popped round-robin. */
    final List<ArrayDeque<Qnode>> queued = List.of(new ArrayDeque<>(), new ArrayDeque<>());
    final int[] queuedCount = new int[2];
    /** When each direction's queue last ran empty by a release; {@link Long#MIN_VALUE} before. */
    private final long[] drainedNs = {Long.MIN_VALUE, Long.MIN_VALUE};
    /** Requests first queued at this group. */
    final Qnode[] qnodeOnSelf = {new Qnode(), new Qnode()};
    /** This group's requests waiting in the parent's queue. */
    final Qnode[] qnodeOnParent = {new Qnode(), new Qnode()};

    /** When the head request of some direction fits; meaningful while {@link #pending}. */
    long dispatchTimeNs;
    /** In the device's set of groups with waiting requests. */
    boolean pending;
    /** Tie-breaker in that set. */
    long pendingSeq;
    /** The group was removed: limits no longer apply, its queue drains at once. */
    boolean canceling;

    ThrottleGroup(PolicyDeviceGroup deviceGroup, ThrottleGroup parent) {
        this.deviceGroup = deviceGroup;
        this.parent = parent;
        updateHasRules();
    }

    boolean isRoot() {
        return parent == null;
    }

    boolean hasRules(int dir) {
        return (hasRules & (1 << dir)) != 0;
    }

    /** tg_update_has_rules: a limit here or in any ancestor. The parent's value must be current. */
    void updateHasRules() {
        int rules = 0;
        for (int dir = READ; dir <= WRITE; dir++) {
            boolean own = !isRoot() && (bpsEffective[dir] != BPS_MAX || iopsEffective[dir] != IOPS_MAX);
            if (own || (parent != null && parent.hasRules(dir))) rules |= 1 << dir;
        }
        hasRules = rules;
    }

    /** io.max has a limit here (the pair appears in io.max). */
    boolean limited() {
        return bps[READ] != BPS_MAX || bps[WRITE] != BPS_MAX || iops[READ] != IOPS_MAX || iops[WRITE] != IOPS_MAX;
    }

    /** io.max.global has a limit here (the pair appears in io.max.global). */
    boolean globallyLimited() {
        return globalBps[READ] != BPS_MAX || globalBps[WRITE] != BPS_MAX || globalIops[READ] != IOPS_MAX || globalIops[WRITE] != IOPS_MAX;
    }

    /** io.max.per_host has a limit here (the pair appears in io.max.per_host). */
    boolean perHostLimited() {
        return perHostBps[READ] != BPS_MAX || perHostBps[WRITE] != BPS_MAX || perHostIops[READ] != IOPS_MAX || perHostIops[WRITE] != IOPS_MAX;
    }

    /** io.max.burst has a rate here (the pair appears in io.max.burst). */
    boolean bursting() {
        return burstBps[READ] != BPS_MAX || burstBps[WRITE] != BPS_MAX || burstIops[READ] != IOPS_MAX || burstIops[WRITE] != IOPS_MAX;
    }

    /**
     * After io.max, io.max.burst or the share changed: recomputes the enforced limits and
     * restarts the buckets whose limit or credit changed, carrying over what they held
     * (section 5 of the package documentation).
     */
    void updateEffective(long nowNs) {
        for (int dir = READ; dir <= WRITE; dir++) {
            bpsEffective[dir] = minUnsigned(bps[dir], shareBps[dir]);
            iopsEffective[dir] = Math.min(iops[dir], shareIops[dir]);
            boolean queuedHere = queuedCount[dir] > 0;
            long byteCredit = credit(bps[dir], burstBps[dir], BPS_MAX);
            long ioCredit = credit(iops[dir], burstIops[dir], IOPS_MAX);
            byteBuckets[dir].set(rate(bpsEffective[dir], BPS_MAX), byteCredit, nowNs, queuedHere);
            ioBuckets[dir].set(rate(iopsEffective[dir], IOPS_MAX), ioCredit, nowNs, queuedHere);
            peakByteBuckets[dir].set(byteCredit == 0 ? Bucket.NO_LIMIT : rate(minUnsigned(burstBps[dir], shareBps[dir]), BPS_MAX), 0, nowNs, queuedHere);
            peakIoBuckets[dir].set(ioCredit == 0 ? Bucket.NO_LIMIT : Math.min(burstIops[dir], shareIops[dir]), 0, nowNs, queuedHere);
        }
    }

    private static long minUnsigned(long a, long b) {
        return Long.compareUnsigned(a, b) <= 0 ? a : b;
    }

    /** A bucket's rate for a limit ({@code max} is none); a bps limit of 2^63 or more is read as unsigned by the bucket's MulDiv: unlimited in practice. */
    private static long rate(long limit, long max) {
        return limit == max ? Bucket.NO_LIMIT : limit;
    }

    /**
     * io.max.burst's credit for one limit: (R − L) × len units when io.max limits it to L and
     * the burst rate R is above L; 0 (no burst in effect) otherwise.
     */
    long credit(long limit, long burst, long max) {
        if (limit == max || burst == max || Long.compareUnsigned(burst, limit) <= 0) return 0;
        long above = burst - limit;
        return Long.compareUnsigned(above, MAX_CREDIT / burstLenSec) > 0 ? MAX_CREDIT : above * burstLenSec;
    }

    int queuedTotal() {
        return queuedCount[READ] + queuedCount[WRITE];
    }

    // ------------------------------------------------------------ buckets

    static long throttleBytes(IoRequest io) {
        return io.op().throttleBytes(io.length());
    }

    /**
     * How long until {@code io} (this direction's head, or a newcomer to an empty queue) fits
     * here; 0 when it fits now.
     */
    long dispatchWaitNs(IoRequest io, int dir, long nowNs) {
        if (canceling) return 0;
        long bytes = throttleBytes(io);
        // Requests wait here, or waited until just now (a queue drained by a release refills
        // from completions at once): what the server owed them is made up.
        boolean backlogged = queuedCount[dir] > 0 || drainedNs[dir] != Long.MIN_VALUE && nowNs - drainedNs[dir] <= Bucket.CATCH_UP_NS;
        return Math.max(Math.max(waitNs(byteBuckets[dir], bytes, nowNs, backlogged), waitNs(ioBuckets[dir], 1, nowNs, backlogged)),
                        Math.max(waitNs(peakByteBuckets[dir], bytes, nowNs, backlogged), waitNs(peakIoBuckets[dir], 1, nowNs, backlogged)));
    }

    private static long waitNs(Bucket bucket, long cost, long nowNs, boolean backlogged) {
        return bucket.limited() ? bucket.waitNs(cost, nowNs, backlogged) : 0;
    }

    void charge(IoRequest io, int dir) {
        long bytes = throttleBytes(io);
        byteBuckets[dir].charge(bytes);
        ioBuckets[dir].charge(1);
        peakByteBuckets[dir].charge(bytes);
        peakIoBuckets[dir].charge(1);
    }

    /** After a dispatch: keeps the buckets' numbers small. */
    void trim(int dir, long nowNs) {
        trim(byteBuckets[dir], nowNs);
        trim(ioBuckets[dir], nowNs);
        trim(peakByteBuckets[dir], nowNs);
        trim(peakIoBuckets[dir], nowNs);
    }

    private static void trim(Bucket bucket, long nowNs) {
        if (bucket.limited()) bucket.trim(nowNs);
    }

    /** META requests are never delayed (bio_issue_as_root_blkg). */
    static boolean neverWaits(IoRequest io) {
        return io.hasFlag(IoFlags.META);
    }

    // ------------------------------------------------------------ queues

    /** Queues a request here through {@code qnode}; true when this direction was empty before. */
    boolean add(IoRequest io, Qnode qnode, int dir) {
        boolean wasEmpty = queuedCount[dir] == 0;
        qnode.requests.addLast(io);
        if (!qnode.linked) {
            qnode.linked = true;
            queued.get(dir).addLast(qnode);
        }
        queuedCount[dir]++;
        return wasEmpty;
    }

    IoRequest peek(int dir) {
        Qnode first = queued.get(dir).peekFirst();
        return first == null ? null : first.requests.peekFirst();
    }

    /** Takes {@code io} out of this group's queue if it waits here through {@code qnode}; true when it did. */
    boolean remove(IoRequest io, Qnode qnode, int dir) {
        if (!qnode.requests.removeIf(r -> r == io)) return false;
        if (qnode.requests.isEmpty() && qnode.linked) {
            qnode.linked = false;
            queued.get(dir).removeIf(q -> q == qnode);
        }
        queuedCount[dir]--;
        return true;
    }

    /** Pops the head of the first qnode and rotates that qnode to the tail; a release at {@code nowNs}. */
    IoRequest pop(int dir, long nowNs) {
        Qnode first = queued.get(dir).pollFirst();
        IoRequest io = first.requests.pollFirst();
        if (first.requests.isEmpty()) {
            first.linked = false;
        } else {
            queued.get(dir).addLast(first);
        }
        if (--queuedCount[dir] == 0) drainedNs[dir] = nowNs;
        return io;
    }

    @Override
    public String toString() {
        return "tg " + deviceGroup;
    }
}
