package io.iotarget.buffer;

/**
 * Receives a buffer that {@link BufferAccount#take} could not give at once. Called exactly once
 * per queued take that is not {@linkplain BufferAccount#cancel cancelled}, on whichever thread
 * released the memory — possibly before {@code take} has returned on the taking thread. It must
 * not block (hand the buffer to the owner's event loop or queue) and should not throw: whatever
 * it throws, an Error included, goes to the thread's uncaught-exception handler, the pool goes on
 * serving, and the waiter still owns the buffer.
 */
@FunctionalInterface
public interface BufferWaiter {
    /** {@code buffer} is now the waiter's, exactly as if {@code take} had returned it. */
    void available(PooledBuffer buffer);
}
