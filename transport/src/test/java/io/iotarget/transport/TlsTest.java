package io.iotarget.transport;

import io.iotarget.testkit.TestPki;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSocket;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Connections that switch to TLS in place, driven by the JDK's TLS client: a clear request and
 * reply ("STARTTLS" / "GO"), then the handshake, then plaintext to the handler both ways.
 */
class TlsTest {
    private static final byte[] STARTTLS = "STARTTLS\n".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] GO = "GO\n".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    static Path dir;
    private static SSLContext server;
    private static TestPki pki;
    private static Path client;
    private static Path stranger;
    private static Path anonymous;

    private Transport transport;
    private final List<Socket> sockets = new ArrayList<>();

    @BeforeAll
    static void credentials() throws Exception {
        pki = TestPki.create(dir.resolve("ca"), "transport test CA");
        Path s = pki.server("server");
        server = Pem.serverContext(s.resolve(TestPki.SERVER_CERT), s.resolve(TestPki.SERVER_KEY), null, s.resolve(TestPki.CA_CERT), null);
        client = pki.client("client", "/O=tenant-a/CN=client");
        anonymous = pki.anonymousClient("anonymous");
        stranger = TestPki.create(dir.resolve("other-ca"), "another CA").client("stranger", "/CN=stranger");
    }

    @AfterEach
    void tearDown() throws IOException {
        for (Socket s : sockets) s.close();
        if (transport != null) transport.close();
    }

    private static SSLEngine engine() {
        SSLEngine e = server.createSSLEngine();
        e.setUseClientMode(false);
        e.setWantClientAuth(true);
        e.setEnabledProtocols(new String[]{"TLSv1.3", "TLSv1.2"});
        return e;
    }

    private InetSocketAddress start(Function<Connection, ConnectionHandler> open) throws IOException {
        transport = new Transport(new Transport.Settings(2, Duration.ofSeconds(30), 1000, 1000, Transport.Settings.DEFAULT_SEND_BUFFER, Duration.ZERO));
        Protocol protocol = open::apply;
        return transport.listen(new InetSocketAddress("127.0.0.1", 0), protocol).localAddress();
    }

    /** Connects, asks for TLS in clear, and completes the handshake as the client of {@code credentials}. */
    private SSLSocket connectTls(InetSocketAddress address, Path credentials) throws Exception {
        return connectTls(address, credentials, "TLSv1.3");
    }

    private SSLSocket connectTls(InetSocketAddress address, Path credentials, String protocol) throws Exception {
        Socket plain = new Socket(address.getAddress(), address.getPort());
        plain.setSoTimeout(10_000);
        sockets.add(plain);
        plain.getOutputStream().write(STARTTLS);
        assertArrayEquals(GO, plain.getInputStream().readNBytes(GO.length));
        SSLSocket tls = (SSLSocket) TestPki.clientContext(credentials).getSocketFactory().createSocket(plain, "localhost", address.getPort(), true);
        tls.setEnabledProtocols(new String[]{protocol});
        tls.startHandshake();
        return tls;
    }

    /**
     * Answers "STARTTLS" in clear with "GO" and switches; then hands plaintext to {@code then},
     * which the tests fill in. Records what the connection saw.
     */
    private static class StartTls implements ConnectionHandler {
        final CompletableFuture<SSLEngine> switched = new CompletableFuture<>();
        final CompletableFuture<java.security.Principal> peer = new CompletableFuture<>();
        final CompletableFuture<Throwable> closed = new CompletableFuture<>();
        final List<String> events = new CopyOnWriteArrayList<>();
        private boolean on;

        @Override
        public void received(Connection c, ByteBuffer in) {
            if (on) {
                events.add("received");
                plaintext(c, in);
                return;
            }
            if (in.remaining() < STARTTLS.length) return;
            in.position(in.position() + STARTTLS.length);
            c.send(ByteBuffer.wrap(GO));
            try {
                SSLEngine e = engine();
                c.startTls(e);
                on = true;
                switched.complete(e);
            } catch (SSLException e) {
                c.close(e);
            }
        }

        @Override
        public void tlsEstablished(Connection c) {
            events.add("established");
            try {
                peer.complete(((X509Certificate) c.tlsSession().getPeerCertificates()[0]).getSubjectX500Principal());
            } catch (javax.net.ssl.SSLPeerUnverifiedException e) {
                peer.complete(null);
            }
        }

        /** Plaintext after the handshake: echoed by default. */
        void plaintext(Connection c, ByteBuffer in) {
            byte[] b = new byte[in.remaining()];
            in.get(b);
            c.send(ByteBuffer.wrap(b));
        }

        @Override
        public void closed(Connection c, Throwable cause) {
            closed.complete(cause);
        }
    }

    @Test
    void shouldSwitchInPlaceAndCarryLargeDataBothWays() throws Exception {
        StartTls handler = new StartTls();
        InetSocketAddress address = start(c -> handler);
        SSLSocket s = connectTls(address, client);
        assertEquals("CN=client, O=tenant-a", handler.peer.get(5, TimeUnit.SECONDS).toString());
        byte[] data = new byte[4 << 20];
        new Random(1).nextBytes(data);
        OutputStream out = s.getOutputStream();
        Thread writer = Thread.ofPlatform().start(() -> {
            try {
                out.write(data);
                out.flush();
            } catch (IOException e) {
                throw new RuntimeException(e);
            }
        });
        byte[] echoed = s.getInputStream().readNBytes(data.length);
        writer.join();
        assertArrayEquals(data, echoed);
        assertEquals("established", handler.events.getFirst(), "the handler hears of the session before its first plaintext");
        assertEquals(1, handler.events.stream().filter("established"::equals).count());
        assertTrue(Thread.getAllStackTraces().keySet().stream().anyMatch(t -> t.getName().startsWith("iotarget-tls-")),
                "the handshake's tasks ran on the TLS threads");
    }

    @Test
    void shouldTakeAHandshakeSentRightBehindTheSwitchRequest() throws Exception {
        StartTls handler = new StartTls();
        InetSocketAddress address = start(c -> handler);
        Socket plain = new Socket(address.getAddress(), address.getPort());
        plain.setSoTimeout(10_000);
        sockets.add(plain);
        SSLEngine e = TestPki.clientContext(client).createSSLEngine("localhost", address.getPort());
        e.setUseClientMode(true);
        e.beginHandshake();
        ByteBuffer hello = ByteBuffer.allocate(e.getSession().getPacketBufferSize());
        e.wrap(ByteBuffer.allocate(0), hello);
        // The client hello follows "STARTTLS" in the same write, before "GO" was read: the server must take it as TLS input.
        ByteBuffer first = ByteBuffer.allocate(STARTTLS.length + hello.flip().remaining()).put(STARTTLS).put(hello);
        plain.getOutputStream().write(first.array());
        assertArrayEquals(GO, plain.getInputStream().readNBytes(GO.length));
        EngineClient tls = new EngineClient(e, plain);
        tls.handshake();
        tls.write("ping".getBytes(StandardCharsets.US_ASCII));
        assertEquals("ping", new String(tls.read(4), StandardCharsets.US_ASCII));
    }

    /** A blocking TLS client over an SSLEngine, for what SSLSocket cannot do (send its hello early). */
    private record EngineClient(SSLEngine engine, Socket socket, ByteBuffer in, ByteBuffer plain) {
        EngineClient(SSLEngine engine, Socket socket) {
            this(engine, socket, ByteBuffer.allocate(1 << 17), ByteBuffer.allocate(1 << 17));
        }

        void handshake() throws IOException {
            while (true) {
                switch (engine.getHandshakeStatus()) {
                    case NEED_WRAP -> write(new byte[0]);
                    case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> unwrapSome();
                    case NEED_TASK -> {
                        for (Runnable t; (t = engine.getDelegatedTask()) != null; ) t.run();
                    }
                    default -> {
                        return;
                    }
                }
            }
        }

        void write(byte[] data) throws IOException {
            ByteBuffer src = ByteBuffer.wrap(data);
            do {
                ByteBuffer net = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
                engine.wrap(src, net);
                socket.getOutputStream().write(net.array(), 0, net.position());
            } while (src.hasRemaining());
        }

        byte[] read(int n) throws IOException {
            while (plain.position() < n) unwrapSome();
            plain.flip();
            byte[] b = new byte[n];
            plain.get(b).compact();
            return b;
        }

        private void unwrapSome() throws IOException {
            in.flip();
            var r = engine.unwrap(in, plain);
            in.compact();
            if (r.getStatus() == javax.net.ssl.SSLEngineResult.Status.BUFFER_UNDERFLOW) {
                int got = socket.getInputStream().read(in.array(), in.position(), in.remaining());
                if (got < 0) throw new java.io.EOFException();
                in.position(in.position() + got);
            }
        }
    }

    @Test
    void shouldSendFileRegionsByReadingAndEncryptingThem() throws Exception {
        Path file = dir.resolve("region");
        byte[] content = new byte[1 << 20];
        new Random(3).nextBytes(content);
        Files.write(file, content);
        CompletableFuture<Boolean> regionDone = new CompletableFuture<>();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            StartTls handler = new StartTls() {
                @Override
                void plaintext(Connection c, ByteBuffer in) {
                    in.position(in.limit());
                    c.send(ByteBuffer.wrap(new byte[]{1, 2, 3}));
                    c.sendFile(channel, 1000, 500_000, () -> regionDone.complete(c.isClosed()));
                    c.send(ByteBuffer.wrap(new byte[]{4}));
                }
            };
            InetSocketAddress address = start(c -> handler);
            SSLSocket s = connectTls(address, anonymous);
            assertNull(handler.peer.get(5, TimeUnit.SECONDS), "no client certificate was shown");
            s.getOutputStream().write('?');
            byte[] got = s.getInputStream().readNBytes(3 + 500_000 + 1);
            assertArrayEquals(new byte[]{1, 2, 3}, Arrays.copyOf(got, 3));
            assertArrayEquals(Arrays.copyOfRange(content, 1000, 501_000), Arrays.copyOfRange(got, 3, 500_003));
            assertEquals(4, got[500_003]);
            assertEquals(false, regionDone.get(5, TimeUnit.SECONDS), "the region's callback ran once it was sent");
        }
    }

    @Test
    void shouldEndTheSessionWithCloseNotify() throws Exception {
        StartTls handler = new StartTls() {
            @Override
            void plaintext(Connection c, ByteBuffer in) {
                super.plaintext(c, in);
                c.closeWhenFlushed();
            }
        };
        InetSocketAddress address = start(c -> handler);
        SSLSocket s = connectTls(address, client);
        s.getOutputStream().write("bye".getBytes(StandardCharsets.US_ASCII));
        assertEquals("bye", new String(s.getInputStream().readNBytes(3), StandardCharsets.US_ASCII));
        // The JDK client reports a TCP close without close_notify as an error; an orderly end reads as end of stream.
        assertEquals(-1, s.getInputStream().read());
        assertNull(handler.closed.get(5, TimeUnit.SECONDS));
    }

    /** A TLS 1.2 client (nbd-client speaks nothing newer) is served; one that asks to renegotiate is disconnected. */
    @Test
    void shouldServeTls12AndEndAConnectionThatRenegotiates() throws Exception {
        StartTls handler = new StartTls();
        InetSocketAddress address = start(c -> handler);
        SSLSocket s = connectTls(address, client, "TLSv1.2");
        assertEquals("TLSv1.2", s.getSession().getProtocol());
        s.getOutputStream().write('x');
        assertEquals('x', s.getInputStream().read());
        assertEquals("CN=client,O=tenant-a", handler.peer.get(5, TimeUnit.SECONDS).getName());
        try {
            s.startHandshake();                         // TLS 1.2: a new ClientHello on the established session
            s.getOutputStream().write('y');
            s.getInputStream().read();
        } catch (IOException refused) {
            // the server's alert, or its TCP close
        }
        Throwable cause = handler.closed.get(10, TimeUnit.SECONDS);
        assertInstanceOf(SSLException.class, cause, String.valueOf(cause));
        assertEquals("the client asked to renegotiate TLS 1.2 (refused)", cause.getMessage());
    }

    @Test
    void shouldRefuseAClientCertificateOfAnotherCa() throws Exception {
        StartTls handler = new StartTls();
        InetSocketAddress address = start(c -> handler);
        assertThrows(SSLException.class, () -> {
            SSLSocket s = connectTls(address, stranger);
            s.getOutputStream().write('x');
            s.getInputStream().read();                  // TLS 1.3: the server's verdict arrives after the client's Finished
        });
        Throwable cause = handler.closed.get(5, TimeUnit.SECONDS);
        assertInstanceOf(SSLException.class, cause, String.valueOf(cause));
        assertTrue(handler.events.isEmpty(), "no plaintext reached the handler: " + handler.events);
    }

    /** Echoes 4-byte numbers plus one; pauses after the second until {@link #resume}. */
    private static final class PausingCounter extends StartTls {
        final CompletableFuture<Connection> paused = new CompletableFuture<>();
        private int seen;
        private boolean resumed;

        @Override
        void plaintext(Connection c, ByteBuffer in) {
            while (in.remaining() >= 4) {
                if (seen == 2 && !resumed) {
                    c.pauseInput();
                    paused.complete(c);
                    return;
                }
                c.send(ByteBuffer.allocate(4).putInt(in.getInt() + 1).flip());
                seen++;
            }
        }

        void resume(Connection c) {
            resumed = true;
            c.resumeInput();
        }
    }

    @Test
    void shouldRedeliverKeptPlaintextAndPendingRecordsAfterResume() throws Exception {
        PausingCounter handler = new PausingCounter();
        InetSocketAddress address = start(c -> handler);
        SSLSocket s = connectTls(address, client);
        OutputStream out = s.getOutputStream();
        out.write(ByteBuffer.allocate(16).putInt(1).putInt(2).putInt(3).putInt(4).array());
        out.flush();
        InputStream in = s.getInputStream();
        assertEquals(2, ByteBuffer.wrap(in.readNBytes(4)).getInt());
        assertEquals(3, ByteBuffer.wrap(in.readNBytes(4)).getInt());
        Connection c = handler.paused.get(5, TimeUnit.SECONDS);
        out.write(ByteBuffer.allocate(4).putInt(5).array());  // a record of its own, arriving while input is paused
        out.flush();
        Thread.sleep(200);                                  // the record reaches the paused connection's socket; nothing shows when
        c.loop().execute(() -> handler.resume(c));
        // Resumed with nothing new on the socket: the kept plaintext and the waiting record must both be handled.
        assertEquals(4, ByteBuffer.wrap(in.readNBytes(4)).getInt());
        assertEquals(5, ByteBuffer.wrap(in.readNBytes(4)).getInt());
        assertEquals(6, ByteBuffer.wrap(in.readNBytes(4)).getInt());
    }
}
