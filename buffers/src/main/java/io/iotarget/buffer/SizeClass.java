package io.iotarget.buffer;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The free buffers of one size (a power of two from 4 KiB): the cached ones, resident and
 * ready, most recently released first; and the chunks that still have cleared slots. Any
 * thread; the lists are guarded by {@code this}, held only for list operations — every
 * system call (mmap, madvise, the arena's munmap) runs outside it.
 */
final class SizeClass {
    /** {@link #oldestCachedEpoch()} when nothing is cached. */
    static final int NONE_CACHED = Integer.MAX_VALUE;

    final BufferPool pool;
    final int bytes;
    final int slotsPerChunk;

    /** Free and resident; first = most recently released, last = idle the longest. */
    private final ArrayDeque<PooledBuffer> cached = new ArrayDeque<>();
    /** Mapped chunks with cleared slots (unmapped ones are dropped when met). */
    private final ArrayDeque<Chunk> partial = new ArrayDeque<>();
    /** Chunks whose last live slot was cleared on the fast path: unmapped by the next trim. */
    private final List<Chunk> emptied = new ArrayList<>();

    SizeClass(BufferPool pool, int bytes, int chunkBytes) {
        this.pool = pool;
        this.bytes = bytes;
        this.slotsPerChunk = Math.max(1, chunkBytes / bytes);
    }

    synchronized PooledBuffer takeCached() {
        return cached.pollFirst();
    }

    synchronized void putCached(PooledBuffer slot) {
        cached.addFirst(slot);
    }

    synchronized boolean hasCached() {
        return !cached.isEmpty();
    }

    /** The trim epoch at which the longest-idle cached buffer was released, or {@link #NONE_CACHED}. */
    synchronized int oldestCachedEpoch() {
        PooledBuffer oldest = cached.peekLast();
        return oldest == null ? NONE_CACHED : oldest.releasedEpoch;
    }

    /**
     * A slot whose pages are not resident, from a mapped chunk or a new one; null when the
     * kernel refused a new mapping. The caller has charged {@link #bytes} to the pool's
     * resident bytes.
     */
    PooledBuffer takeFresh() {
        synchronized (this) {
            for (Chunk chunk; (chunk = partial.peekFirst()) != null; ) {
                if (!chunk.unmapped) return takeCleared(chunk);
                partial.pollFirst();
                chunk.partial = false;
            }
        }
        Chunk chunk = Chunk.map(this);
        if (chunk == null) return null;
        pool.count(BufferCounter.MAPS);
        synchronized (this) {
            partial.addFirst(chunk);
            chunk.partial = true;
            return takeCleared(chunk);
        }
    }

    /** Under the lock: takes a cleared slot of {@code chunk}, the first of {@link #partial}. */
    private PooledBuffer takeCleared(Chunk chunk) {
        PooledBuffer slot = chunk.popCleared();
        chunk.live++;
        if (!chunk.hasCleared()) {
            partial.pollFirst();
            chunk.partial = false;
        }
        return slot;
    }

    /**
     * Drops the pages of the longest-idle cached buffer to make room in the pool, keeping its
     * mapping for a later miss. Returns false when nothing was cached.
     */
    boolean clearOldest() {
        PooledBuffer slot;
        synchronized (this) {
            slot = cached.pollLast();
        }
        if (slot == null) return false;
        clear(slot);
        return true;
    }

    /**
     * One trim pass over this class: evicts the cached buffers released at or before
     * {@code idleEpoch} (all of them for {@link Integer#MAX_VALUE}), unmapping every chunk left
     * with no live slot, and unmaps the chunks emptied since the last pass.
     */
    void trim(int idleEpoch) {
        while (true) {
            PooledBuffer slot;
            boolean last;
            synchronized (this) {
                slot = cached.peekLast();
                if (slot == null || slot.releasedEpoch > idleEpoch) break;
                cached.pollLast();
                last = slot.chunk.live == 1;
                if (last) retire(slot.chunk);
            }
            if (last) {
                pool.unmap(slot.chunk);
                pool.unchargeResident(bytes);
            } else {
                clear(slot);
            }
        }
        List<Chunk> empty = new ArrayList<>();
        synchronized (this) {
            for (Chunk chunk : emptied) {
                if (chunk.live == 0 && !chunk.unmapped) {
                    retire(chunk);
                    empty.add(chunk);
                }
            }
            emptied.clear();
        }
        for (Chunk chunk : empty) pool.unmap(chunk);
    }

    /** Under the lock: no slot of {@code chunk} will be handed out again. */
    private static void retire(Chunk chunk) {
        chunk.live = 0;
        chunk.unmapped = true;
    }

    /**
     * Drops the pages of {@code slot}, which is on no list, and puts it back on its chunk's
     * cleared stack; only then is its memory uncharged, so the pool's resident bytes never
     * count less than the pages really held.
     */
    private void clear(PooledBuffer slot) {
        AnonymousMemory.dropPages(slot.pages());
        pool.count(BufferCounter.CLEARS);
        boolean chunkEmpty;
        synchronized (this) {
            Chunk chunk = slot.chunk;
            chunk.pushCleared(slot);
            if (!chunk.partial) {
                partial.addLast(chunk);
                chunk.partial = true;
            }
            chunkEmpty = --chunk.live == 0;
            if (chunkEmpty) emptied.add(chunk);
        }
        pool.unchargeResident(bytes);
        if (chunkEmpty) pool.armTrim();
    }
}
