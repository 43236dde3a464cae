package io.iotarget.backend.nullblk;

import io.iotarget.backend.Completion;
import io.iotarget.backend.ForwardingBackend;
import io.iotarget.backend.IoExecutor;
import io.iotarget.backend.RequestRunner;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ViewSink;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.locks.LockSupport;

/**
 * A null backend with null_blk's timing knobs: a device whose IOPS and bandwidth are known.
 * <ul>
 *   <li>{@code completion_nsec}: every request completes that long after the device starts it
 *       (null_blk's {@code irqmode=2}, a timer per request). With the dispatch layer's
 *       {@code queue_depth} (null_blk's {@code hw_queue_depth}) requests at once, the device
 *       gives {@code queue_depth / completion_nsec} IOPS: 10 × 1 ms = 10,000 IOPS.
 *   <li>{@code mbps}: the bytes of reads and writes pass at most this many MiB/s (null_blk's
 *       unit), a token bucket that holds 20 ms worth (null_blk refills its budget 50 times a
 *       second). While the bucket is empty the device starts nothing, flushes included, as
 *       null_blk stops its queues; a request starts once its bytes have passed.
 * </ul>
 * A request's completion time is therefore {@code max(start, end of its bytes) + completion_nsec}
 * ({@link #deadlineNs}), computed when it arrives; the times of successive requests never
 * decrease, so one {@link CompletionTimer} thread reports them in order and no thread waits per
 * request. The data itself is the {@link NullBackend}'s: zeroes, no copy.
 *
 * <p>Its start is when it arrives — or, when it takes over a slot that freed up less than
 * {@code completion_nsec} before, when that slot freed up: the timer thread wakes late on a
 * busy machine, and so does the client that sends the next request, and a device that started
 * each request only on arrival would lose that lateness from every slot's every turn (25% of its
 * IOPS at 1 ms per request on a 2-core machine under load 8). Each slot therefore completes
 * exactly one request per {@code completion_nsec} while it is kept busy, and the requests'
 * average latency is {@code completion_nsec}; a request whose predecessor was reported late is
 * that much quicker. A slot idle for longer than {@code completion_nsec} gets nothing back.
 *
 * <p>Any thread. {@link #blocking()} is true: the dispatch layer hands requests to
 * {@link #start}, which returns at once. The synchronous calls wait for their completion time
 * on the calling thread.
 *
 * <p>Watch: a slot recovers up to {@code completion_nsec} of lateness; a machine so loaded that
 * the timer or the clients are later than that still loses IOPS (bench/results/calibrate.md).
 */
public final class TimedNullBackend extends ForwardingBackend {
    /** null_blk's TICKS_PER_SEC is 50: its bandwidth budget is a 20 ms tick's worth, the burst an idle device takes at once. */
    static final long BURST_NS = 20_000_000L;
    /** Slot free times remembered: far more than any queue depth keeps in flight within one completion time. */
    static final int MAX_SLOTS = 1 << 16;
    private static final long NS_PER_SEC = 1_000_000_000L;
    private static final long MIB = 1L << 20;

    private final long completionNs;
    private final long mbps;
    private final CompletionTimer timer;
    // guarded by this: the timeline
    /** When the bytes accepted so far have passed the bandwidth limit; MIN_VALUE before the first. */
    private long transferEndNs = Long.MIN_VALUE;
    /** The latest completion time handed out: a later request never completes before it. */
    private long lastDeadlineNs = Long.MIN_VALUE;
    /**
     * When each slot of the device frees up: every request's completion time, in order (they
     * never decrease), for the request that takes the slot next. Entries older than
     * {@code completion_nsec} are dropped as they are met; at most {@link #MAX_SLOTS} are kept.
     */
    private final long[] slotFreeNs = new long[MAX_SLOTS];
    private int slotHead;
    private int slotCount;

    /**
     * @param completionNs time every request takes, ≥ 0 (null_blk's completion_nsec)
     * @param mbps         bandwidth in MiB/s, 0 for unlimited (null_blk's mbps)
     */
    public TimedNullBackend(NullBackend inner, long completionNs, long mbps) {
        if (completionNs < 0) throw new IllegalArgumentException("completion_nsec " + completionNs + " (expected: >= 0)");
        if (mbps < 0) throw new IllegalArgumentException("mbps " + mbps + " (expected: >= 0)");
        super(inner);
        this.completionNs = completionNs;
        this.mbps = mbps;
        this.timer = new CompletionTimer();
    }

