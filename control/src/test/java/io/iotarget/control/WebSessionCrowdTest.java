package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.ProcessResources;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 29 hole 5: whoever holds a read-only web session cookie keeps a whole address's worth
 * of keep-alive connections ({@link ControlEndpoint#MAX_CONNECTIONS_PER_PEER}), each proven by
 * the cookie, re-asking on every one and reconnecting every one the server closes. The owner's
 * CLI, from the same address, must read at once every time; the sessions hold at most their
 * caps; when the crowd leaves, connections, threads and descriptors return to the baseline.
 * Before sessions had caps of their own, the first CLI read exited 3 (its connection closed at
 * once: every connection at the cap had shown a session).
 */
@Timeout(180)
class WebSessionCrowdTest {
    /** CLI reads while the crowd keeps at it. */
    private static final int READS = 10;
    /** Threads: carriers of the requests' virtual threads and JIT compilers; descriptors: jar files of classes first used meanwhile. */
    private static final ProcessResources.Tolerance TOLERANCE = new ProcessResources.Tolerance(4, 8, 16 << 20, 64 << 20, 128L << 20);
    @TempDir
    Path tokens;

    @Test
    void oneSessionsKeepAliveConnectionsNeverLockOutTheOwner() throws Exception {
        crowd(1);
    }

    @Test
    void manySessionsKeepAliveConnectionsNeverLockOutTheOwner() throws Exception {
        crowd(6);
    }

    private void crowd(int sessions) throws Exception {
        JsonNode config = Server.defaultConfig();
        ((ObjectNode) config.get("server")).put("control", "127.0.0.1:0").put("nbd", "127.0.0.1:0");
        try (Server server = Server.start(config, tokens)) {
            String control = ControlEndpoint.hostPort(server.controlAddress());
            List<String> cookies = new ArrayList<>();
            for (int i = 0; i < sessions; i++) cookies.add(login(server, control));
            for (int i = 0; i < 5; i++) assertEquals(0, cli(control).exit());         // warm-up: classes, loops, pools
            List<Viewer> warm = new ArrayList<>();
            for (int i = 0; i < 4; i++) warm.add(new Viewer(server, control, cookies.get(i % sessions)));
            for (Viewer v : warm) v.close();
            awaitNoConnections(server);
            ProcessResources baseline = settled();

            List<Viewer> viewers = new ArrayList<>();
            for (int i = 0; i < ControlEndpoint.MAX_CONNECTIONS_PER_PEER; i++) viewers.add(new Viewer(server, control, cookies.get(i % sessions)));
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger rounds = new AtomicInteger();
            AtomicInteger reconnects = new AtomicInteger();
            AtomicInteger maxSessions = new AtomicInteger();
            AtomicReference<Throwable> failed = new AtomicReference<>();
            Thread crowd = Thread.ofPlatform().name("session-crowd").start(() -> {
                try {
                    while (!stop.get()) {
                        for (Viewer v : viewers) {
                            if (stop.get()) break;
                            if (!v.ask()) {
                                reconnects.incrementAndGet();
                                v.reconnect();
                            }
                        }
                        maxSessions.accumulateAndGet(server.controlLoad().sessions(), Math::max);
                        rounds.incrementAndGet();
                    }
                } catch (Throwable t) {
                    failed.set(t);
                }
            });
            List<Long> readMs = new ArrayList<>();
            ControlEndpoint.Load during;
            try {
                for (int i = 0; i < READS || rounds.get() < 2; i++) {
                    long t0 = System.nanoTime();
                    Cli read = cli(control);
                    readMs.add((System.nanoTime() - t0) / 1_000_000);
                    assertEquals(0, read.exit(), "CLI read " + i + " with " + sessions + " session(s) crowding the address: " + read.err()
                                                 + " (endpoint " + server.controlLoad() + ")");
                    ControlEndpoint.Load load = server.controlLoad();
                    assertTrue(load.sessions() <= ControlEndpoint.MAX_SESSION_CONNECTIONS, "sessions hold " + load);
                    assertTrue(load.sessions() <= sessions * ControlEndpoint.MAX_CONNECTIONS_PER_SESSION, "sessions hold " + load);
                }
                during = server.controlLoad();
            } finally {
                stop.set(true);
                crowd.join(30_000);
                for (Viewer v : viewers) v.close();
            }
            assertNull(failed.get(), () -> "the crowd: " + failed.get());
            System.out.printf("[web-session-crowd] %d session(s), %d keep-alive connections re-asking: %d rounds, %d reconnects; "
                              + "sessions held at most %d (caps %d each, %d in all); %d CLI reads, all exit 0, median %d ms, slowest %d ms; "
                              + "endpoint during it %s%n",
                    sessions, viewers.size(), rounds.get(), reconnects.get(), maxSessions.get(), ControlEndpoint.MAX_CONNECTIONS_PER_SESSION,
                    ControlEndpoint.MAX_SESSION_CONNECTIONS, readMs.size(), readMs.stream().sorted().toList().get(readMs.size() / 2),
                    readMs.stream().mapToLong(Long::longValue).max().orElse(0), during);
            assertTrue(reconnects.get() > 0, "the server closed connections past the sessions' caps");
            assertTrue(maxSessions.get() <= Math.min(ControlEndpoint.MAX_SESSION_CONNECTIONS, sessions * ControlEndpoint.MAX_CONNECTIONS_PER_SESSION),
                    "sessions held " + maxSessions.get());

            awaitNoConnections(server);
            assertEquals(0, cli(control).exit());
            String excess = ProcessResources.awaitNear(baseline, TOLERANCE, 20_000);
            System.out.println("[web-session-crowd] after: " + ProcessResources.now() + " (baseline " + baseline + ")");
            assertNull(excess, "back to the baseline " + baseline);
        }
    }

    /** A browser's keep-alive connection showing one session's cookie: the page's {@code /v1/devices}, again and again. */
    private static final class Viewer implements AutoCloseable {
        private final int port;
        private final byte[] request;
        private Socket socket;
        private InputStream in;

        Viewer(Server server, String control, String cookie) throws IOException {
            port = server.controlAddress().getPort();
            request = ("GET /v1/devices HTTP/1.1\r\nHost: " + control + "\r\nCookie: " + cookie + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1);
            reconnect();
        }

        /** A new connection, asked once (the server may close it for a newer one before it answers). */
        void reconnect() throws IOException {
            close();
            socket = new Socket("127.0.0.1", port);
            socket.setSoTimeout(30_000);
            in = new BufferedInputStream(socket.getInputStream());
            ask();
        }

        /** One request and its whole answer; false when the server closed the connection instead. */
        boolean ask() throws IOException {
            try {
                socket.getOutputStream().write(request);
                String head = head(in);
                if (head == null) return false;
                assertTrue(head.startsWith("HTTP/1.1 200 "), head);
                int length = 0;
                for (String line : head.split("\r\n")) {
                    if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) length = Integer.parseInt(line.substring(15).strip());
                }
                return in.readNBytes(length).length == length;
            } catch (java.net.SocketException closed) {                // reset: the server closed it with our request unread
                return false;
            }
        }

        @Override
        public void close() throws IOException {
            if (socket != null) socket.close();
        }
    }

    /** The response's head up to the blank line, or null at the end of the stream. */
    private static String head(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        for (int b, n = 0; (b = in.read()) >= 0; ) {
            head.write(b);
            n = (b == '\r' || b == '\n') ? n + 1 : 0;
            if (n == 4) return head.toString(StandardCharsets.ISO_8859_1);
        }
        return null;
    }

    /** A session cookie ({@code iotarget-PORT=SESSION}), as a browser gets it from {@code iotarget web}'s address. */
    private String login(Server server, String control) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int exit = Main.run(new String[]{"--control", control, "web"}, Map.of("IOTARGET_RUNTIME_DIR", tokens.toString()),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        assertEquals(0, exit);
        String printed = out.toString(StandardCharsets.UTF_8);
        String target = printed.substring(printed.indexOf("/login?code="), printed.indexOf(' ', "open ".length()));
        try (Socket s = new Socket("127.0.0.1", server.controlAddress().getPort())) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(("GET " + target + " HTTP/1.1\r\nHost: " + control + "\r\nConnection: close\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
            String head = head(s.getInputStream());
            assertTrue(head != null && head.startsWith("HTTP/1.1 303 "), String.valueOf(head));
            for (String line : head.split("\r\n")) {
                if (line.toLowerCase(Locale.ROOT).startsWith("set-cookie:")) return line.substring(11).strip().split(";", 2)[0];
            }
            throw new AssertionError("no cookie in " + head);
        }
    }

    private record Cli(int exit, String err) {
    }

    /** The owner's {@code iotarget read io.stat}. */
    private Cli cli(String control) {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = Main.run(new String[]{"--control", control, "read", "io.stat"}, Map.of("IOTARGET_RUNTIME_DIR", tokens.toString()),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Cli(exit, err.toString(StandardCharsets.UTF_8));
    }

    private static void awaitNoConnections(Server server) throws InterruptedException {
        Await.until(Duration.ofSeconds(20), () -> server.controlLoad().connections() == 0, () -> "every connection gone: " + server.controlLoad());
    }

    private static ProcessResources settled() throws InterruptedException {
        ProcessResources.awaitNear(ProcessResources.now(), TOLERANCE, 0);
        return ProcessResources.now();
    }
}
