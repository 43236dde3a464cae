package io.iotarget.transport;

import io.iotarget.model.Clock;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The server's TCP machinery: a few {@link EventLoop}s (one per core by default) that carry
 * every connection of every front end, the {@link Listener}s, and the limits they share. A
 * thousand idle connections cost a thousand small objects and selection keys, no threads.
 *
 * <p>Any thread.
 */
public final class Transport implements AutoCloseable {
    /**
     * Limits and timings.
     *
     * @param loops                 event loop threads; 0 means one per available processor
     * @param sendTimeout           a peer that takes none of its queued replies for this long is disconnected
     * @param maxConnections        connections the server keeps at once, over all listeners
     * @param maxConnectionsPerHost connections from one peer address
     * @param sendBufferBytes       SO_SNDBUF of every connection; 0 leaves the kernel's auto-tuning
     * @param poll                  how long a loop busy-polls after its last work before it sleeps; zero: never
     */
    public record Settings(int loops, Duration sendTimeout, int maxConnections, int maxConnectionsPerHost, int sendBufferBytes,
                           Duration poll) {
        /** Default {@link #sendBufferBytes}: see {@link #defaults()}. */
        public static final int DEFAULT_SEND_BUFFER = 512 * 1024;

        /**
         * The defaults: one loop per core; 30 s to take a reply (the Linux NVMe host's own IO
         * timeout, so a host that stalls that long has given up anyway); 10,000 connections in all
         * and 2,000 per host (a kernel NBD client uses up to 16 per device, an NVMe/TCP host one per
         * queue per controller — generous for real hosts, finite for a flood); a 512 KiB send
         * buffer, which the kernel doubles for its bookkeeping: 1 MiB in flight per connection, 10
         * GB/s at a 100 µs round trip. Auto-tuning grows every busy connection's buffer to
         * tcp_wmem's 4 MiB; with the event loop's non-blocking writes that runs 1 MiB reads from
         * memory over loopback at 0.8x of what the bounded buffer gets (docs/decisions.md,
         * bench/results/datapath.md), and it lets a client that stops reading pin 4 MiB of kernel
         * memory instead of 1. No busy-polling: it buys queue-depth-1 latency with CPU, which an
         * operator chooses (docs/decisions.md).
         */
        public static Settings defaults() {
            return new Settings(0, Duration.ofSeconds(30), 10_000, 2_000, DEFAULT_SEND_BUFFER, Duration.ZERO);
        }

        public Settings {
            if (loops < 0) throw new IllegalArgumentException("loops " + loops + " (expected: >= 0)");
            if (sendTimeout.isNegative() || sendTimeout.isZero()) throw new IllegalArgumentException("sendTimeout " + sendTimeout + " (expected: > 0)");
            if (maxConnections < 1) throw new IllegalArgumentException("maxConnections " + maxConnections + " (expected: >= 1)");
            if (maxConnectionsPerHost < 1) throw new IllegalArgumentException("maxConnectionsPerHost " + maxConnectionsPerHost + " (expected: >= 1)");
            if (sendBufferBytes < 0) throw new IllegalArgumentException("sendBufferBytes " + sendBufferBytes + " (expected: >= 0)");
            if (poll.isNegative()) throw new IllegalArgumentException("poll " + poll + " (expected: >= 0)");
        }
    }

    private final EventLoop[] loops;
    /**
     * TLS handshakes' heavy steps (key exchange, signing, checking certificates: about a
     * millisecond each) run here, off the loops; half as many threads as loops, so a flood of
     * handshakes leaves the loops at least half the cores. Threads start with the first TLS
     * connection and then stay.
     */
    private final ThreadPoolExecutor tlsTasks;
    private final Listener.Limits limits;
    private final AtomicInteger next = new AtomicInteger();
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();

    /** Loops on the system clock. */
    public Transport(Settings settings) throws IOException {
        this(settings, Clock.SYSTEM);
    }

    /** Loops whose timeouts and deadlines are measured on {@code clock} (tests: a manual one). */
    public Transport(Settings settings, Clock clock) throws IOException {
        int n = settings.loops() > 0 ? settings.loops() : Runtime.getRuntime().availableProcessors();
        this.loops = new EventLoop[n];
        int tlsThreads = Math.max(1, n / 2);
        AtomicInteger tlsThreadNumber = new AtomicInteger();
        this.tlsTasks = new ThreadPoolExecutor(tlsThreads, tlsThreads, 0, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                task -> Thread.ofPlatform().daemon().name("iotarget-tls-" + tlsThreadNumber.getAndIncrement()).unstarted(task));
        for (int i = 0; i < n; i++) loops[i] = new EventLoop("iotarget-loop-" + i, clock, settings.sendTimeout().toNanos(), settings.sendBufferBytes(),
                                                  settings.poll().toNanos(), tlsTasks);
        for (EventLoop loop : loops) loop.start();
        this.limits = new Listener.Limits(settings.maxConnections(), settings.maxConnectionsPerHost());
    }

    /** Starts accepting on {@code address} (port 0 picks one) for {@code protocol}. */
    public Listener listen(InetSocketAddress address, Protocol protocol) throws IOException {
        Listener listener = Listener.open(this, address, protocol, loops[0]);
        listeners.add(listener);
        return listener;
    }

    /** Connections counted against the limits now. */
    public int connectionCount() {
        return limits.total();
    }

    /**
     * Failures that were not a peer's doing — a protocol handler that threw, an Error such as
     * running out of memory — over all loops; each was logged (rate-limited). 0 in a healthy server.
     */
    public long unexpectedFailures() {
        long n = 0;
        for (EventLoop loop : loops) n += loop.unexpectedFailures();
        return n;
    }

    /** Any loop, for work that is not a connection's (timers of a protocol object). */
    public EventLoop loop() {
        return loops[0];
    }

    Listener.Limits limits() {
        return limits;
    }

    EventLoop nextLoop() {
        return loops[Math.floorMod(next.getAndIncrement(), loops.length)];
    }

    /** Stops listening, closes every connection (handlers hear it) and ends the loops. */
    @Override
    public void close() {
        for (Listener l : listeners) l.close();
        List<EventLoop> all = new ArrayList<>(List.of(loops));
        for (EventLoop loop : all) loop.stop();
        tlsTasks.shutdownNow();
    }
}
