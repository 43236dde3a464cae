package io.iotarget.buffer;

import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The buffers of one tenant (one io group) in a {@link BufferPool}: at most {@link #shareBytes}
 * in use at once, counted in class sizes. Any thread; nothing here blocks.
 */
public final class BufferAccount {
    private final BufferPool pool;
    private final long shareBytes;
    private final String groupPath;
    private final AtomicLong inUseBytes = new AtomicLong();

    /** Queued takes, oldest first; guarded by the pool's wait lock. */
    final ArrayDeque<BufferPool.Waiting> queue = new ArrayDeque<>();
    /** {@code queue.size()}, written under the wait lock, read without it on the fast path. */
    volatile int queued;

    BufferAccount(BufferPool pool, long shareBytes, String groupPath) {
        this.pool = pool;
        this.shareBytes = shareBytes;
        this.groupPath = groupPath;
    }

    /**
     * A buffer with position 0 and limit {@code bytes}, direct and 4096-aligned, or null when
     * the share or the pool has no room now — or when earlier takes of this account, or of
     * any account while the pool is full, are waiting (they go first).
     *
     * @throws IllegalArgumentException when {@code bytes} is below 1, above
     *         {@link BufferPool#MAX_BUFFER_BYTES}, or needs a class larger than the share
     * @throws IllegalStateException when the pool is closed
     */
    public PooledBuffer tryTake(int bytes) {
        return pool.tryTake(this, bytes);
    }

    /**
     * Like {@link #tryTake}, but when there is no room queues {@code waiter} and returns null:
     * FIFO within this account, and round-robin between accounts while the pool itself is
     * full. The waiter then receives its buffer through {@link BufferWaiter#available}, once,
     * on the thread that released the memory — which may be before this call returns.
     */
    public PooledBuffer take(int bytes, BufferWaiter waiter) {
        return pool.take(this, bytes, waiter);
    }

    /**
     * Withdraws the earliest queued take of {@code waiter}. Returns false when there is none:
     * it was served (the waiter owns the buffer, possibly delivered a moment later) or never
     * queued.
     */
    public boolean cancel(BufferWaiter waiter) {
        return pool.cancel(this, waiter);
    }

    /** Bytes in use (class sizes), at most {@link #shareBytes}. */
    public long inUseBytes() {
        return inUseBytes.get();
    }

    public long shareBytes() {
        return shareBytes;
    }

    /** Takes queued now. */
    public int waiting() {
        return queued;
    }

    @Override
    public String toString() {
        return "BufferAccount[" + groupPath + ", in use " + inUseBytes() + " of " + shareBytes + " bytes, " + queued + " waiting]";
    }

    /** Charges {@code bytes} if the share has room. */
    boolean charge(int bytes) {
        for (long used = inUseBytes.get(); used + bytes <= shareBytes; used = inUseBytes.get()) {
            if (inUseBytes.compareAndSet(used, used + bytes)) return true;
        }
        return false;
    }

    void uncharge(int bytes) {
        inUseBytes.addAndGet(-bytes);
    }
}
