package io.iotarget.iocontrol.stat;

import org.HdrHistogram.AtomicHistogram;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.HistogramIterationValue;

import java.util.concurrent.atomic.LongAdder;

/**
 * The latency of one (group, device)'s requests, from entering the controller to completion:
 * an HdrHistogram {@link AtomicHistogram} the IO path adds to and never resets, and
 * hierarchical totals (this group and its descendants, removed ones included) that only
 * readers update, as {@link DeviceStats} does for io.stat.
 *
 * <p>Thread-safety: {@link #record} from any thread, lock-free: the bucket's and the total's
 * atomic increments, plus a LongAdder for the exact sum. Everything else under the
 * {@link StatFlusher}'s lock: {@link #fold} copies the recording histogram, subtracts what it
 * folded before, and adds the difference to this pair's totals and every ancestor's — writers
 * never wait for a reader. As with io.stat, a read while IO runs is not an atomic snapshot
 * (the sum may be a few requests ahead of the buckets); once IO stops it is exact.
 */
public final class LatencyStats {
    /*
     * Maintainers' notes. The range is fixed (no resizing on the IO path); values past it are
     * clamped to HIGHEST_NS, which only requests held for over an hour reach. One significant
     * digit keeps a histogram at 480 longs (3.8 KB; three per pair: recording, folded, totals)
     * with buckets 1/16 to 1/32 of their value wide, fine for a p99; two digits would be 2.7k
     * longs per histogram. A Recorder (interval histograms swapped on read) was the first
     * version: its phaser adds two more atomic increments per request, ~20 ns, for nothing a
     * cumulative histogram and a reader-side difference do not give (bench/results/observe.md).
     */
    /** Smallest latency told apart, ns: a µs is below anything a request through a front end takes. */
    public static final long LOWEST_NS = 1_000;
    /** Largest latency kept, ns (one hour); longer ones count as this. */
    public static final long HIGHEST_NS = 3_600_000_000_000L;
    private static final int SIGNIFICANT_DIGITS = 1;

    private final LatencyStats parent;
    private final AtomicHistogram recording = new AtomicHistogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS);
    private final LongAdder sumNs = new LongAdder();

    // Reader side, under the flusher's lock.
    private final Histogram folded = new Histogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS);
    private long foldedSumNs;
    private final Histogram totals = new Histogram(LOWEST_NS, HIGHEST_NS, SIGNIFICANT_DIGITS);
    private long totalSumNs;

    /** @param parent the parent group's latency on the same device; null for the root group's */
    public LatencyStats(LatencyStats parent) {
        this.parent = parent;
    }

    /** One request took {@code latencyNs}. Any thread, lock-free. */
    public void record(long latencyNs) {
        long ns = Math.max(0, latencyNs);
        recording.recordValue(Math.min(ns, HIGHEST_NS));
        sumNs.add(ns);
    }

    /** Adds what was recorded since the last fold to this pair's totals and its ancestors'. Flusher lock held. */
    public void fold() {
        long sum = sumNs.sum();
        long deltaSumNs = sum - foldedSumNs;
        foldedSumNs = sum;
        Histogram interval = null;
        if (recording.getTotalCount() != folded.getTotalCount()) {
            // Counts only grow, and each bucket is read after folded's was written: none goes below.
            interval = recording.copy();
            interval.subtract(folded);
            folded.add(interval);
        }
        if (interval == null && deltaSumNs == 0) return;
        for (LatencyStats node = this; node != null; node = node.parent) {
            if (interval != null) node.totals.add(interval);
            node.totalSumNs += deltaSumNs;
        }
    }

    /** Requests completed (hierarchical). Flusher lock held, after {@link #fold}. */
    public long count() {
        return totals.getTotalCount();
    }

    /** Their latencies summed, ns (hierarchical). Flusher lock held, after {@link #fold}. */
    public long sumNs() {
        return totalSumNs;
    }

    /** Requests that took at most {@code ns} (within the histogram's precision). Flusher lock held, after {@link #fold}. */
    public long countAtOrBelow(long ns) {
        return ns >= HIGHEST_NS ? totals.getTotalCount() : totals.getCountBetweenValues(0, ns);
    }

    /** A recorded bucket: {@code count} requests took at most {@code highestNs} and more than the previous bucket's. */
    @FunctionalInterface
    public interface BucketVisitor {
        void bucket(long highestNs, long count);
    }

    /** Visits every non-empty bucket, lowest first. Flusher lock held, after {@link #fold}. */
    public void forEachBucket(BucketVisitor visitor) {
        for (HistogramIterationValue v : totals.recordedValues()) {
            visitor.bucket(totals.highestEquivalentValue(v.getValueIteratedTo()), v.getCountAtValueIteratedTo());
        }
    }
}
