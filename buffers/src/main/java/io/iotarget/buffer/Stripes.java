package io.iotarget.buffer;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Which stripe of a size class's cached buffers a thread uses first: threads get home stripes
 * in turn as they first take or release, so up to {@link #COUNT} threads (event loops,
 * completion threads) never share one. Twice the cores, so that the threads of a busy
 * server rarely meet; a take that finds its home empty looks at the others.
 */
final class Stripes {
    /** The power of two at or above twice the cores. */
    static final int COUNT = Integer.highestOneBit(2 * Runtime.getRuntime().availableProcessors() - 1) << 1;
    static final int MASK = COUNT - 1;

    private static final AtomicInteger NEXT = new AtomicInteger();
    private static final ThreadLocal<Integer> HOME = ThreadLocal.withInitial(() -> NEXT.getAndIncrement() & MASK);

    private Stripes() {
    }

    static int home() {
        return HOME.get();
    }
}
