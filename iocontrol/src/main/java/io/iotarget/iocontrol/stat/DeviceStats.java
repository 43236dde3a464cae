package io.iotarget.iocontrol.stat;

import io.iotarget.model.IoOp;

/**
 * io.stat counters of one (group, device) pair: striped cells the IO path adds to, and
 * hierarchical totals (this group and all its descendants, including removed ones) that only
 * the {@link StatFlusher} updates.
 *
 * <p>Thread-safety: {@link #add} from any thread, lock-free. {@link #totals} under the
 * flusher's lock, after a flush; like LongAdder's sum, a read while IO is running is not an
 * atomic snapshot, but once IO stops the totals are exact.
 */
public final class DeviceStats {
    /** Stripes per (group, device): a power of two, about twice the CPU count. */
    private static final int STRIPES = Math.max(2, Integer.highestOneBit(Math.max(1, Runtime.getRuntime().availableProcessors() * 2 - 1)) << 1);
    private static final int STRIPE_SHIFT = 64 - Integer.numberOfTrailingZeros(STRIPES);

    private final DeviceStats parent;
    private final StatStripe[] stripes = new StatStripe[STRIPES];
    private final long[] totals = new long[StatField.values().length];

    /** @param parent the parent group's stats on the same device; null for the root group's */
    public DeviceStats(DeviceStats parent, StatFlusher flusher) {
        this.parent = parent;
        for (int i = 0; i < STRIPES; i++) stripes[i] = new StatStripe(this, flusher);
    }

    public DeviceStats parent() {
        return parent;
    }

    /** Counts one request of {@code bytes} in {@code bucket}. Any thread. */
    public void add(IoOp.StatBucket bucket, long bytes) {
        long id = Thread.currentThread().threadId();
        stripes[(int) ((id * 0x9E3779B97F4A7C15L) >>> STRIPE_SHIFT)].add(bucket, bytes);
    }

    /** Hierarchical totals; the caller holds the flusher's lock and has flushed. */
    public long total(StatField field) {
        return totals[field.ordinal()];
    }

    void addToTotals(long[] delta) {
        for (int i = 0; i < delta.length; i++) totals[i] += delta[i];
    }
}
