package io.iotarget.buffer;

import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * A data buffer of the {@link BufferPool}, held by one {@link BufferAccount} from take to
 * {@link #release}. The holder may pass it between threads (with the usual happens-before of
 * a queue or a lock); the pool touches it only while it is free.
 *
 * <p>Its contents are whatever the previous holder — possibly another tenant — left there,
 * or zeroes: the pool does not clear it. The front ends guarantee that no byte of it reaches
 * a client unless the request wrote it first: a read reply sends exactly the {@link #size}
 * bytes the backend filled, and nothing when the read failed; a write sends nothing back.
 *
 * <p>The object and its {@link ByteBuffer} are reused for every holder of the slot, so that
 * taking allocates nothing. Using {@link #buffer()} after {@link #release()}, directly or
 * through a slice or duplicate kept from it, is a bug that the pool cannot always see: it
 * reads or overwrites the next holder's data, or throws {@link IllegalStateException} once
 * the memory is unmapped. A second release while the buffer is free throws
 * {@code IllegalStateException} and changes nothing; one after another holder has taken the
 * same slot cannot be told from that holder's own release. There is no foreign buffer to
 * release: a buffer always goes back to the pool and the account it was taken from.
 */
public final class PooledBuffer extends PooledBufferPadding {
    private static final VarHandle STATE;
    private static final int FREE = 0;
    private static final int OUT = 1;
    private static final int PAGE_BYTES = 4096;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(PooledBuffer.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final Chunk chunk;
    /** Where the buffer starts in its chunk's mapping. */
    private final int offset;
    private final ByteBuffer buffer;

    // Written by the taking thread before `state` becomes OUT, read by the releasing thread
    // after its CAS of `state` (acquire): plain fields.
    private int size;
    private BufferAccount account;
    /** The pool's trim epoch at release, and the links of its stripe's list: guarded by that {@link CachedList} while cached. */
    int releasedEpoch;
    PooledBuffer newer;
    PooledBuffer older;

    @SuppressWarnings("unused")     // STATE
    private volatile int state;

    PooledBuffer(Chunk chunk, int offset, ByteBuffer buffer) {
        this.chunk = chunk;
        this.offset = offset;
        this.buffer = buffer;
    }

    /**
     * The memory: direct, 4096-aligned, capacity the class size (at least {@link #size}).
     * As taken: position 0, limit {@link #size}, big-endian. The same object every time.
     */
    public ByteBuffer buffer() {
        return buffer;
    }

    /** The size asked for when it was taken. */
    public int size() {
        return size;
    }

    /**
     * Gives it back to its pool and account, exactly once; any thread. May serve a queued
     * waiter on this thread (see {@link BufferWaiter}).
     *
     * @throws IllegalStateException when it is not out (released twice)
     */
    public void release() {
        if (!STATE.compareAndSet(this, OUT, FREE)) {
            throw new IllegalStateException("buffer of " + chunk.sizeClass.bytes + " bytes released twice (or never taken)");
        }
        BufferAccount holder = account;
        account = null;
        chunk.sizeClass.pool.release(this, holder);
    }

    /** Hands it to {@code holder} with {@code bytes} asked for; the caller owns it until then. */
    void handOut(BufferAccount holder, int bytes) {
        account = holder;
        size = bytes;
        buffer.clear().limit(bytes);
        buffer.order(ByteOrder.BIG_ENDIAN);
        STATE.setRelease(this, OUT);
    }

    /** The pages of its first {@code bytes} in the chunk's mapping, for madvise. */
    MemorySegment pages(int bytes) {
        return chunk.segment.asSlice(offset, (bytes + PAGE_BYTES - 1) & -PAGE_BYTES);
    }
}

/** Keeps a buffer's fields off the cache line of the object allocated before it (the previous slot's ByteBuffer). */
abstract class PooledBufferPadding {
    @SuppressWarnings("unused") private long pad0, pad1, pad2, pad3, pad4, pad5, pad6, pad7;
}
