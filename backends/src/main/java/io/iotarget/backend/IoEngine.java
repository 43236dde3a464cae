package io.iotarget.backend;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * How blocking backends run their IO without holding the submitting thread: io_uring
 * ({@link IoRing}) for the files and block devices of an engine, or, where io_uring is
 * unavailable, a bounded pool of IO threads doing positional calls ({@link IoThreads}). An
 * io_uring engine keeps a small pool too, for the rare operations it does not put on the ring
 * (verify, compare, prefetch, and write-zeroes a file system cannot do with fallocate).
 *
 * <p>An io_uring engine has one shared ring, reaped by its own thread, and a ring for each
 * thread that asked for one with {@link #ownRing} (the front ends' event loops): requests go
 * to the ring of the thread that starts them, the shared one when it has none.
 *
 * <p>One per {@code Engine}. Any thread; {@link #close} once, after every request it started
 * has ended.
 */
public final class IoEngine implements AutoCloseable {
    /** Which engine to use: the config's {@code server.io_engine}. */
    public enum Kind {
        /** io_uring where io_uring_setup works (not blocked by kernel.io_uring_disabled or seccomp), else threads. */
        AUTO,
        /** io_uring, or fail to start. */
        IO_URING,
        /** The thread pool, even where io_uring works. */
        THREADS
    }

    /** Submission queue entries of the ring: requests on the ring at once, all devices together; beyond, they wait in FIFO order. */
    public static final int RING_ENTRIES = 512;
    /** IO threads of the thread engine: 4 KiB random IO on a fast disk needs one per request in flight (measured up to QD32). */
    public static final int POOL_THREADS = 64;
    /** IO threads beside a ring, for the operations it does not handle. */
    public static final int RING_POOL_THREADS = 8;

    /** A thread's gathering of ring submissions, closed by the outermost {@link #plug()}'s close. */
    public interface Plug extends AutoCloseable {
        @Override
        void close();
    }

    private static final Plug NO_PLUG = () -> {
    };
    private static final String THREAD_NAME = "iotarget-io";
    private static final System.Logger LOG = System.getLogger(IoEngine.class.getName());

    private final Kind kind;
    private final IoRing ring;
    private final IoThreads threads;
    /** The calling thread's own ring, if it asked for one. */
    private final ThreadLocal<IoRing> owned = new ThreadLocal<>();
    /** Every owned ring, to close with the engine. Guarded by itself. */
    private final List<IoRing> ownedRings = new ArrayList<>();

    private IoEngine(Kind kind, IoRing ring, IoThreads threads) {
        this.kind = kind;
        this.ring = ring;
        this.threads = threads;
    }

    /**
     * Starts an engine of {@code kind}.
     *
     * @throws IOException {@link Kind#IO_URING} was asked for and io_uring_setup failed
     */
    public static IoEngine open(Kind kind) throws IOException {
        return switch (kind) {
            case THREADS -> new IoEngine(Kind.THREADS, null, new IoThreads(POOL_THREADS, THREAD_NAME));
            case IO_URING -> withRing(RING_ENTRIES);
            case AUTO -> {
                try {
                    yield withRing(RING_ENTRIES);
                } catch (ErrnoException e) {
                    LOG.log(System.Logger.Level.INFO, "io_uring unavailable (" + e.getMessage() + "): backend IO runs on up to "
                            + POOL_THREADS + " IO threads");
                    yield open(Kind.THREADS);
                }
            }
        };
    }

    /** An io_uring engine whose ring has {@code entries} slots (tests use small rings). */
    static IoEngine withRing(int entries) throws ErrnoException {
        IoThreads threads = new IoThreads(RING_POOL_THREADS, THREAD_NAME);
        return new IoEngine(Kind.IO_URING, IoRing.open(entries, threads), threads);
    }

    /** The engine chosen: {@link Kind#IO_URING} or {@link Kind#THREADS}, never AUTO. */
    public Kind kind() {
        return kind;
    }

    /** The ring a request started on this thread goes to (its own, else the shared one), or null for the thread engine. */
    IoRing ring() {
        IoRing own = owned.get();
        return own != null ? own : ring;
    }

    /**
     * Gives the calling thread a ring of its own for the requests it starts from now on: the
     * kernel signals {@code eventFd} (an eventfd the thread waits on, such as its selector's
     * wake-up; the kernel keeps its own reference) when completions arrive, and the thread must
     * then call {@link OwnRing#reap}, which runs their completions on it. Null — the thread
     * goes on using the shared ring — on the thread engine or when the ring cannot be set up
     * (logged). Once per thread.
     *
     * @throws IllegalStateException the thread already has a ring
     */
    public OwnRing ownRing(int eventFd) {
        if (ring == null) return null;
        if (owned.get() != null) throw new IllegalStateException(Thread.currentThread().getName() + " already has a ring");
        IoRing own;
        try {
            own = IoRing.openOwned(RING_ENTRIES, threads, eventFd);
        } catch (ErrnoException e) {
            LOG.log(System.Logger.Level.WARNING, Thread.currentThread().getName() + " keeps the shared io_uring: " + e.getMessage());
            return null;
        }
        synchronized (ownedRings) {
            ownedRings.add(own);
        }
        owned.set(own);
        return new OwnRing(own);
    }

    /** A thread's own ring ({@link #ownRing}). Its thread only. */
    public final class OwnRing {
        private final IoRing ring;

        private OwnRing(IoRing ring) {
            this.ring = ring;
        }

        /** Runs the completions that have arrived (a no-op when none has, or once closed). */
        public void reap() {
            ring.reap();
        }

        /**
         * The thread stops: waits for the requests on the ring, running their completions
         * here, and closes it; the thread's later requests go to the shared ring.
         */
        public void close() {
            owned.remove();
            synchronized (ownedRings) {
                ownedRings.remove(ring);
            }
            ring.close();
        }
    }

    IoThreads threads() {
        return threads;
    }

    /**
     * Gathers this thread's ring submissions until the returned plug is closed, as the
     * kernel's blk_start_plug/blk_finish_plug do: requests started meanwhile are put on the
     * ring and go to the kernel in one io_uring_enter when the outermost plug closes. Plugs
     * nest; an unplugged thread submits each request at once. Close it on the thread that
     * opened it, before the thread blocks (what it gathered waits until then). A no-op for the
     * thread engine.
     */
    public Plug plug() {
        IoRing r = ring();
        return r == null ? NO_PLUG : r.plug();
    }

    /**
     * Closes the rings (the threads' own, reaping what is left on them, then the shared one,
     * whose completion thread ends) and ends the IO threads.
     */
    @Override
    public void close() {
        List<IoRing> own;
        synchronized (ownedRings) {
            own = List.copyOf(ownedRings);
        }
        for (IoRing r : own) r.close();
        if (ring != null) ring.close();
        threads.close();
    }
}