    /**
     * Places a request moving {@code bytes} that arrives at {@code nowNs} on the device's
     * timeline and returns when it completes. Arrivals must come in non-decreasing
     * {@code nowNs}; so do the results.
     */
    synchronized long deadlineNs(long nowNs, long bytes) {
        long start = slotStart(nowNs);
        if (mbps > 0 && bytes > 0) {
            long bucketFloor = nowNs - BURST_NS;      // an idle device has at most a burst's worth in its bucket
            long from = transferEndNs == Long.MIN_VALUE || transferEndNs - bucketFloor < 0 ? bucketFloor : transferEndNs;
            transferEndNs = from + transferNs(bytes);
            if (transferEndNs - start > 0) start = transferEndNs;
        }
        long deadline = start + completionNs;
        if (lastDeadlineNs != Long.MIN_VALUE && lastDeadlineNs - deadline > 0) deadline = lastDeadlineNs;  // a stopped queue stops everything
        lastDeadlineNs = deadline;
        if (completionNs > 0) {
            if (slotCount == MAX_SLOTS) {      // a deeper queue than ever seen: forget the oldest
                slotHead = (slotHead + 1) & (MAX_SLOTS - 1);
                slotCount--;
            }
            slotFreeNs[(slotHead + slotCount++) & (MAX_SLOTS - 1)] = deadline;
        }
        return deadline;
    }

    /**
     * When a request arriving at {@code nowNs} starts: at the time the earliest slot that is free
     * by now freed up, if that was within one completion time — the timer that reported the slot's
     * last request, and the client that sent this one, may both have been late, and the device
     * does not count their lateness against its own capacity — else now.
     */
    private long slotStart(long nowNs) {
        long oldest = nowNs - completionNs;
        while (slotCount > 0) {
            long free = slotFreeNs[slotHead];
            if (free - nowNs > 0) return nowNs;              // every slot is still busy: a request beyond them
            slotHead = (slotHead + 1) & (MAX_SLOTS - 1);
            slotCount--;
            if (free - oldest >= 0) return free;
        }
        return nowNs;
    }

    private long transferNs(long bytes) {
        // double: exact to the ns below 2^53 ns, plenty for one request
        return (long) Math.ceil(bytes * (double) NS_PER_SEC / (mbps * MIB));
    }

    private long arrive(long bytes) {
        synchronized (this) {
            return deadlineNs(System.nanoTime(), bytes);     // read under the lock: arrivals in order
        }
    }

    private static void waitUntil(long deadlineNs) {
        long left;
        while ((left = deadlineNs - System.nanoTime()) > 0) LockSupport.parkNanos(left);
    }

    @Override
    public boolean blocking() {
        return true;
    }

    /** Does the request's (instant) work now, and reports it at its completion time. */
    @Override
    public IoStatus start(IoRequest io, IoExecutor executor, Completion done) throws IOException {
        IoStatus status = RequestRunner.run(inner, io);
        long bytes = io.op().carriesData() ? io.length() : 0;
        synchronized (this) {      // arrival and queueing together: the timer's ring stays in deadline order
            timer.add(io, status, done, arrive(bytes));
        }
        return null;
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        waitUntil(arrive(dst.remaining()));
        inner.read(offset, dst);
    }

    @Override
    public boolean readViews(long offset, int length, ViewSink sink) {
        waitUntil(arrive(length));
        return inner.readViews(offset, length, sink);
    }

    @Override
    public void write(long offset, ByteBuffer src, boolean fua) throws IOException {
        waitUntil(arrive(src.remaining()));
        inner.write(offset, src, fua);
    }

    @Override
    public void flush() throws IOException {
        waitUntil(arrive(0));
        inner.flush();
    }

    @Override
    public void discard(long offset, long length) throws IOException {
        waitUntil(arrive(0));
        inner.discard(offset, length);
    }

    @Override
    public void writeZeroes(long offset, long length, boolean mayUnmap) throws IOException {
        waitUntil(arrive(0));
        inner.writeZeroes(offset, length, mayUnmap);
    }

    @Override
    public void prefetch(long offset, long length) throws IOException {
        waitUntil(arrive(0));
        inner.prefetch(offset, length);
    }

    /** Stops the timer thread; the dispatch layer has waited for every request first. */
    @Override
    public void close() throws IOException {
        timer.close();
        inner.close();
    }
}
