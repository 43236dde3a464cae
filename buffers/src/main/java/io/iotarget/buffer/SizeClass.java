package io.iotarget.buffer;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;

/**
 * The free buffers of one size (a power of two from 4 KiB): the cached ones, resident and
 * ready, most recently released first; and the chunks that still have cleared slots. Any
 * thread. Cached buffers sit in stripes ({@link CachedList}s, each with its own lock), and a
 * thread uses its home stripe first (see {@link Stripes}), so that threads do not contend for
 * one lock; the chunk lists are guarded by {@code this}. A lock is held only for list
 * operations — every system call (mmap, madvise, the arena's munmap) runs outside them, and
 * no two are nested.
 */
final class SizeClass {
    /** {@link #oldestCachedEpoch()} when nothing is cached. */
    static final int NONE_CACHED = Integer.MAX_VALUE;

    final BufferPool pool;
    final int bytes;
    final int slotsPerChunk;

    /** Free and resident, in stripes. */
    private final CachedList[] stripes;
    /** Mapped chunks with cleared slots (unmapped ones are dropped when met). */
    private final ArrayDeque<Chunk> partial = new ArrayDeque<>();
    /** Chunks whose last live slot was cleared on the fast path: unmapped by the next trim. */
    private final List<Chunk> emptied = new ArrayList<>();

    SizeClass(BufferPool pool, int bytes, int chunkBytes) {
        this.pool = pool;
        this.bytes = bytes;
        this.slotsPerChunk = Math.max(1, chunkBytes / bytes);
        stripes = new CachedList[Stripes.COUNT];
        for (int i = 0; i < stripes.length; i++) stripes[i] = new CachedList();
    }

    /** A cached buffer, from the home stripe if it has one, else from any; null when none is cached. */
    PooledBuffer takeCached() {
        int home = Stripes.home();
        for (int i = 0; i < stripes.length; i++) {
            PooledBuffer slot = stripes[(home + i) & Stripes.MASK].popNewest();
            if (slot != null) return slot;
        }
        return null;
    }

    void putCached(PooledBuffer slot) {
        stripes[Stripes.home()].push(slot);
    }

    boolean hasCached() {
        for (CachedList stripe : stripes) {
            if (!stripe.isEmpty()) return true;
        }
        return false;
    }

    /** The trim epoch at which the longest-idle cached buffer was released, or {@link #NONE_CACHED}. */
    int oldestCachedEpoch() {
        int oldest = NONE_CACHED;
        for (CachedList stripe : stripes) oldest = Math.min(oldest, stripe.oldestEpoch());
        return oldest;
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
        while (true) {
            int oldest = NONE_CACHED;
            CachedList victim = null;
            for (CachedList stripe : stripes) {
                int epoch = stripe.oldestEpoch();
                if (epoch < oldest) {
                    oldest = epoch;
                    victim = stripe;
                }
            }
            if (victim == null) return false;
            PooledBuffer slot = victim.pollOldest(NONE_CACHED);     // null if another thread took it meanwhile
            if (slot != null) {
                clear(slot);
                return true;
            }
        }
    }

    /**
     * One trim pass over this class: evicts the cached buffers released at or before
     * {@code idleEpoch} (all of them for {@link Integer#MAX_VALUE}), unmapping every chunk left
     * with no live slot, and unmaps the chunks emptied since the last pass.
     */
    void trim(int idleEpoch) {
        for (CachedList stripe : stripes) {
            for (PooledBuffer slot; (slot = stripe.pollOldest(idleEpoch)) != null; ) {
                boolean last;
                synchronized (this) {
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
        AnonymousMemory.dropPages(slot.pages(bytes));
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
