package io.iotarget.frontend.nbd;

import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The NBD front end: serves the exports of its {@link #tree()} on every address it
 * {@linkplain #listen listens} on. Fixed-newstyle handshake (EXPORT_NAME, ABORT, LIST, INFO,
 * GO, STRUCTURED_REPLY, LIST/SET_META_CONTEXT with base:allocation), and every command
 * (READ, WRITE, DISC, FLUSH, TRIM, CACHE, WRITE_ZEROES with NO_HOLE and FAST_ZERO,
 * BLOCK_STATUS with REQ_ONE; FUA and DF), pipelined, many connections per export. Every
 * data-moving command is an {@code IoRequest} on the export's device charged to the export's
 * group, submitted through {@link Engine#submit}. See {@link NbdConnection} for the threads.
 *
 * <p>Any thread.
 */
public final class NbdServer implements AutoCloseable {
    /** Pause before accepting again after accept(2) failed for lack of descriptors or memory. */
    private static final long ACCEPT_RETRY_NS = 100_000_000L;
    /** How long {@link #close()} lets connections answer what they accepted before cutting them. */
    private static final long CLOSE_GRACE_MS = 10_000;
    /**
     * How long a client may take to negotiate before it is disconnected, as QEMU's NBD server
     * does since CVE-2024-7409 ({@code --handshake-limit}, 10 s by default): sockets that
     * connect and say nothing must not hold threads for ever.
     */
    static final Duration HANDSHAKE_LIMIT = Duration.ofSeconds(10);

    private final Engine engine;
    private final ExportTree exports;
    private final List<ServerSocketChannel> listeners = new CopyOnWriteArrayList<>();
    private final Set<NbdConnection> connections = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    private final java.util.concurrent.atomic.LongAdder unexpectedErrors = new java.util.concurrent.atomic.LongAdder();
    private static final System.Logger LOG = System.getLogger(NbdServer.class.getName());

    private final Duration handshakeLimit;
    private final ScheduledThreadPoolExecutor timer;

    public NbdServer(Engine engine) {
        this(engine, HANDSHAKE_LIMIT);
    }

    NbdServer(Engine engine, Duration handshakeLimit) {
        this.engine = engine;
        this.exports = new ExportTree(engine);
        this.handshakeLimit = handshakeLimit;
        this.timer = new ScheduledThreadPoolExecutor(1, Thread.ofPlatform().daemon().name("nbd-handshake-timer").factory());
        timer.setRemoveOnCancelPolicy(true);
    }

    /**
     * Runs {@code expire} once the handshake limit has passed; the action returned cancels it.
     * On a server already closed it runs at once.
     */
    Runnable limitHandshake(Runnable expire) {
        try {
            ScheduledFuture<?> f = timer.schedule(expire, handshakeLimit.toNanos(), TimeUnit.NANOSECONDS);
            return () -> f.cancel(false);
        } catch (RejectedExecutionException e) {
            expire.run();
            return () -> { };
        }
    }

    /** The exports: {@code exports/<name>/{backend,cgroup,cgroup_id,readonly,description,enable}}. */
    public ConfigTree tree() {
        return exports;
    }

    ExportTree exports() {
        return exports;
    }

    /**
     * Starts accepting connections on {@code address} (port 0 picks a free port; see
     * {@link #localAddresses()}). May be called for several addresses.
     */
    public void listen(InetSocketAddress address) throws IOException {
        if (closed) throw new ClosedChannelException();
        ServerSocketChannel listener = ServerSocketChannel.open();
        try {
            listener.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            listener.bind(address, 128);
        } catch (IOException e) {
            listener.close();
            throw new IOException("cannot listen on " + address + ": " + e.getMessage(), e);
        }
        listeners.add(listener);
        Thread.ofPlatform().daemon().name("nbd-accept-" + listener.getLocalAddress()).start(() -> acceptLoop(listener));
    }

    /** The addresses being listened on, with the ports actually bound. */
    public List<InetSocketAddress> localAddresses() {
        List<InetSocketAddress> list = new ArrayList<>();
        for (ServerSocketChannel l : listeners) {
            try {
                list.add((InetSocketAddress) l.getLocalAddress());
            } catch (IOException e) {
                // closed meanwhile
            }
        }
        return list;
    }

    private void acceptLoop(ServerSocketChannel listener) {
        while (!closed) {
            SocketChannel channel;
            try {
                channel = listener.accept();
            } catch (IOException e) {
                if (closed || !listener.isOpen()) return;
                // EMFILE, ENFILE, ENOBUFS: the client stays in the backlog; try again later rather
                // than spin on it or stop listening for good.
                LockSupport.parkNanos(ACCEPT_RETRY_NS);
                continue;
            }
            NbdConnection connection = new NbdConnection(this, engine, channel);
            connections.add(connection);
            if (closed) connection.shutdown();
            try {
                connection.start();
            } catch (OutOfMemoryError e) {
                // No thread for this client now ("unable to create native thread"): refuse it, keep listening.
                connections.remove(connection);
                closeQuietly(channel);
                LockSupport.parkNanos(ACCEPT_RETRY_NS);
            }
        }
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            // refusing anyway
        }
    }

    /** A connection died of a bug: counted and logged, never thrown at the client's neighbours. */
    void unexpected(RuntimeException e) {
        unexpectedErrors.increment();
        LOG.log(System.Logger.Level.ERROR, "NBD connection failed unexpectedly", e);
    }

    /** Connections that ended because of an unexpected failure (a bug); 0 in a healthy server. */
    public long unexpectedErrors() {
        return unexpectedErrors.sum();
    }

    /** A connection ended. */
    void closed(NbdConnection connection) {
        connections.remove(connection);
    }

    /** Connections open now (negotiating or transmitting). */
    public int connectionCount() {
        return connections.size();
    }

    /**
     * Stops listening, ends every connection the way NBD_CMD_DISC would (requests already
     * accepted are answered, then the socket closes), and disables the exports so their devices
     * and groups are released.
     */
    @Override
    public void close() {
        closed = true;
        exports.shutDown();
        for (ServerSocketChannel l : listeners) {
            try {
                l.close();
            } catch (IOException e) {
                // closing anyway
            }
        }
        for (NbdConnection c : connections) c.shutdown();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_GRACE_MS);
        for (NbdConnection c : List.copyOf(connections)) {
            Thread t = c.readerThread();
            long left = deadline - System.nanoTime();
            if (t == null || left <= 0) continue;
            try {
                t.join(java.time.Duration.ofNanos(left));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        timer.shutdownNow();
        exports.disableAll();
    }
}
