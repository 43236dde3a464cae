package io.iotarget.iocontrol.pressure;

import io.iotarget.model.IoQueue;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * One tenant queue in one group — an NBD connection, an NVMe/TCP IO queue (per group of its
 * namespaces), a volume — which io.pressure counts as the kernel counts a task. Made by
 * {@link Pressure#newQueue}; requests carry it ({@code IoRequest.queue}).
 *
 * <p>Threads: any. {@link #begin} and {@link #end} are the IO path's only work per request:
 * one atomic step on this queue's own counter, and the tracker's lock only at a 0↔1 change
 * while something somewhere is stalled.
 */
public final class TenantQueue implements IoQueue {
    final Pressure tracker;
    final PressureGroup group;
    /** Commands submitted and not yet reported complete. */
    final AtomicInteger outstanding = new AtomicInteger();
    /** Commands held in a policy (io.max, io.latency's depth, iocost's budget). */
    final AtomicInteger parked = new AtomicInteger();

    // Tracker lock.
    /** The issuer delay owed (engine clock); stalled until then. */
    long delayedUntilNs = Long.MIN_VALUE;
    /** What this queue is counted as in its groups now. */
    boolean countedStalled;
    boolean countedProductive;
    boolean closed;

    TenantQueue(Pressure tracker, PressureGroup group) {
        this.tracker = tracker;
        this.group = group;
    }

    /** A command of this queue was submitted. */
    public void begin(long nowNs) {
        if (outstanding.getAndIncrement() == 0 && tracker.armed) tracker.reconcile(this, nowNs);
    }

    /** A command of this queue was reported complete (its callback runs now). */
    public void end(long nowNs) {
        if (outstanding.decrementAndGet() == 0 && tracker.armed) tracker.reconcile(this, nowNs);
    }

    /** The queue is gone (its connection closed, its volume closed): it counts nowhere any more. Idempotent. */
    public void close(long nowNs) {
        tracker.close(this, nowNs);
    }
}
