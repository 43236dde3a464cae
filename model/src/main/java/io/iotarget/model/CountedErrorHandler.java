package io.iotarget.model;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Where a long-lived thread of the server (the engine's releaser, a timer) puts a failure it
 * did not expect instead of dying of it, as Agrona's {@code CountedErrorHandler}: the failure is
 * counted, logged at most once per {@link #LOG_INTERVAL_NS} (with how many were not logged), and
 * after an {@link Error} — out of memory, out of threads — the thread pauses
 * {@link #ERROR_BACKOFF_MS} so that the rest of the process can give some back before it goes on.
 * A thread that survives this way recovers by itself once resources return.
 *
 * <p>Any thread; never throws.
 */
public final class CountedErrorHandler {
    /** At most one log record per this long: a failure storm must not flood the log (or allocate much). */
    static final long LOG_INTERVAL_NS = 10_000_000_000L;
    /** Pause after an Error: long against a spin that allocates, short against a release deadline. */
    static final long ERROR_BACKOFF_MS = 100;

    private final String owner;
    private final System.Logger log;
    private final LongAdder failures = new LongAdder();
    private final AtomicLong lastLogNs = new AtomicLong(System.nanoTime() - LOG_INTERVAL_NS);
    private final AtomicLong unlogged = new AtomicLong();

    /** @param owner what failed, for the log: "iotarget-releaser", "nvmet keep-alive" */
    public CountedErrorHandler(String owner) {
        this.owner = owner;
        this.log = System.getLogger(owner);
    }

    /** Counts, maybe logs, and after an Error pauses; the caller then goes on with its next piece of work. */
    public void onError(Throwable failure) {
        report(failure);
        if (failure instanceof Error) {
            try {
                Thread.sleep(ERROR_BACKOFF_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /**
     * Counts and maybe logs, without pausing: for a thread that must not stop (an event loop)
     * and has already dealt with the failure, e.g. by refusing the one request that met it.
     */
    public void report(Throwable failure) {
        failures.increment();
        try {
            long now = System.nanoTime();
            long last = lastLogNs.get();
            if (now - last >= LOG_INTERVAL_NS && lastLogNs.compareAndSet(last, now)) {
                long skipped = unlogged.getAndSet(0);
                log.log(System.Logger.Level.ERROR, owner + ": unexpected failure, going on"
                                                   + (skipped > 0 ? " (" + skipped + " more since the last report)" : ""),
                        LogText.escape(failure));     // a DH-HMAC-CHAP failure's message may quote the host
            } else {
                unlogged.incrementAndGet();
            }
        } catch (Throwable logging) {
            // Logging needs memory too; the count above is what remains.
        }
    }

    /** {@code task}, with whatever it throws handed to {@link #onError}: for timers whose repetition must not stop. */
    public Runnable guard(Runnable task) {
        return () -> {
            try {
                task.run();
            } catch (Throwable t) {
                onError(t);
            }
        };
    }

    /** Failures handed over so far; 0 in a healthy server. */
    public long count() {
        return failures.sum();
    }
}
