package io.iotarget.backend.file;

/**
 * Where a {@link RingSlot} puts its SQEs and gives itself back: the engine's shared
 * {@link IoRing} (completions on its thread) or an event loop's {@link LoopSlots} (completions
 * on that loop). Called by the slot's owner of the moment.
 */
interface SlotRing {
    /** Writes the slot's next operation ({@code index} is the slot's); it goes to the kernel at {@link #push}. */
    void prepare(int index, byte opcode, int fd, long offset, long address, int length, int opFlags);

    /** Hands the slot's prepared operation to the kernel (or queues it for the next submission). */
    void push(int index);

    /** The slot's request has ended (or moved to the pool): the slot is free again. */
    void release(RingSlot slot);

    /** The IO threads, for what the ring refuses to do. */
    IoThreads fallback();
}
