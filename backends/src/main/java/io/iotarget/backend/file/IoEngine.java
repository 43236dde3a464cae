package io.iotarget.backend.file;

import io.iotarget.backend.Backend;
import io.iotarget.backend.Completion;
import io.iotarget.backend.ErrnoException;
import io.iotarget.backend.IoExecutor;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.io.IOException;

/**
 * How blocking backends run their IO without holding the submitting thread: one io_uring
 * ({@link IoRing}) for the files and block devices of an engine, or, where io_uring is
 * unavailable, a bounded pool of IO threads doing positional calls ({@link IoThreads}). An
 * io_uring engine keeps a small pool too, for the rare operations it does not put on the ring
 * (verify, compare, prefetch, and write-zeroes a file system cannot do with fallocate).
 *
 * <p>One per {@code Engine}. Any thread; {@link #close} once, after every request it started
 * has ended.
 */
public final class IoEngine implements IoExecutor, AutoCloseable {
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

    /** The ring, or null for the thread engine. */
    IoRing ring() {
        return ring;
    }

    /** What a blocking backend does unless it has a way of its own: the request on one of the engine's IO threads. */
    @Override
    public IoStatus startOnThreads(Backend backend, IoRequest io, Completion done) {
        return threads.execute(backend, io, done);
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
        return ring == null ? NO_PLUG : ring.plug();
    }

    /** Closes the ring (its completion thread ends, its descriptor is closed) and ends the IO threads. */
    @Override
    public void close() {
        if (ring != null) ring.close();
        threads.close();
    }
}
