package io.iotarget.frontend.nvmetcp;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The queue of slots waiting for the loop to encode them: many producers (the loop itself,
 * engine completion threads, the configuration thread completing an AER), one consumer (the
 * loop). An intrusive Vyukov MPSC queue linked through {@link CommandSlot#next}, so pushing
 * allocates nothing, and the flag that keeps one flush task at most scheduled for it. A slot is
 * in the queue at most once at a time (it is re-pushed only after the loop has acted on it and
 * the host has answered).
 *
 * <p>The wake-up: a producer pushes, then {@link #armFlush} — only the producer that raises the
 * flag schedules the flush task; the task calls {@link #flushStarting} (lowering it) before it
 * polls. A push the polls missed was linked after the flag went down, so its producer raises it
 * again and schedules the next task. stress-tests' {@code SlotQueueFlushStress} holds it to this.
 */
final class SlotQueue {
    /*
     * Maintainers' notes. "The loop lowers the flag, then reads a link" against "a producer
     * writes the link, then raises the flag" is a store-buffering pair, and a release store and an
     * acquire load of the link are not ordered against the flag by the Java memory model: with a
     * plain store to lower the flag and a compare-and-set to raise it, the loop could miss a
     * half-linked slot while its producer still found the flag up — a response left queued until
     * the next completion. HotSpot never does that on x86 or ARM (the head's getAndSet and the
     * flag's CAS are full fences there); the proof must not lean on it. So the flag carries the
     * ordering: both ends exchange it (getAndSet), and an exchange always writes. If the task's
     * exchange reads a producer's raise (or a later write), that raise happened-before the task's
     * polls, and so did the link written before it; if it comes first, the producer's exchange
     * reads the lowered flag and that producer schedules the next task. Each exchange costs what
     * the store and the CAS it replaces cost (one locked instruction each), and the links stay
     * release/acquire; making them volatile instead cost 9 ns more per response on x86
     * (SlotQueueBenchmark: 31.5-32.0 against 22.1-23.8 ns).
     */
    private static final VarHandle HEAD;
    private static final VarHandle FLUSH_ARMED;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            HEAD = l.findVarHandle(SlotQueue.class, "head", CommandSlot.class);
            FLUSH_ARMED = l.findVarHandle(SlotQueue.class, "flushArmed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final CommandSlot stub = new CommandSlot(-1, null);
    /** Producers' end, exchanged atomically. */
    private volatile CommandSlot head = stub;
    /** Consumer's end; loop thread only. */
    private CommandSlot tail = stub;
    /** A flush task is scheduled and has not started polling yet; only ever exchanged (FLUSH_ARMED). */
    @SuppressWarnings("unused")
    private volatile boolean flushArmed;

    /** Any thread. */
    void push(CommandSlot slot) {
        CommandSlot.NEXT.set(slot, (CommandSlot) null);
        CommandSlot previous = (CommandSlot) HEAD.getAndSet(this, slot);
        CommandSlot.NEXT.setRelease(previous, slot);
    }

    /** Any thread, after {@link #push}: true when the caller is to schedule the flush task (none is pending). */
    boolean armFlush() {
        return !(boolean) FLUSH_ARMED.getAndSet(this, true);
    }

    /** Loop thread, at the start of the flush task, before it polls: pushes from now on arm a new one. */
    void flushStarting() {
        FLUSH_ARMED.getAndSet(this, false);
    }

    /**
     * Loop thread. The oldest slot, or null when the queue is empty or a producer is half way
     * through a push (it will link its slot and then arm the flush).
     */
    CommandSlot poll() {
        CommandSlot t = tail;
        CommandSlot n = next(t);
        if (t == stub) {
            if (n == null) return null;
            tail = n;
            t = n;
            n = next(t);
        }
        if (n != null) {
            tail = n;
            return t;
        }
        if (t != head) return null;
        push(stub);
        n = next(t);
        if (n != null) {
            tail = n;
            return t;
        }
        return null;
    }

    private static CommandSlot next(CommandSlot slot) {
        return (CommandSlot) CommandSlot.NEXT.getAcquire(slot);
    }
}
