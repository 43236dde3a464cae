package io.iotarget.backend.file;

import io.iotarget.model.uring.LoopRing;

/**
 * An IO engine's slots on one event loop's io_uring ({@link LoopRing}): a file request started
 * on an io_uring loop's thread goes on that loop's ring, is submitted by the loop's next wait
 * together with everything else the pass prepared, and completes on the loop — the reply needs
 * no other thread. The same {@link RingSlot} steps as on the shared {@link IoRing} (PREFLUSH,
 * data in pieces, FUA, retries); only where the SQEs go differs. When all {@link #SLOTS} are
 * busy the request takes the shared ring instead (its completion then comes back through the
 * loop's task queue, as every completion did before).
 *
 * <p>The loop's thread only: made by {@link IoEngine#loopSlots()} on it, and every method
 * runs there.
 */
final class LoopSlots implements SlotRing, LoopRing.Owner {
    /** Requests one loop keeps on its own ring; beyond, the shared ring takes them. */
    static final int SLOTS = 256;

    private final LoopRing ring;
    private final int owner;
    private final IoThreads fallback;
    private final RingSlot[] slots = new RingSlot[SLOTS];
    private final int[] free = new int[SLOTS];
    private int freeCount;
    // The operation each slot prepared, kept until it is pushed (and pushed again on a retry).
    private final byte[] opcodes = new byte[SLOTS];
    private final int[] fds = new int[SLOTS];
    private final long[] offsets = new long[SLOTS];
    private final long[] addresses = new long[SLOTS];
    private final int[] lengths = new int[SLOTS];
    private final int[] opFlags = new int[SLOTS];

    LoopSlots(LoopRing ring, IoThreads fallback) {
        this.ring = ring;
        this.fallback = fallback;
        this.owner = ring.register(this);
        for (int i = 0; i < SLOTS; i++) {
            slots[i] = new RingSlot(this, i);
            free[i] = SLOTS - 1 - i;
        }
        freeCount = SLOTS;
    }

    /** A free slot, or null when every slot is busy. */
    RingSlot take() {
        return freeCount == 0 ? null : slots[free[--freeCount]];
    }

    @Override
    public void prepare(int index, byte opcode, int fd, long offset, long address, int length, int flags) {
        opcodes[index] = opcode;
        fds[index] = fd;
        offsets[index] = offset;
        addresses[index] = address;
        lengths[index] = length;
        opFlags[index] = flags;
    }

    @Override
    public void push(int index) {
        ring.prepare(owner, index, opcodes[index], fds[index], offsets[index], addresses[index], lengths[index], opFlags[index]);
    }

    @Override
    public void release(RingSlot slot) {
        free[freeCount++] = slot.index;
    }

    @Override
    public IoThreads fallback() {
        return fallback;
    }

    @Override
    public void completed(int tag, int res, int flags) {
        slots[tag].completed(res);
    }

    @Override
    public boolean busy() {
        return freeCount < SLOTS;
    }
}
