package io.iotarget.frontend.nvmetcp;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The queue's free command tags: the writer returns a tag once the command's response is on
 * the wire, the reader takes one for each new command. Single producer, single consumer; the
 * ring can hold every tag, so it never fills.
 */
final class FreeTags {
    private static final VarHandle HEAD;
    private static final VarHandle TAIL;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            HEAD = l.findVarHandle(FreeTags.class, "head", long.class);
            TAIL = l.findVarHandle(FreeTags.class, "tail", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final int[] ring;
    private final int mask;
    @SuppressWarnings("unused")     // HEAD: the reader's index
    private volatile long head;
    @SuppressWarnings("unused")     // TAIL: the writer's index
    private volatile long tail;

    /** Room for {@code capacity} tags (rounded up to a power of two); starts empty. */
    FreeTags(int capacity) {
        int size = Integer.highestOneBit(Math.max(1, capacity - 1)) << 1;
        ring = new int[size];
        mask = size - 1;
    }

    /** Reader thread: a free tag, or -1 when none is free. */
    int poll() {
        long h = (long) HEAD.getOpaque(this);
        if (h == (long) TAIL.getAcquire(this)) return -1;
        int tag = ring[(int) h & mask];
        HEAD.setRelease(this, h + 1);
        return tag;
    }

    /** Writer thread: returns a tag. */
    void offer(int tag) {
        long t = (long) TAIL.getOpaque(this);
        ring[(int) t & mask] = tag;
        TAIL.setRelease(this, t + 1);
    }
}
