package io.iotarget.transport;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A listening socket: the one accept loop of every front end. It accepts on the transport's
 * first loop and hands each connection to a loop in turn. Connections past the transport's
 * limits (all connections, or per peer address) are still accepted, then given to the
 * protocol's {@linkplain Protocol#refuse refusing} handler, so the client learns why.
 *
 * <p>When accept(2) fails for want of descriptors or memory, accepting pauses for
 * {@link #ACCEPT_RETRY_NS} (the client waits in the backlog) instead of spinning or stopping.
 */
public final class Listener implements AutoCloseable {
    /** Pause after a failed accept: short against a client's connect timeout, long against a spin. */
    static final long ACCEPT_RETRY_NS = 100_000_000L;
    private static final System.Logger LOG = System.getLogger(Listener.class.getName());
    private static final int BACKLOG = 1024;
    /** Accepts per readiness event, so a connection storm does not starve the loop's other work. */
    private static final int ACCEPTS_PER_EVENT = 64;

    private final Transport transport;
    private final ServerSocketChannel server;
    private final Protocol protocol;
    private final EventLoop acceptLoop;
    private final InetSocketAddress local;
    private SelectionKey key;
    private long lastFailureLogNs;

    private Listener(Transport transport, ServerSocketChannel server, Protocol protocol, EventLoop acceptLoop) throws IOException {
        this.transport = transport;
        this.server = server;
        this.protocol = protocol;
        this.acceptLoop = acceptLoop;
        this.local = (InetSocketAddress) server.getLocalAddress();
    }

    static Listener open(Transport transport, InetSocketAddress address, Protocol protocol, EventLoop acceptLoop) throws IOException {
        ServerSocketChannel server = ServerSocketChannel.open();
        try {
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(address, BACKLOG);
            server.configureBlocking(false);
        } catch (IOException e) {
            server.close();
            throw new IOException("cannot listen on " + address + ": " + e.getMessage(), e);
        }
        Listener listener = new Listener(transport, server, protocol, acceptLoop);
        var registered = new java.util.concurrent.CompletableFuture<Void>();
        acceptLoop.execute(() -> {
            try {
                listener.key = server.register(acceptLoop.selector(), SelectionKey.OP_ACCEPT, listener);
                registered.complete(null);
            } catch (IOException | RuntimeException e) {
                registered.completeExceptionally(e);
            }
        });
        try {
            registered.join();
        } catch (java.util.concurrent.CompletionException e) {
            server.close();
            throw new IOException("cannot listen on " + address + ": " + e.getCause().getMessage(), e.getCause());
        }
        return listener;
    }

    /** The address bound (with the port actually chosen). Any thread. */
    public InetSocketAddress localAddress() {
        return local;
    }

    /** The accept loop found the socket ready. */
    void acceptReady() {
        for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
            SocketChannel channel;
            try {
                channel = server.accept();
            } catch (IOException e) {
                if (!server.isOpen()) return;
                acceptFailed(e);
                return;
            }
            if (channel == null) return;
            InetSocketAddress remote;
            try {
                remote = (InetSocketAddress) channel.getRemoteAddress();
            } catch (IOException e) {
                closeQuietly(channel);
                continue;
            }
            String refusal = transport.limits().admit(remote.getAddress());
            try {
                EventLoop loop = transport.nextLoop();
                Connection connection = new Connection(loop, channel, remote, refusal == null ? this : null);
                loop.execute(() -> {
                    try {
                        connection.register(protocol, refusal);
                    } catch (Throwable e) {
                        connection.fail(e);             // the protocol could not open it (out of memory, a bug): not left registered
                    }
                });
            } catch (Throwable t) {
                // Out of memory between accept and hand-over: neither the socket nor the slot may leak.
                if (refusal == null) transport.limits().release(remote.getAddress());
                closeQuietly(channel);
                acceptLoop.survive(t);
                return;
            }
        }
    }

    /** Out of descriptors or memory (EMFILE, ENFILE, ENOBUFS): pause accepting, log once per pause. */
    private void acceptFailed(IOException e) {
        long now = acceptLoop.nowNs();
        key.interestOps(0);
        if (now - lastFailureLogNs > 10 * ACCEPT_RETRY_NS) {
            lastFailureLogNs = now;
            try {
                LOG.log(System.Logger.Level.WARNING, "accept on " + local + " failed (" + e.getMessage() + "); retrying in "
                                                     + ACCEPT_RETRY_NS / 1_000_000 + " ms");
            } catch (Throwable unlogged) {
                // Logging may need a descriptor too (the process's first log line loads the time
                // zones): its failure must not become the loop's, which also carries connections.
            }
        }
        acceptLoop.schedule(ACCEPT_RETRY_NS, () -> {
            if (key.isValid()) key.interestOps(SelectionKey.OP_ACCEPT);
        });
    }

    /** An accepted connection that counted against the limits has closed. */
    void released(Connection connection) {
        transport.limits().release(connection.remoteAddress().getAddress());
    }

    /** Stops accepting; connections already accepted are not touched. Any thread. */
    @Override
    public void close() {
        try {
            server.close();
        } catch (IOException e) {
            // closing anyway
        }
        acceptLoop.execute(() -> {
            if (key != null) key.cancel();
        });
    }

    private static void closeQuietly(SocketChannel channel) {
        try {
            channel.close();
        } catch (IOException e) {
            // refusing anyway
        }
    }

    /**
     * Server-wide connection limits, shared by every listener of a transport. Any thread.
     * {@code max} counts all admitted connections, {@code maxPerHost} those from one peer address.
     */
    static final class Limits {
        private final int max;
        private final int maxPerHost;
        private final AtomicInteger total = new AtomicInteger();
        private final ConcurrentHashMap<InetAddress, Integer> perHost = new ConcurrentHashMap<>();

        Limits(int max, int maxPerHost) {
            this.max = max;
            this.maxPerHost = maxPerHost;
        }

        /** Null when the connection is admitted (and counted), else why not. */
        String admit(InetAddress host) {
            if (total.incrementAndGet() > max) {
                total.decrementAndGet();
                return "the server has its maximum of " + max + " connections";
            }
            boolean[] over = new boolean[1];
            perHost.compute(host, (h, n) -> {
                int count = n == null ? 0 : n;
                if (count >= maxPerHost) {
                    over[0] = true;
                    return n;
                }
                return count + 1;
            });
            if (over[0]) {
                total.decrementAndGet();
                return "host " + host.getHostAddress() + " has its maximum of " + maxPerHost + " connections";
            }
            return null;
        }

        void release(InetAddress host) {
            total.decrementAndGet();
            perHost.computeIfPresent(host, (h, n) -> n == 1 ? null : n - 1);
        }

        int total() {
            return total.get();
        }
    }
}
