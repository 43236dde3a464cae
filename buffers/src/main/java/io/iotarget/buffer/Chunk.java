package io.iotarget.buffer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * One mapping of a size class, cut into {@link SizeClass#slotsPerChunk} buffers, with the
 * shared arena whose close unmaps it. Everything but the final fields is guarded by the size
 * class's lock.
 */
final class Chunk {
    final SizeClass sizeClass;
    final Arena arena;
    final MemorySegment segment;

    /** Slots whose pages are not resident (never touched, or dropped): a stack. */
    private final PooledBuffer[] cleared;
    private int clearedCount;
    /** Slots in use, cached, or being cleared: the chunk may be unmapped only when this is 0. */
    int live;
    /** On its class's list of chunks with cleared slots. */
    boolean partial;
    /** Its arena is closed or closing; no slot of it may be handed out again. */
    boolean unmapped;

    /** A new chunk, all slots cleared, or null when the kernel refused the mapping; the caller publishes it under the class's lock. */
    static Chunk map(SizeClass sizeClass) {
        Arena arena = Arena.ofShared();
        MemorySegment segment = AnonymousMemory.map((long) sizeClass.slotsPerChunk * sizeClass.bytes, sizeClass.slotsPerChunk == 1, arena);
        if (segment == null) {
            arena.close();
            return null;
        }
        return new Chunk(sizeClass, arena, segment);
    }

    private Chunk(SizeClass sizeClass, Arena arena, MemorySegment segment) {
        this.sizeClass = sizeClass;
        this.arena = arena;
        this.segment = segment;
        int slots = sizeClass.slotsPerChunk;
        ByteBuffer whole = segment.asByteBuffer();
        cleared = new PooledBuffer[slots];
        for (int i = 0; i < slots; i++) {
            int offset = i * sizeClass.bytes;
            cleared[slots - 1 - i] = new PooledBuffer(this, offset, whole.slice(offset, sizeClass.bytes));
        }
        clearedCount = slots;
    }

    boolean hasCleared() {
        return clearedCount > 0;
    }

    PooledBuffer popCleared() {
        PooledBuffer slot = cleared[--clearedCount];
        cleared[clearedCount] = null;
        return slot;
    }

    void pushCleared(PooledBuffer slot) {
        cleared[clearedCount++] = slot;
    }
}
