package io.iotarget.iocontrol.stat;

import io.iotarget.model.IoOp;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * One stripe of one (group, device)'s counters. Many threads may add to the same stripe (the
 * stripe is picked by a hash of the thread), so adds are atomic; the common case is one thread
 * per stripe and an uncontended cache line.
 */
final class StatStripe {
    /*
     * Maintainers' notes. The queued flag and the counters form a Dekker pair: the writer adds
     * (volatile) and then reads queued (volatile); the flusher clears queued (volatile) and then
     * reads the counters (volatile). Under the Java memory model's total order of volatile
     * accesses, either the flusher sees the add, or the writer sees queued == 0 and pushes the
     * stripe again, so no add is ever left behind (stress-tests' StatStripeRequeueStress and
     * StatStripeWritersStress hold it to this). Fields are padded so that two stripes never
     * share a cache line.
     */
    private static final VarHandle COUNT;
    private static final VarHandle QUEUED;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            COUNT = MethodHandles.arrayElementVarHandle(long[].class);
            QUEUED = l.findVarHandle(StatStripe.class, "queued", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** counts[PAD + field.ordinal()]; the padding keeps neighbouring objects off this line. */
    private static final int PAD = 8;
    private final long[] counts = new long[PAD + StatField.values().length + PAD];
    private final long[] flushed = new long[StatField.values().length];
    private final DeviceStats owner;
    private final StatFlusher flusher;
    @SuppressWarnings("unused") // accessed through QUEUED
    private volatile int queued;
    StatStripe nextDirty;

    StatStripe(DeviceStats owner, StatFlusher flusher) {
        this.owner = owner;
        this.flusher = flusher;
    }

    void add(IoOp.StatBucket bucket, long bytes) {
        int bytesField;
        int iosField;
        switch (bucket) {
            case READ -> {
                bytesField = StatField.RBYTES.ordinal();
                iosField = StatField.RIOS.ordinal();
            }
            case WRITE -> {
                bytesField = StatField.WBYTES.ordinal();
                iosField = StatField.WIOS.ordinal();
            }
            case DISCARD -> {
                bytesField = StatField.DBYTES.ordinal();
                iosField = StatField.DIOS.ordinal();
            }
            default -> throw new IllegalArgumentException(String.valueOf(bucket));
        }
        if (bytes != 0) COUNT.getAndAdd(counts, PAD + bytesField, bytes);
        COUNT.getAndAdd(counts, PAD + iosField, 1L);
        if ((int) QUEUED.getVolatile(this) == 0 && QUEUED.compareAndSet(this, 0, 1)) flusher.push(this);
    }

    /**
     * Flusher only: unqueue, then add what changed since the last fold to the owner and its
     * ancestors. {@code delta} is scratch space of one slot per {@link StatField}.
     */
    void foldInto(long[] delta) {
        QUEUED.setVolatile(this, 0);
        boolean any = false;
        for (int i = 0; i < flushed.length; i++) {
            long now = (long) COUNT.getVolatile(counts, PAD + i);
            delta[i] = now - flushed[i];
            flushed[i] = now;
            any |= delta[i] != 0;
        }
        if (!any) return;
        for (DeviceStats node = owner; node != null; node = node.parent()) node.addToTotals(delta);
    }
}
