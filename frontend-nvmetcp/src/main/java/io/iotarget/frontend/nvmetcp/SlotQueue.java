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
     * Maintainers' notes. The link from the previous head is written and read with volatile
     * semantics, not release/acquire, because of the flag: "the loop lowers the flag, then
     * reads the link" against "the producer writes the link, then reads the flag" is a
     * store-buffering pair, and only if all four accesses are in the total order of volatile
     * accesses does one side have to see the other's write. With release/acquire the Java memory
     * model would allow the loop to miss a half-linked slot while its producer still saw the flag
     * raised — a response left in the queue until the next completion. (HotSpot on x86 and ARM
     * never does that, since the getAndSet and the flag's CAS are full fences there; the proof
     * must not lean on it.)
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
    @SuppressWarnings("unused")     // HEAD
    private volatile CommandSlot head = stub;
    /** Consumer's end; loop thread only. */
    private CommandSlot tail = stub;
    /** A flush task is scheduled and has not started polling yet. */
    private volatile boolean flushArmed;

    /** Any thread. */
    void push(CommandSlot slot) {
        CommandSlot.NEXT.set(slot, (CommandSlot) null);
        CommandSlot previous = (CommandSlot) HEAD.getAndSet(this, slot);
        CommandSlot.NEXT.setVolatile(previous, slot);
    }

    /** Any thread, after {@link #push}: true when the caller is to schedule the flush task (none is pending). */
    boolean armFlush() {
        return FLUSH_ARMED.compareAndSet(this, false, true);
    }

    /** Loop thread, at the start of the flush task, before it polls: pushes from now on arm a new one. */
    void flushStarting() {
        flushArmed = false;
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
        return (CommandSlot) CommandSlot.NEXT.getVolatile(slot);
    }
}
