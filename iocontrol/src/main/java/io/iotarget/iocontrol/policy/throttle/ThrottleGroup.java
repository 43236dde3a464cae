package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.DeviceGroup;
import io.iotarget.iocontrol.policy.MulDiv;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoRequest;

import java.util.ArrayDeque;
import java.util.List;

/**
 * io.max state of one (group, device) pair: the kernel's {@code throtl_grp}. Limits, the
 * slice and what was dispatched in it, and the queue of requests waiting here (from this
 * group and from its children), per direction. Device lock, except {@link #hasRules} which
 * the IO path reads without it.
 */
final class ThrottleGroup {
    static final int READ = 0;
    static final int WRITE = 1;

    /** Budgets grow in slices of 100 ms (DFL_THROTL_SLICE = HZ/10). */
    static final long SLICE_NS = 100_000_000L;
    static final long NS_PER_SEC = 1_000_000_000L;
    /** "max" for bps limits (U64_MAX). */
    static final long BPS_MAX = -1L;
    /** "max" for iops limits (UINT_MAX); larger values are clamped to it. */
    static final long IOPS_MAX = 0xffff_ffffL;
    /** Per pass, a group releases at most this many reads and writes (THROTL_GRP_QUANTUM = 8, 75% reads). */
    static final int QUANTUM_READS = 6;
    static final int QUANTUM_WRITES = 2;

    final DeviceGroup deviceGroup;
    /** The parent group's state on this device; null for the root group, which is never limited. */
    final ThrottleGroup parent;

    final long[] bps = {BPS_MAX, BPS_MAX};
    final long[] iops = {IOPS_MAX, IOPS_MAX};
    /** A limit applies here or above, per direction: the IO path's lock-free test. */
    private volatile int hasRules;

    final long[] bytesDispatched = new long[2];
    final long[] iosDispatched = new long[2];
    final long[] sliceStartNs = new long[2];
    final long[] sliceEndNs = new long[2];

    /** Per direction, qnodes with waiting requests, popped round-robin. */
    final List<ArrayDeque<Qnode>> queued = List.of(new ArrayDeque<>(), new ArrayDeque<>());
    final int[] queuedCount = new int[2];
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

