package io.iotarget.frontend.nbd;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.engine.Engine;
import io.iotarget.model.Device;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.TestPki;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static io.iotarget.frontend.nbd.TestTarget.stat;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NBD_OPT_STARTTLS and per-export client identities over real sockets, with the JDK's TLS client.
 * Exports: {@code public} (no TLS), {@code secure} (TLS, any client), {@code a} (tenant a's
 * certificate, by fingerprint), {@code b} (tenant b's, by subject).
 */
class TlsNegotiationTest {
    @TempDir
    static Path dir;
    private static TestTarget target;
    private static TestPki pki;
    private static Path serverCredentials;
    private static Path tenantA;
    private static Path tenantB;
    private static Path anonymous;
    private static Device deviceA;

    @BeforeAll
    static void start() throws Exception {
        pki = TestPki.create(dir.resolve("ca"), "nbd test CA");
        serverCredentials = pki.server("server");
        tenantA = pki.client("tenant-a", "/O=tenants/CN=a");
        tenantB = pki.client("tenant-b", "/O=tenants/CN=b");
        anonymous = pki.anonymousClient("anonymous");
        target = new TestTarget();
        target.server.tree().write("tls/certificates", serverCredentials.toString());
        target.memoryExport("public", 1 << 20);
        target.memoryExport("secure", 1 << 20);
        deviceA = target.memoryExport("a", 1 << 20);
        target.memoryExport("b", 1 << 20);
        for (String e : List.of("secure", "a", "b")) target.server.tree().write("exports/" + e + "/tls", "1");
        for (String e : List.of("a", "b")) target.server.tree().write("exports/" + e + "/allow_any_client", "0");
        target.server.tree().write("exports/a/allowed_clients", TestPki.fingerprint(tenantA.resolve(TestPki.CLIENT_CERT)));
        target.server.tree().write("exports/b/allowed_clients", TestPki.subject(tenantB.resolve(TestPki.CLIENT_CERT)));
    }

    @AfterAll
    static void stop() {
        assertEquals(0, target.server.unexpectedErrors());
        target.close();
    }

    private static RawClient plain(int port) throws IOException {
        return new RawClient(port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES);
    }

    private static RawClient tls(Path credentials) throws Exception {
        return plain(target.port).startTls(TestPki.clientContext(credentials));
    }

    private static RawClient.OptionReply info(RawClient c, String export) throws IOException {
        c.option(NbdWire.OPT_INFO, RawClient.goData(export));
        return c.optionReply();
    }

    @Test
    void shouldShowPlaintextClientsOnlyThePlaintextExports() throws Exception {
        try (RawClient c = plain(target.port)) {
            assertEquals(List.of("public"), c.list());
            RawClient.OptionReply tlsOnly = info(c, "a");
            RawClient.OptionReply unknown = info(c, "nope");
            assertEquals(NbdWire.REP_ERR_TLS_REQD, tlsOnly.type());
            assertEquals(NbdWire.REP_ERR_TLS_REQD, unknown.type(), "an unknown name gets the same answer: names cannot be probed");
            assertEquals("no export named 'a' is open without TLS (NBD_OPT_STARTTLS first)", tlsOnly.text());
            c.go("public", true);
        }
        try (RawClient c = plain(target.port)) {
            c.option(NbdWire.OPT_EXPORT_NAME, "secure".getBytes(StandardCharsets.UTF_8));
            assertTrue(c.closedByServer(), "EXPORT_NAME cannot carry an error: a TLS-only export hangs up");
        }
    }

    @Test
    void shouldOpenTheTenantsExportWithItsCertificateAndChargeTheExportsGroup() throws Exception {
        Map<String, Long> before = target.ioStat("tenants/a", deviceA);
        try (RawClient c = tls(tenantA)) {
            assertEquals(List.of("a", "public", "secure"), c.list());
            c.go("a", true);
            c.write(0, 1, 0, new byte[4096]);
            assertEquals(0, c.reply(0).error());
            c.request(0, NbdWire.CMD_READ, 2, 0, 8192);
            assertEquals(0, c.reply(8192).error());
        }
        assertEquals(stat(8192, 4096, 1, 1, 0, 0), TestTarget.delta(before, target.ioStat("tenants/a", deviceA)));
        try (RawClient c = tls(tenantB)) {
            assertEquals(List.of("b", "public", "secure"), c.list(), "b sees its own export by subject, and not a's");
            c.go("b", false);
        }
    }

    @Test
    void shouldAnswerEveryRequestBeforeDiscThenEndTheSession() throws Exception {
        try (RawClient c = tls(tenantA)) {
            c.go("a", false);
            for (int i = 0; i < 64; i++) c.request(0, NbdWire.CMD_READ, i, 0, 65536);
            c.request(0, NbdWire.CMD_DISC, 99, 0, 0);
            java.util.Set<Long> cookies = new java.util.HashSet<>();
            for (int i = 0; i < 64; i++) {
                RawClient.Reply r = c.reply(65536);
                assertEquals(0, r.error());
                cookies.add(r.cookie());
            }
            assertEquals(64, cookies.size(), "every read was answered, the last ones too");
            assertEquals(-1, c.in.read(), "then close_notify: an orderly end of the TLS stream");
        }
    }

    @Test
    void shouldAnswerForAnotherTenantsExportAsIfItDidNotExist() throws Exception {
        try (RawClient c = tls(tenantB)) {
            RawClient.OptionReply other = info(c, "a");
            RawClient.OptionReply unknown = info(c, "nope");
            assertEquals(NbdWire.REP_ERR_UNKNOWN, other.type());
            assertEquals("no export named 'a'", other.text());
            assertEquals(NbdWire.REP_ERR_UNKNOWN, unknown.type());
            c.option(NbdWire.OPT_STRUCTURED_REPLY, new byte[0]);
            assertEquals(NbdWire.REP_ACK, c.optionReply().type());
            c.option(NbdWire.OPT_LIST_META_CONTEXT, RawClient.metaContextData("a"));
            RawClient.OptionReply meta = c.optionReply();
            assertEquals(NbdWire.REP_ERR_UNKNOWN, meta.type());
            assertEquals("no export named 'a'", meta.text());
            c.option(NbdWire.OPT_EXPORT_NAME, "a".getBytes(StandardCharsets.UTF_8));
            assertTrue(c.closedByServer());
        }
        try (RawClient c = tls(anonymous)) {
            assertEquals(List.of("public", "secure"), c.list(), "without a certificate: the exports without an allow list");
            assertEquals(NbdWire.REP_ERR_UNKNOWN, info(c, "b").type());
            c.go("secure", false);
        }
    }

    @Test
    void shouldStartTlsOnceAndForgetWhatWasNegotiatedBefore() throws Exception {
        try (RawClient c = plain(target.port)) {
            c.option(NbdWire.OPT_STARTTLS, new byte[]{1});
            assertEquals(NbdWire.REP_ERR_INVALID, c.optionReply().type());
            c.option(NbdWire.OPT_STRUCTURED_REPLY, new byte[0]);
            assertEquals(NbdWire.REP_ACK, c.optionReply().type());
            c.startTls(TestPki.clientContext(tenantA));
            c.option(NbdWire.OPT_STARTTLS, new byte[0]);
            RawClient.OptionReply again = c.optionReply();
            assertEquals(NbdWire.REP_ERR_INVALID, again.type());
            assertEquals("TLS is already on", again.text());
            c.go("a", false);
            c.request(0, NbdWire.CMD_READ, 7, 0, 512);
            RawClient.Reply r = c.reply(512);
            assertEquals(-1, r.chunkType(), "structured replies from before TLS were forgotten: a simple reply");
            assertEquals(7, r.cookie());
        }
    }

    @Test
    void shouldFailTheHandshakeOfACertificateFromAnotherCa() throws Exception {
        Path stranger = TestPki.create(dir.resolve("other-ca"), "another CA").client("stranger", "/O=tenants/CN=a");
        SSLContext context = TestPki.clientContext(stranger);
        try (RawClient c = plain(target.port)) {
            assertThrows(SSLException.class, () -> {
                c.startTls(context);
                c.list();                               // TLS 1.3: the server's verdict comes after the client's Finished
            });
        }
    }

    @Test
    void shouldEndAConnectionWhoseCertificateLeavesTheAllowList() throws Exception {
        Path tenantC = pki.client("tenant-c", "/O=tenants/CN=c");
        target.memoryExport("c", 1 << 20);
        target.server.tree().write("exports/c/tls", "1");
        target.server.tree().write("exports/c/allow_any_client", "0");
        target.server.tree().write("exports/c/allowed_clients", TestPki.subject(tenantC.resolve(TestPki.CLIENT_CERT)));
        try (RawClient c = tls(tenantC)) {
            c.go("c", false);
            c.request(0, NbdWire.CMD_READ, 1, 0, 512);
            assertEquals(0, c.reply(512).error());
            target.server.tree().write("exports/c/allowed_clients", "-" + TestPki.subject(tenantC.resolve(TestPki.CLIENT_CERT)));
            assertTrue(c.closedByServer(), "taken off the list: its connection ends as on disable");
        }
        try (RawClient c = tls(tenantC)) {
            assertEquals(List.of("public", "secure"), c.list(), "an empty list admits nobody, never everybody");
        }
    }

    @Test
    void shouldRefuseARevokedCertificateOnceTheListIsLoaded() throws Exception {
        Path revoked = pki.client("tenant-r", "/O=tenants/CN=r");
        Path credentials = Files.createDirectories(dir.resolve("server-with-crl"));
        for (String f : List.of(TestPki.CA_CERT, TestPki.SERVER_CERT, TestPki.SERVER_KEY)) {
            Files.copy(serverCredentials.resolve(f), credentials.resolve(f));
        }
        pki.revoke(revoked.resolve(TestPki.CLIENT_CERT), credentials);
        try (RawClient c = tls(revoked)) {
            assertEquals(List.of("public", "secure"), c.list(), "not revoked yet as far as the server knows");
        }
        target.server.tree().write("tls/certificates", credentials.toString());
        try {
            try (RawClient c = plain(target.port)) {
                assertThrows(SSLException.class, () -> {
                    c.startTls(TestPki.clientContext(revoked));
                    c.list();
                });
            }
            try (RawClient c = tls(tenantA)) {
                assertEquals(List.of("a", "public", "secure"), c.list(), "certificates that are not on the list still work");
            }
        } finally {
            target.server.tree().write("tls/certificates", serverCredentials.toString());
        }
    }

    @Test
    void shouldForceTlsWhenEveryExportNeedsIt() throws Exception {
        try (TestTarget forced = new TestTarget()) {
            forced.server.tree().write("tls/certificates", serverCredentials.toString());
            forced.memoryExport("only", 1 << 20);
            forced.server.tree().write("exports/only/tls", "1");
            try (RawClient c = plain(forced.port)) {
                for (int code : new int[]{NbdWire.OPT_LIST, NbdWire.OPT_STRUCTURED_REPLY, NbdWire.OPT_INFO, NbdWire.OPT_GO, 12345}) {
                    c.option(code, code == NbdWire.OPT_INFO || code == NbdWire.OPT_GO ? RawClient.goData("only") : new byte[0]);
                    RawClient.OptionReply r = c.optionReply();
                    assertEquals(NbdWire.REP_ERR_TLS_REQD, r.type(), "option " + code);
                    assertEquals("this server requires TLS first (NBD_OPT_STARTTLS)", r.text());
                }
                c.startTls(TestPki.clientContext(anonymous));
                assertEquals(List.of("only"), c.list());
                c.go("only", true);
            }
            try (RawClient c = plain(forced.port)) {
                c.option(NbdWire.OPT_ABORT, new byte[0]);
                assertEquals(NbdWire.REP_ACK, c.optionReply().type(), "ABORT needs no TLS");
            }
            try (RawClient c = plain(forced.port)) {
                c.option(NbdWire.OPT_EXPORT_NAME, "only".getBytes(StandardCharsets.UTF_8));
                assertTrue(c.closedByServer());
            }
        }
    }

    @Test
    void shouldCutOffAClientThatStopsInTheMiddleOfItsHandshake() throws Exception {
        try (Engine engine = new Engine(); NbdServer server = new NbdServer(engine, Duration.ofMillis(500))) {
            server.tree().write("tls/certificates", serverCredentials.toString());
            engine.addDevice("x", new MemoryBackend(1 << 20, 512, false), null, Engine.DEFAULT_QUEUE_DEPTH);
            server.tree().mkdir("exports/x");
            server.tree().write("exports/x/backend", "x");
            server.tree().write("exports/x/tls", "1");
            server.tree().write("exports/x/enable", "1");
            server.listen(new InetSocketAddress("127.0.0.1", 0));
            int port = server.localAddresses().getFirst().getPort();
            try (RawClient c = plain(port)) {
                c.option(NbdWire.OPT_STARTTLS, new byte[0]);
                assertEquals(NbdWire.REP_ACK, c.optionReply().type());
                // The first bytes of a TLS record header that promises more, then silence.
                OutputStream out = c.socket.getOutputStream();
                out.write(new byte[]{22, 3, 1, 2, 0, 1, 0});
                out.flush();
                long start = System.nanoTime();
                assertTrue(c.closedByServer());
                long ms = (System.nanoTime() - start) / 1_000_000;
                assertTrue(ms >= 300 && ms < 5_000, "cut off after " + ms + " ms (limit 500 ms)");
            }
            Await.until(Duration.ofSeconds(5), () -> server.connectionCount() == 0, () -> server.connectionCount() + " connections left");
        }
    }

    @Test
    void shouldKeepConnectionsAndThreadsSteadyOverManyTlsConnections() throws Exception {
        SSLContext context = TestPki.clientContext(tenantA);
        for (int i = 0; i < 10; i++) listAndAbort(context);      // warm up: TLS threads, JIT
        int threads = Thread.activeCount();
        for (int i = 0; i < 300; i++) listAndAbort(context);
        Await.until(Duration.ofSeconds(5), () -> target.server.connectionCount() == 0,
                () -> "every connection is gone: " + target.server.connectionCount() + " left");
        assertTrue(Thread.activeCount() <= threads + 1, "threads " + threads + " -> " + Thread.activeCount());
    }

    private static void listAndAbort(SSLContext context) throws Exception {
        try (RawClient c = plain(target.port).startTls(context)) {
            assertEquals(List.of("a", "public", "secure"), c.list());
            c.option(NbdWire.OPT_ABORT, new byte[0]);
            assertEquals(NbdWire.REP_ACK, c.optionReply().type());
            assertTrue(c.closedByServer());
        }
    }
}
