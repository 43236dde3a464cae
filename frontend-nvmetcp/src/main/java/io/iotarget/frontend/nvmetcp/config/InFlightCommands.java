package io.iotarget.frontend.nvmetcp.config;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The IO commands an enabled namespace has on the engine, so that disabling it waits for them
 * before its device and group are let go, as {@code nvmet_ns_disable} kills and drains the
 * namespace's percpu_ref. Without the wait, a file namespace's backend would be closed under
 * running IO, and a group could be removed while IO charged to it is still moving.
 *
 * <p>Any thread: queue readers enter, engine completion threads exit, the configuration thread
 * closes and awaits. {@code count} holds the commands in flight, with its sign bit set once
 * closed.
 */
public final class InFlightCommands {
    private static final int CLOSED = Integer.MIN_VALUE;

    private final AtomicInteger count = new AtomicInteger();
    private final CompletableFuture<Void> drained = new CompletableFuture<>();

    /** A command is about to be submitted; false once the namespace is being disabled. */
    public boolean enter() {
        int n;
        do {
            n = count.get();
            if (n < 0) return false;
        } while (!count.compareAndSet(n, n + 1));
        return true;
    }

    /** The command's last request completed. */
    public void exit() {
        if (count.decrementAndGet() == CLOSED) drained.complete(null);
    }

    /** Refuses new commands from now on. Once. */
    void close() {
        if (count.getAndUpdate(n -> n | CLOSED) == 0) drained.complete(null);
    }

    /** Waits, uninterruptibly, until the commands in flight when it was closed have exited. */
    public void await() {
        drained.join();
    }
}