    ThrottleGroup(DeviceGroup deviceGroup, ThrottleGroup parent) {
        this.deviceGroup = deviceGroup;
        this.parent = parent;
        // No slice yet: the first check finds it used and starts one "now".
        java.util.Arrays.fill(sliceStartNs, Long.MIN_VALUE);
        java.util.Arrays.fill(sliceEndNs, Long.MIN_VALUE);
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
            boolean own = !isRoot() && (bps[dir] != BPS_MAX || iops[dir] != IOPS_MAX);
            if (own || (parent != null && parent.hasRules(dir))) rules |= 1 << dir;
        }
        hasRules = rules;
    }

    boolean limited() {
        return bps[READ] != BPS_MAX || bps[WRITE] != BPS_MAX || iops[READ] != IOPS_MAX || iops[WRITE] != IOPS_MAX;
    }

    int queuedTotal() {
        return queuedCount[READ] + queuedCount[WRITE];
    }

    // ------------------------------------------------------------ budgets

    /** Bytes {@code bps} allows in {@code ns}; Long.MAX_VALUE when that overflows (unlimited in practice). */
    static long bytesAllowed(long bps, long ns) {
        return MulDiv.floor(bps, ns, NS_PER_SEC);
    }

    /** IOs {@code iops} allows in {@code ns}, capped at UINT_MAX. */
    static long iosAllowed(long iops, long ns) {
        return Math.min(MulDiv.floor(iops, ns, NS_PER_SEC), IOPS_MAX);
    }

    static long roundUp(long value, long step) {
        return Math.ceilDiv(value, step) * step;
    }

    static long roundDown(long value, long step) {
        return Math.floorDiv(value, step) * step;
    }

    static long throttleBytes(IoRequest io) {
        return io.op().throttleBytes(io.length());
    }

    // ------------------------------------------------------------ slices

    boolean sliceUsed(int dir, long nowNs) {
        return nowNs < sliceStartNs[dir] || nowNs > sliceEndNs[dir];
    }

    void startNewSlice(int dir, long nowNs, boolean clearUsage) {
        if (clearUsage) {
            bytesDispatched[dir] = 0;
            iosDispatched[dir] = 0;
        }
        sliceStartNs[dir] = nowNs;
        sliceEndNs[dir] = nowNs + SLICE_NS;
    }

    /** A parent whose slice lapsed takes over the child's slice start: the child's wait was the parent's idle time. */
    void startNewSliceWithCredit(int dir, long startNs, long nowNs) {
        bytesDispatched[dir] = 0;
        iosDispatched[dir] = 0;
        if (startNs > sliceStartNs[dir]) sliceStartNs[dir] = startNs;
        sliceEndNs[dir] = nowNs + SLICE_NS;
    }

    void extendSlice(int dir, long endNs) {
        sliceEndNs[dir] = roundUp(endNs, SLICE_NS);
    }

    /**
     * Forgets budget older than one slice, so that a limit lowered later does not charge old
     * IO at the new rate; usage never goes below 0 here.
     */
    void trimSlice(int dir, long nowNs) {
        if (sliceUsed(dir, nowNs)) return;
        extendSlice(dir, nowNs + SLICE_NS);
        long elapsed = roundDown(nowNs - sliceStartNs[dir], SLICE_NS);
        if (elapsed < 2 * SLICE_NS) return;
        elapsed -= SLICE_NS;
        long bytesTrim = bps[dir] == BPS_MAX ? 0 : bytesAllowed(bps[dir], elapsed);
        long iosTrim = iops[dir] == IOPS_MAX ? 0 : iosAllowed(iops[dir], elapsed);
        if (bytesTrim <= 0 && iosTrim <= 0) return;
        if (bytesTrim > 0) bytesDispatched[dir] = bytesDispatched[dir] < bytesTrim ? 0 : bytesDispatched[dir] - bytesTrim;
        if (iosTrim > 0) iosDispatched[dir] = iosDispatched[dir] < iosTrim ? 0 : iosDispatched[dir] - iosTrim;
        sliceStartNs[dir] += elapsed;
    }

    // ------------------------------------------------------------ admission

    /**
     * How long until {@code io} (this direction's head, or a newcomer to an empty queue) fits
     * here; 0 when it fits now. Renews or extends the slice as a side effect (tg_may_dispatch).
     */
    long dispatchWaitNs(IoRequest io, int dir, long nowNs) {
        if (canceling || (bps[dir] == BPS_MAX && iops[dir] == IOPS_MAX)) return 0;
        if (sliceUsed(dir, nowNs) && queuedCount[dir] == 0) {
            startNewSlice(dir, nowNs, true);
        } else if (sliceEndNs[dir] < nowNs + SLICE_NS) {
            extendSlice(dir, nowNs + SLICE_NS);
        }
        long bpsWait = bpsWaitNs(io, dir, nowNs);
        long iopsWait = iopsWaitNs(dir, nowNs);
        if (bpsWait == 0 && iopsWait == 0) return 0;
        long wait = Math.max(bpsWait, iopsWait);
        if (sliceEndNs[dir] < nowNs + wait) extendSlice(dir, nowNs + wait);
        return wait;
    }

    private long bpsWaitNs(IoRequest io, int dir, long nowNs) {
        long limit = bps[dir];
        if (limit == BPS_MAX) return 0;
        long elapsed = nowNs - sliceStartNs[dir];
        long rounded = roundUp(elapsed == 0 ? SLICE_NS : elapsed, SLICE_NS);
        long allowed = bytesAllowed(limit, rounded);
        long size = throttleBytes(io);
        if (allowed == Long.MAX_VALUE || bytesDispatched[dir] + size <= allowed) return 0;
        long extra = bytesDispatched[dir] + size - allowed;
        long wait = Math.max(1, MulDiv.floor(extra, NS_PER_SEC, limit));
        return wait + (rounded - elapsed);
    }

    private long iopsWaitNs(int dir, long nowNs) {
        long limit = iops[dir];
        if (limit == IOPS_MAX) return 0;
        long elapsed = nowNs - sliceStartNs[dir];
        long rounded = roundUp(elapsed + 1, SLICE_NS);
        long allowed = iosAllowed(limit, rounded);
        if (allowed > 0 && iosDispatched[dir] + 1 <= allowed) return 0;
        return Math.max(rounded - elapsed, NS_PER_SEC / limit + 1);
    }

    void charge(IoRequest io, int dir) {
        bytesDispatched[dir] += throttleBytes(io);
        iosDispatched[dir]++;
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

    /** Pops the head of the first qnode and rotates that qnode to the tail. */
    IoRequest pop(int dir) {
        Qnode first = queued.get(dir).pollFirst();
        IoRequest io = first.requests.pollFirst();
        if (first.requests.isEmpty()) {
            first.linked = false;
        } else {
            queued.get(dir).addLast(first);
        }
        queuedCount[dir]--;
        return io;
    }

    /**
     * Limit change: what the old limit still allowed (or was owed) since the slice started
     * becomes credit (or debt) under the new one; with nothing queued the slate is wiped.
     */
    void carryOver(long nowNs) {
        for (int dir = READ; dir <= WRITE; dir++) {
            if (queuedCount[dir] == 0) {
                bytesDispatched[dir] = 0;
                iosDispatched[dir] = 0;
                continue;
            }
            long elapsed = nowNs - sliceStartNs[dir];
            if (bps[dir] != BPS_MAX) {
                long allowed = bytesAllowed(bps[dir], elapsed);
                if (allowed != Long.MAX_VALUE) bytesDispatched[dir] = -(allowed - bytesDispatched[dir]);
            }
            if (iops[dir] != IOPS_MAX) {
                long allowed = iosAllowed(iops[dir], elapsed);
                iosDispatched[dir] = -(allowed - iosDispatched[dir]);
            }
        }
    }

    @Override
    public String toString() {
        return "tg " + deviceGroup;
    }
}
