package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.model.CountedErrorHandler;

import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Tasks for one namespace run one after another, in the order given, on a shared executor: a
 * task is started once the stage the one before returned has completed, so a task may hold the
 * lane without holding a thread (preempt-and-abort's wait, {@link Reservations}). Lanes of
 * different namespaces never wait for each other. Any thread may submit; a task runs on the
 * executor (the first of a burst), or on whichever thread completed the stage before it.
 *
 * <p>{@code queued} counts the tasks submitted and not yet done; whoever moves it from 0 starts
 * the lane, and whoever finishes a task with more queued starts the next, so exactly one task
 * runs at a time. A task is added to {@code tasks} before it is counted, so a started lane
 * always finds one.
 */
final class SerialLane {
    private static final CompletableFuture<Void> DONE = CompletableFuture.completedFuture(null);

    private final Executor executor;
    private final CountedErrorHandler errors;
    private final Queue<Supplier<? extends CompletionStage<?>>> tasks = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queued = new AtomicInteger();

    /** @param errors where a task's unexpected failure goes (the lane goes on with the next) */
    SerialLane(Executor executor, CountedErrorHandler errors) {
        this.executor = executor;
        this.errors = errors;
    }

    /** Runs {@code task} after the tasks submitted before it; the next starts once the stage it returns completes. */
    void submit(Supplier<? extends CompletionStage<?>> task) {
        tasks.add(task);
        if (queued.getAndIncrement() == 0) executor.execute(this::runNext);
    }

    /** Runs {@code task} after the tasks submitted before it, the next at once after it. */
    void execute(Runnable task) {
        submit(() -> {
            task.run();
            return DONE;
        });
    }

    /** {@code task}'s value once it ran in turn (or what it threw, for the caller to deal with). */
    <T> CompletableFuture<T> call(Supplier<T> task) {
        CompletableFuture<T> value = new CompletableFuture<>();
        execute(() -> {
            try {
                value.complete(task.get());
            } catch (RuntimeException e) {
                value.completeExceptionally(e);
            }
        });
        return value;
    }

    private void runNext() {
        CompletionStage<?> done;
        try {
            done = tasks.remove().get();
        } catch (RuntimeException e) {
            errors.report(e);
            done = DONE;
        }
        done.whenComplete((value, failure) -> {
            if (failure != null) errors.report(failure);
            if (queued.decrementAndGet() > 0) executor.execute(this::runNext);
        });
    }
}
