package io.iotarget.bench;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.TrustManagerFactory;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.concurrent.TimeUnit;

/**
 * Why the transport's TLS ciphertext buffers are heap buffers (transport's {@code TlsLayer}):
 * the JDK's SSLEngine encrypting 1 MiB of a reply (a direct buffer, as the backends' data is)
 * into a ciphertext buffer of each kind, four records at a time as the transport fills it, and
 * the peer's engine decrypting it again into a direct plaintext buffer. TLS 1.3, the JDK's
 * preferred suite, an EC P-256 key made with keytool at set-up.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class TlsRecordBenchmark {
    private static final int MIB = 1 << 20;
    private static final int RECORDS_PER_BUFFER = 4;

    @Param({"heap", "direct"})
    public String ciphertext;

    private SSLEngine server;
    private SSLEngine client;
    private final ByteBuffer reply = ByteBuffer.allocateDirect(MIB);
    private final ByteBuffer plain = ByteBuffer.allocateDirect(96 << 10);
    private ByteBuffer net;
    private int packetBytes;

    @Setup(Level.Trial)
    public void handshake() throws Exception {
        Path dir = Files.createTempDirectory("tls-bench");
        Path store = dir.resolve("server.p12");
        Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair", "-keystore", store.toString(), "-storetype", "PKCS12", "-storepass", "benchmark", "-alias", "server",
                "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=localhost", "-validity", "2").inheritIO().start();
        if (keytool.waitFor() != 0) throw new IllegalStateException("keytool failed");
        KeyStore keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(store)) {
            keys.load(in, "benchmark".toCharArray());
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(keys, "benchmark".toCharArray());
        KeyStore trusted = KeyStore.getInstance("PKCS12");
        trusted.load(null, null);
        trusted.setCertificateEntry("server", keys.getCertificate("server"));
        TrustManagerFactory tmf = TrustManagerFactory.getInstance("PKIX");
        tmf.init(trusted);
        SSLContext serverContext = SSLContext.getInstance("TLSv1.3");
        serverContext.init(kmf.getKeyManagers(), null, null);
        SSLContext clientContext = SSLContext.getInstance("TLSv1.3");
        clientContext.init(null, tmf.getTrustManagers(), null);
        server = serverContext.createSSLEngine();
        server.setUseClientMode(false);
        client = clientContext.createSSLEngine("localhost", 1);
        client.setUseClientMode(true);
        packetBytes = server.getSession().getPacketBufferSize();
        int bytes = RECORDS_PER_BUFFER * packetBytes;
        net = ciphertext.equals("heap") ? ByteBuffer.allocate(bytes) : ByteBuffer.allocateDirect(bytes);
        connect();
    }

    /** Wraps 1 MiB into the ciphertext buffer, a buffer-full of records at a time. */
    @Benchmark
    public int wrap() throws Exception {
        reply.clear();
        int records = 0;
        while (reply.hasRemaining()) {
            net.clear();
            while (net.remaining() >= packetBytes && reply.hasRemaining()) {
                server.wrap(reply, net);
                records++;
            }
        }
        return records;
    }

    /** Wraps 1 MiB and has the peer unwrap it: unwrap's cost is this minus {@link #wrap()}. */
    @Benchmark
    public int wrapAndUnwrap() throws Exception {
        reply.clear();
        int bytes = 0;
        while (reply.hasRemaining()) {
            net.clear();
            while (net.remaining() >= packetBytes && reply.hasRemaining()) server.wrap(reply, net);
            net.flip();
            while (net.hasRemaining()) {
                plain.clear();
                bytes += client.unwrap(net, plain).bytesProduced();
            }
        }
        return bytes;
    }

    /** The handshake through two in-memory pipes, then both sides' post-handshake messages delivered. */
    private void connect() throws Exception {
        ByteBuffer toServer = ByteBuffer.allocate(1 << 17);
        ByteBuffer toClient = ByteBuffer.allocate(1 << 17);
        ByteBuffer scratch = ByteBuffer.allocate(1 << 17);
        client.beginHandshake();
        server.beginHandshake();
        for (int i = 0; i < 50; i++) {
            step(client, toClient, toServer, scratch);
            step(server, toServer, toClient, scratch);
        }
        drain(client, toClient, scratch);
        drain(server, toServer, scratch);
        if (client.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING) {
            throw new IllegalStateException("handshake did not finish: " + client.getHandshakeStatus());
        }
    }

    private static void step(SSLEngine engine, ByteBuffer in, ByteBuffer out, ByteBuffer scratch) throws Exception {
        while (true) {
            switch (engine.getHandshakeStatus()) {
                case NEED_TASK -> {
                    for (Runnable task; (task = engine.getDelegatedTask()) != null; ) task.run();
                }
                case NEED_WRAP -> engine.wrap(ByteBuffer.allocate(0), out);
                case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> {
                    in.flip();
                    SSLEngineResult r = engine.unwrap(in, scratch.clear());
                    in.compact();
                    if (r.bytesConsumed() == 0) return;
                }
                default -> {
                    return;
                }
            }
        }
    }

    private static void drain(SSLEngine engine, ByteBuffer in, ByteBuffer scratch) throws Exception {
        in.flip();
        while (in.hasRemaining() && engine.unwrap(in, scratch.clear()).bytesConsumed() > 0) {
            // post-handshake messages (session tickets)
        }
        in.clear();
    }
}
