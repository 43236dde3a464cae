package io.iotarget.frontend.nbd;

import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.Counters;
import io.iotarget.model.LogText;
import io.iotarget.model.RateLimitedLog;
import io.iotarget.transport.Connection;
import io.iotarget.transport.ConnectionHandler;
import io.iotarget.transport.Listener;
import io.iotarget.transport.Protocol;
import io.iotarget.transport.Transport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.ClosedChannelException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The NBD front end: serves the exports of its {@link #tree()} on every address it
 * {@linkplain #listen listens} on. Fixed-newstyle handshake (EXPORT_NAME, ABORT, LIST, INFO,
 * GO, STRUCTURED_REPLY, LIST/SET_META_CONTEXT with base:allocation), and every command
 * (READ, WRITE, DISC, FLUSH, TRIM, CACHE, WRITE_ZEROES with NO_HOLE and FAST_ZERO,
 * BLOCK_STATUS with REQ_ONE; FUA and DF), pipelined, many connections per export; TLS with
 * X.509 (NBD_OPT_STARTTLS) and exports open only to the client certificates they list. Every
 * data-moving command is an {@code IoRequest} on the export's device charged to the export's
 * group, submitted through {@link Engine#submit}. Connections live on the transport's event loops; see
 * {@link NbdConnection}.
 *
 * <p>Any thread.
 */
public final class NbdServer implements AutoCloseable {
    /** How long {@link #close()} lets connections answer what they accepted before cutting them. */
    private static final long CLOSE_GRACE_MS = 10_000;
    /**
     * How long a client may take to negotiate before it is disconnected, as QEMU's NBD server
     * does since CVE-2024-7409 ({@code --handshake-limit}, 10 s by default): sockets that
     * connect and say nothing must not hold a connection slot for ever.
     */
    static final Duration HANDSHAKE_LIMIT = Duration.ofSeconds(10);

    private final Engine engine;
    private final ExportTree exports;
    private final Transport transport;
    private final boolean ownsTransport;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final Set<NbdConnection> connections = ConcurrentHashMap.newKeySet();
    private final long handshakeLimitNs;
    private final Counters<NbdCounter> counters;
    /**
     * Why a client's TLS failed: a host without the key may fail as often as it connects, so at
     * most {@link #TLS_FAILURE_LINES_PER_SECOND} lines a second; every failure is counted in
     * {@link NbdCounter#TLS_FAILURES}.
     */
    private final RateLimitedLog tlsFailures;
    /** READs answered EIO because the export's file shrank below them, at the same rate as TLS failures. */
    private final RateLimitedLog shrunkFileReads;
    /**
     * Clients refused their cgroup_per_host group: one line each, within
     * {@link #HOST_GROUP_LINES_PER_SECOND} for the whole server, since a client may connect as
     * often as it likes once the parent's cgroup.max.descendants is reached; every refusal is
     * counted in {@link NbdCounter#HOST_GROUP_REFUSED}.
     */
    private final RateLimitedLog hostGroupFailures;
    private volatile boolean closed;

    static final int TLS_FAILURE_LINES_PER_SECOND = 5;
    static final int HOST_GROUP_LINES_PER_SECOND = 5;
    /** Of a TLS failure's reason, which may quote a client certificate's subject and issuer: enough for both and the CA file. */
    static final int TLS_FAILURE_CHARS = 1024;

    /** A server on the given transport (shared with other front ends; closed by its owner). */
    public NbdServer(Engine engine, Transport transport) {
        this(engine, transport, false, HANDSHAKE_LIMIT);
    }

    /** A server on a transport of its own with the default settings. */
    public NbdServer(Engine engine) throws IOException {
        this(engine, new Transport(Transport.Settings.defaults()), true, HANDSHAKE_LIMIT);
    }

    NbdServer(Engine engine, Duration handshakeLimit) throws IOException {
        this(engine, new Transport(Transport.Settings.defaults()), true, handshakeLimit);
    }

    private NbdServer(Engine engine, Transport transport, boolean ownsTransport, Duration handshakeLimit) {
        this.engine = engine;
        this.exports = new ExportTree(engine);
        this.transport = transport;
        this.ownsTransport = ownsTransport;
        this.handshakeLimitNs = handshakeLimit.toNanos();
        this.counters = new Counters<>(NbdCounter.class)
                .source(NbdCounter.CONNECTIONS, connections::size)
                .source(NbdCounter.UNEXPECTED_ERRORS, transport::unexpectedFailures);
        this.tlsFailures = new RateLimitedLog(System.getLogger(NbdConnection.class.getName()), engine.clock(), TLS_FAILURE_LINES_PER_SECOND,
                                              "NBD TLS failure(s)");
        this.hostGroupFailures = new RateLimitedLog(System.getLogger(NbdConnection.class.getName()), engine.clock(), HOST_GROUP_LINES_PER_SECOND,
                                                    "NBD client(s) refused their cgroup_per_host group");
        this.shrunkFileReads = new RateLimitedLog(System.getLogger(NbdConnection.class.getName()), engine.clock(), TLS_FAILURE_LINES_PER_SECOND,
                                                  "NBD READ(s) past a shrunk file");
    }

    /**
     * A READ met a file backend that shrank beneath it: answered EIO, or (when the reply had
     * begun) its connection ended. Counted; {@code why}, when not null, is logged within
     * {@link #TLS_FAILURE_LINES_PER_SECOND} lines a second. Loop thread.
     */
    void readPastShrunkFile(String why) {
        counters.increment(NbdCounter.SHRUNK_FILE_READS);
        if (why != null) shrunkFileReads.log(why, null);
    }

    /**
     * A client's TLS failed: counted, and logged with {@code why} (clipped at
     * {@link #TLS_FAILURE_CHARS}, escaped) within {@link #TLS_FAILURE_LINES_PER_SECOND}. Any thread.
     */
    void tlsFailed(String why) {
        counters.increment(NbdCounter.TLS_FAILURES);
        tlsFailures.log(LogText.clip(why, TLS_FAILURE_CHARS), null);
    }

    /** A client was refused its cgroup_per_host group (and disconnected): counted, and logged within {@link #HOST_GROUP_LINES_PER_SECOND}. Any thread. */
    void hostGroupRefused(String why) {
        counters.increment(NbdCounter.HOST_GROUP_REFUSED);
        hostGroupFailures.log(why, null);
    }

    /** The server's counters ({@link NbdCounter}). Any thread. */
    public Counters<NbdCounter> counters() {
        return counters;
    }

    long handshakeLimitNs() {
        return handshakeLimitNs;
    }

    /** The configuration: {@code tls/certificates} and {@code exports/<name>/...} ({@link ExportTree}). */
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
        listeners.add(transport.listen(address, new Protocol() {
            @Override
            public ConnectionHandler open(Connection connection) {
                return connect(connection, null);
            }

            @Override
            public ConnectionHandler refuse(Connection connection, String reason) {
                // The client still gets a handshake, and every option it sends is refused with the reason.
                return connect(connection, reason);
            }
        }));
    }

    private NbdConnection connect(Connection connection, String refusal) {
        NbdConnection c = new NbdConnection(this, engine, connection, refusal);
        connections.add(c);
        if (closed) c.shutdown();
        return c;
    }

    /** The addresses being listened on, with the ports actually bound. */
    public List<InetSocketAddress> localAddresses() {
        List<InetSocketAddress> list = new ArrayList<>();
        for (Listener l : listeners) list.add(l.localAddress());
        return list;
    }

    /**
     * Connections that ended because of an unexpected failure (a bug, or the server out of
     * memory), counted by the transport: 0 in a healthy server.
     */
    public long unexpectedErrors() {
        return counters.counter(NbdCounter.UNEXPECTED_ERRORS);
    }

    /** The open connections (tests). */
    java.util.Set<NbdConnection> connections() {
        return java.util.Collections.unmodifiableSet(connections);
    }

    /** A connection ended. */
    void closed(NbdConnection connection) {
        connections.remove(connection);
    }

    /** Connections open now (negotiating or transmitting). */
    public int connectionCount() {
        return (int) counters.counter(NbdCounter.CONNECTIONS);
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
        for (Listener l : listeners) l.close();
        for (NbdConnection c : connections) c.shutdown();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(CLOSE_GRACE_MS);
        while (!connections.isEmpty() && System.nanoTime() < deadline) LockSupport.parkNanos(1_000_000);
        if (ownsTransport) transport.close();
        exports.disableAll();
    }
}
