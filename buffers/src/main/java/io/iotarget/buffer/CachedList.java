package io.iotarget.buffer;

/**
 * One stripe of a size class's cached buffers: a list linked through the buffers themselves,
 * newest first, so that pushing and popping never allocate. Any thread; every method holds
 * the list's own lock.
 *
 * <p>Padded to two cache lines: the stripes of a class are allocated one after the other, and
 * without it one thread's lock word and list ends would share a line with the next stripe's,
 * which another thread writes. (HotSpot lays a superclass's fields out before a subclass's,
 * so the padding follows {@link CachedListEnds}' fields.)
 */
final class CachedList extends CachedListEnds {
    @SuppressWarnings("unused") private long pad0, pad1, pad2, pad3, pad4, pad5, pad6, pad7;
    @SuppressWarnings("unused") private long pad8, pad9, pad10, pad11, pad12, pad13;

    synchronized void push(PooledBuffer slot) {
        slot.older = newest;
        slot.newer = null;
        if (newest != null) newest.newer = slot;
        else oldest = slot;
        newest = slot;
    }

    /** The most recently pushed buffer, or null. */
    synchronized PooledBuffer popNewest() {
        PooledBuffer slot = newest;
        if (slot == null) return null;
        newest = slot.older;
        if (newest != null) newest.newer = null;
        else oldest = null;
        slot.older = null;
        return slot;
    }

    /** The longest-cached buffer if it was released at or before {@code idleEpoch}, else null. */
    synchronized PooledBuffer pollOldest(int idleEpoch) {
        PooledBuffer slot = oldest;
        if (slot == null || slot.releasedEpoch > idleEpoch) return null;
        oldest = slot.newer;
        if (oldest != null) oldest.older = null;
        else newest = null;
        slot.newer = null;
        return slot;
    }

    /** The release epoch of the longest-cached buffer, or {@link SizeClass#NONE_CACHED}. */
    synchronized int oldestEpoch() {
        return oldest == null ? SizeClass.NONE_CACHED : oldest.releasedEpoch;
    }

    synchronized boolean isEmpty() {
        return newest == null;
    }
}

/** The two ends of a {@link CachedList}, guarded by its lock. */
abstract class CachedListEnds {
    PooledBuffer newest;
    PooledBuffer oldest;
}
