package io.iotarget.frontend.nvmetcp.reservation;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;

/**
 * One controller's reservation notices (log page 0x80) and notification masks (feature 0x82),
 * as nvmet keeps them: a FIFO of {@link #CAPACITY}; each log page read takes the oldest entry;
 * the log page count (LPC) grows by one per notice and is never 0; a notice that finds the
 * FIFO full is lost, and the next queued entry's count jumps by the notices lost. Not thread-safe: its controller's lock.
 *
 * <pre>
 *  log page 0x80 (64 bytes): 0 LPC u64 | 8 type u8 | 9 NALP u8 (entries still queued) | 12 NSID u32
 * </pre>
 */
public final class NoticeLog {
    /** NVMET_PR_LOG_QUEUE_SIZE. */
    static final int CAPACITY = 64;
    public static final int PAGE_BYTES = 64;
    static final int PAGE_COUNT = 0;
    static final int PAGE_TYPE = 8;
    static final int PAGE_AVAILABLE = 9;
    static final int PAGE_NSID = 12;
    /** Feature 0x82 CDW11: REGPRE (bit 1), RESREL (bit 2), RESPRE (bit 3) mask the notice types 1, 2, 3. */
    public static final int MASK_BITS = 0b1110;

    private final long[] counts = new long[CAPACITY];
    private final int[] types = new int[CAPACITY];
    private final int[] nsids = new int[CAPACITY];
    private int head;
    private int size;
    private long count;
    private final Map<Integer, Integer> masks = new HashMap<>();

    /** Queues a notice unless the namespace's mask suppresses its type or the FIFO is full; true when queued. */
    public boolean add(int nsid, int type) {
        if ((mask(nsid) & 1 << type) != 0) return false;
        count++;
        if (count == 0) count = 1;
        if (size == CAPACITY) return false;            // lost: the next queued entry's count shows the gap
        int at = (head + size) % CAPACITY;
        counts[at] = count;
        types[at] = type;
        nsids[at] = nsid;
        size++;
        return true;
    }

    /** Writes the oldest notice into {@code page} (64 bytes, zeroed) and drops it; an empty log leaves the page zero. */
    public void take(ByteBuffer page) {
        if (size == 0) return;
        page.putLong(PAGE_COUNT, counts[head]);
        page.put(PAGE_TYPE, (byte) types[head]);
        page.put(PAGE_AVAILABLE, (byte) (size - 1));
        page.putInt(PAGE_NSID, nsids[head]);
        head = (head + 1) % CAPACITY;
        size--;
    }

    public boolean isEmpty() {
        return size == 0;
    }

    /** The namespace's notification mask (feature 0x82's CDW11 bits). */
    public int mask(int nsid) {
        return masks.getOrDefault(nsid, 0);
    }

    public void mask(int nsid, int bits) {
        masks.put(nsid, bits & MASK_BITS);
    }
}
