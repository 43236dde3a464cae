package io.iotarget.iocontrol.stat;

import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The "updated" list of io.stat, after the kernel's rstat: the IO path pushes a stripe here the
 * first time it changes after a flush (a lock-free stack, one push per stripe per flush
 * interval); a reader drains the whole list and folds every stripe's delta into its
 * {@link DeviceStats} and all of that node's ancestors. Each delta is folded exactly once, by
 * whichever reader comes first, so the cost of a read is the work done since the previous one.
 * stress-tests' StatFlusherPushStress and StatStripeRequeueStress check the list's two ends.
 *
 * <p>Thread-safety: {@link #push} from any thread without locks; {@link #flush} and reads of
 * totals under {@link #lock()}.
 */
public final class StatFlusher {
    private final AtomicReference<StatStripe> dirty = new AtomicReference<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final long[] delta = new long[StatField.values().length];

    /** Readers hold this while flushing and reading totals. */
    public ReentrantLock lock() {
        return lock;
    }

    void push(StatStripe stripe) {
        StatStripe head;
        do {
            head = dirty.get();
            stripe.nextDirty = head;
        } while (!dirty.compareAndSet(head, stripe));
    }

    /** Folds every pending delta into the totals. Caller holds {@link #lock()}. */
    public void flush() {
        StatStripe stripe = dirty.getAndSet(null);
        while (stripe != null) {
            // Read the link before the stripe can be pushed again (it can, as soon as it is unqueued).
            StatStripe next = stripe.nextDirty;
            stripe.foldInto(delta);
            stripe = next;
        }
    }

    /** True when no stripe is waiting to be folded (for tests and the empty-read fast path). */
    public boolean idle() {
        return dirty.get() == null;
    }
}
