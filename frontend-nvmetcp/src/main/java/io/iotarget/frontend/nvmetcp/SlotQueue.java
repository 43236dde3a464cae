package io.iotarget.frontend.nvmetcp;

/**
 * The queue of slots waiting for the writer: many producers (the reader, engine completion
 * threads, the configuration thread completing an AER), one consumer (the writer). An
 * intrusive Vyukov MPSC queue linked through {@link CommandSlot#next}, so pushing allocates
 * nothing. A slot is in the queue at most once at a time (it is re-pushed only after the
 * writer has acted on it and the host has answered).
 */
final class SlotQueue {
    private final CommandSlot stub = new CommandSlot(-1, null);
    /** Producers' end, exchanged atomically. */
    private volatile CommandSlot head = stub;
    /** Consumer's end; writer thread only. */
    private CommandSlot tail = stub;

    private static final java.lang.invoke.VarHandle HEAD;

    static {
        try {
            HEAD = java.lang.invoke.MethodHandles.lookup().findVarHandle(SlotQueue.class, "head", CommandSlot.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** Any thread. */
    void push(CommandSlot slot) {
        CommandSlot.NEXT.set(slot, (CommandSlot) null);
        CommandSlot previous = (CommandSlot) HEAD.getAndSet(this, slot);
        CommandSlot.NEXT.setRelease(previous, slot);
    }

    /**
     * Writer thread. The oldest slot, or null when the queue is empty or a producer is half way
     * through a push (it will link its slot and then wake the writer).
     */
    CommandSlot poll() {
        CommandSlot t = tail;
        CommandSlot n = (CommandSlot) CommandSlot.NEXT.getAcquire(t);
        if (t == stub) {
            if (n == null) return null;
            tail = n;
            t = n;
            n = (CommandSlot) CommandSlot.NEXT.getAcquire(t);
        }
        if (n != null) {
            tail = n;
            return t;
        }
        if (t != head) return null;
        push(stub);
        n = (CommandSlot) CommandSlot.NEXT.getAcquire(t);
        if (n != null) {
            tail = n;
            return t;
        }
        return null;
    }

    /** Writer thread: true when nothing is queued (a push in progress counts as queued). */
    boolean isEmpty() {
        return tail == head && CommandSlot.NEXT.getAcquire(tail) == null;
    }
}
