package io.iotarget.frontend.nbd;

import io.iotarget.model.ControlException;
import io.iotarget.testkit.LogCapture;
import io.iotarget.testkit.TestPki;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Certificate chains, as a PKI with an intermediate CA hands them out: root CA → intermediate CA
 * → leaf, made by openssl when the test runs. The server's server-cert.pem holds its leaf and the
 * intermediate; its ca-cert.pem holds the root alone; so do the clients'. GnuTLS clients
 * (nbdinfo, qemu-img/qemu-io) and OpenSSL (Python's ssl module) verify the server through the
 * intermediate it sends, and present a chain of their own, which the server verifies against the
 * root and recognises by the leaf's subject and fingerprint. A CA file may hold several CAs.
 * A side that must send its intermediate and does not is refused, with the error its peer's
 * library gives for an unknown issuer; a chain whose certificates do not follow each other is
 * named when the server loads it.
 */
class TlsChainTest {
    private static final long MiB = 1 << 20;
    @TempDir
    static Path dir;
    private static TestTarget target;
    private static TestPki root;
    private static TestPki intermediate;
    /** ca-cert.pem: the root; server-cert.pem: leaf, intermediate. */
    private static Path server;
    /** ca-cert.pem: the root; client-cert.pem: leaf, intermediate. */
    private static Path client;
    /** ca-cert.pem: the root; no certificate of its own. */
    private static Path anonymous;

    @BeforeAll
    static void start() throws Exception {
        root = TestPki.create(dir.resolve("root"), "chain test root CA");
        intermediate = root.intermediate(dir.resolve("intermediate"), "chain test intermediate CA");
        server = intermediate.server("server");
        client = intermediate.client("client", "/O=tenants/CN=chained");
        anonymous = intermediate.anonymousClient("anonymous");
        for (Path file : List.of(server.resolve(TestPki.SERVER_CERT), client.resolve(TestPki.CLIENT_CERT))) {
            assertEquals(2, certificates(file), file + ": the leaf, then the intermediate");
        }
        assertEquals(1, certificates(client.resolve(TestPki.CA_CERT)), "the root alone");
        target = new TestTarget();
        target.server.tree().write("tls/certificates", server.toString());
        for (String e : List.of("fp", "subj", "other")) {
            target.memoryExport(e, 16 * MiB);
            target.server.tree().write("exports/" + e + "/tls", "1");
            target.server.tree().write("exports/" + e + "/allow_any_client", "0");
        }
        target.memoryExport("public", 4 * MiB);
        target.server.tree().write("exports/fp/allowed_clients", TestPki.fingerprint(client.resolve(TestPki.CLIENT_CERT)));
        target.server.tree().write("exports/subj/allowed_clients", TestPki.subject(client.resolve(TestPki.CLIENT_CERT)));
        target.server.tree().write("exports/other/allowed_clients", "CN=chain test intermediate CA");
    }

    @AfterAll
    static void stop() {
        assertEquals(0, target.server.unexpectedErrors());
        target.close();
    }

    private static long certificates(Path file) throws IOException {
        return Files.readString(file).lines().filter(l -> l.equals("-----BEGIN CERTIFICATE-----")).count();
    }

    private static String uri(String export, Path credentials) {
        return "nbds://127.0.0.1:" + target.port + "/" + export + "?tls-certificates=" + credentials;
    }

    /** A copy of credentials directory {@code from} named {@code name} whose certificate file holds the leaf alone. */
    private static Path leafOnly(String name, Path from, String certFile, String keyFile) throws IOException {
        Path d = Files.createDirectories(dir.resolve(name));
        String chain = Files.readString(from.resolve(certFile));
        String end = "-----END CERTIFICATE-----\n";
        Files.writeString(d.resolve(certFile), chain.substring(0, chain.indexOf(end) + end.length()));
        Files.copy(from.resolve(keyFile), d.resolve(keyFile));
        Files.copy(from.resolve(TestPki.CA_CERT), d.resolve(TestPki.CA_CERT));
        return d;
    }

    /** Python's ssl module (OpenSSL) lists the exports with {@code credentials} ({@link PythonNbdTls}). */
    private static Tools.Result pythonList(Path credentials) throws Exception {
        return PythonNbdTls.list(target.port, credentials);
    }

    @Test
    void gnuTlsClientsVerifyTheServersChainAgainstTheRootAlone() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Tools.require("qemu-img", "/usr/bin/qemu-img");
        String list = Tools.ok(60, "nbdinfo", "--list", "--json", uri("", anonymous));
        assertTrue(list.contains("\"export-name\": \"public\""), list);
        assertFalse(list.contains("\"export-name\": \"fp\""), "no certificate, no tenant's export: " + list);
        assertTrue(Tools.ok(60, "nbdinfo", "--json", uri("public", anonymous)).contains("\"export-size\": 4194304"));
        String info = Tools.ok(60, "qemu-img", "info", "--object", "tls-creds-x509,id=tls0,dir=" + anonymous + ",endpoint=client",
                "--image-opts", "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=public,tls-creds=tls0");
        assertTrue(info.contains("4 MiB"), info);
    }

    @Test
    void openSslVerifiesTheServersChainAndPresentsItsOwn() throws Exception {
        Tools.Result anonymousList = pythonList(anonymous);
        assertEquals(new Tools.Result(0, "public\n"), anonymousList);
        Tools.Result tenantList = pythonList(client);
        assertEquals(new Tools.Result(0, "fp public subj\n"), tenantList, "the leaf is recognised by fingerprint and by subject");
    }

    @Test
    void nbdinfoPresentsItsChainAndIsRecognisedByFingerprintAndSubject() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        String list = Tools.ok(60, "nbdinfo", "--list", "--json", uri("", client));
        for (String e : List.of("fp", "subj", "public")) assertTrue(list.contains("\"export-name\": \"" + e + "\""), e + " listed: " + list);
        assertFalse(list.contains("\"export-name\": \"other\""), "naming the intermediate admits nobody it issued: " + list);
        for (String e : List.of("fp", "subj")) {
            assertTrue(Tools.ok(60, "nbdinfo", "--json", uri(e, client)).contains("\"export-size\": 16777216"), e);
        }
        Tools.Result other = Tools.run(60, List.of("nbdinfo", uri("other", client)));
        assertNotEquals(0, other.exit());
        assertTrue(other.out().contains("No such file or directory for export: other"), other.out());
    }

    /**
     * QEMU 7.2 checks its own certificate before it connects — the first one of client-cert.pem,
     * against its ca-cert.pem alone — so its ca-cert.pem needs the intermediate beside the root;
     * GnuTLS then sends the whole of client-cert.pem, which the server, trusting the root alone,
     * verifies.
     */
    @Test
    void qemuPresentsItsChainAndIsRecognisedByFingerprintAndSubject() throws Exception {
        Tools.require("qemu-img", "/usr/bin/qemu-img");
        Tools.require("qemu-io", "/usr/bin/qemu-io");
        Tools.Result refused = Tools.run(60, List.of("qemu-img", "info", "--object", "tls-creds-x509,id=tls0,dir=" + client + ",endpoint=client",
                "--image-opts", "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=subj,tls-creds=tls0"));
        assertNotEquals(0, refused.exit());
        assertTrue(refused.out().contains("Our own certificate " + client.resolve(TestPki.CLIENT_CERT) + " failed validation against "
                                          + client.resolve(TestPki.CA_CERT) + ": The certificate hasn't got a known issuer"), refused.out());

        Path qemu = Files.createDirectories(dir.resolve("qemu-client"));
        Files.copy(client.resolve(TestPki.CLIENT_CERT), qemu.resolve(TestPki.CLIENT_CERT));
        Files.copy(client.resolve(TestPki.CLIENT_KEY), qemu.resolve(TestPki.CLIENT_KEY));
        Files.writeString(qemu.resolve(TestPki.CA_CERT), Files.readString(root.caCert()) + Files.readString(intermediate.caCert()));
        String object = "tls-creds-x509,id=tls0,dir=" + qemu + ",endpoint=client";
        String io = Tools.ok(60, "qemu-io", "--object", object,
                "--image-opts", "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=fp,tls-creds=tls0",
                "-c", "write -P 0x5a 1M 64k", "-c", "read -P 0x5a 1M 64k");
        assertFalse(io.contains("Pattern verification failed") || io.contains("error"), io);
        String info = Tools.ok(60, "qemu-img", "info", "--object", object,
                "--image-opts", "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=subj,tls-creds=tls0");
        assertTrue(info.contains("16 MiB"), info);
        Tools.Result other = Tools.run(60, List.of("qemu-io", "--object", object, "--image-opts",
                "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=other,tls-creds=tls0", "-c", "read 0 4k"));
        assertNotEquals(0, other.exit(), other.out());
        assertTrue(other.out().contains("server reported: no export named 'other'"), other.out());
    }

    /** A CA file with the root and the intermediate: a client may then send its leaf alone, or its chain. */
    @Test
    void aCaFileMayHoldSeveralCas() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Path twoCas = Files.createDirectories(dir.resolve("server-two-cas"));
        Files.copy(server.resolve(TestPki.SERVER_CERT), twoCas.resolve(TestPki.SERVER_CERT));
        Files.copy(server.resolve(TestPki.SERVER_KEY), twoCas.resolve(TestPki.SERVER_KEY));
        Files.writeString(twoCas.resolve(TestPki.CA_CERT), Files.readString(root.caCert()) + Files.readString(intermediate.caCert()));
        Path leaf = leafOnly("client-leaf-two-cas", client, TestPki.CLIENT_CERT, TestPki.CLIENT_KEY);
        target.server.tree().write("tls/certificates", twoCas.toString());
        try {
            for (Path c : List.of(client, leaf)) {
                String list = Tools.ok(60, "nbdinfo", "--list", "--json", uri("", c));
                for (String e : List.of("fp", "subj", "public")) assertTrue(list.contains("\"export-name\": \"" + e + "\""), c + ": " + e + " listed: " + list);
                assertEquals(new Tools.Result(0, "fp public subj\n"), pythonList(c), c.toString());
            }
        } finally {
            target.server.tree().write("tls/certificates", server.toString());
        }
    }

    /**
     * A client that sends its leaf without the intermediate, to a server trusting the root alone,
     * opens and lists nothing; its library shows only the alert, the server's log says why.
     */
    @Test
    void aClientWithoutItsIntermediateIsRefused() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Path leaf = leafOnly("client-leaf", client, TestPki.CLIENT_CERT, TestPki.CLIENT_KEY);
        try (LogCapture log = new LogCapture(NbdConnection.class.getName())) {
            long refusedBefore = target.server.counters().counter(NbdCounter.TLS_FAILURES);
            Tools.Result list = Tools.run(60, List.of("nbdinfo", "--list", uri("", leaf)));
            assertNotEquals(0, list.exit(), list.out());
            assertTrue(list.out().contains("A TLS fatal alert has been received"), list.out());
            Tools.Result python = pythonList(leaf);
            assertNotEquals(0, python.exit(), python.out());
            assertTrue(python.out().contains("alert certificate unknown"), python.out());
            String why = "TLS failed, disconnected: (certificate_unknown) client certificate CN=chained, O=tenants issued by CN=chain test intermediate CA,"
                         + " sent with 0 issuer certificate(s), refused: " + server.resolve(TestPki.CA_CERT) + " has no CA CN=chain test intermediate CA"
                         + " (another CA's certificate; or an intermediate CA's, and then the intermediate must follow it in the client's"
                         + " certificate file, or be in " + server.resolve(TestPki.CA_CERT) + ")";
            assertEquals(2, log.await(why, 2), "each refusal logged: " + log.messages());
            assertEquals(refusedBefore + 2, target.server.counters().counter(NbdCounter.TLS_FAILURES));
        }
    }

    /**
     * A server whose server-cert.pem lacks the intermediate is refused by every client that
     * trusts the root alone, each saying the issuer is unknown; the server logs OpenSSL's alert
     * (GnuTLS's clients close without one).
     */
    @Test
    void aServerWithoutItsIntermediateIsRefused() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Tools.require("qemu-img", "/usr/bin/qemu-img");
        Path leaf = leafOnly("server-leaf", server, TestPki.SERVER_CERT, TestPki.SERVER_KEY);
        target.server.tree().write("tls/certificates", leaf.toString());
        try (LogCapture log = new LogCapture(NbdConnection.class.getName())) {
            Tools.Result nbdinfo = Tools.run(60, List.of("nbdinfo", "--list", uri("", anonymous)));
            assertNotEquals(0, nbdinfo.exit(), nbdinfo.out());
            assertTrue(nbdinfo.out().contains("gnutls_handshake: Error in the certificate verification"), nbdinfo.out());
            Tools.Result qemu = Tools.run(60, List.of("qemu-img", "info", "--object", "tls-creds-x509,id=tls0,dir=" + anonymous + ",endpoint=client",
                    "--image-opts", "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=public,tls-creds=tls0"));
            assertNotEquals(0, qemu.exit(), qemu.out());
            assertTrue(qemu.out().contains("The certificate hasn't got a known issuer"), qemu.out());
            Tools.Result python = pythonList(anonymous);
            assertNotEquals(0, python.exit(), python.out());
            assertTrue(python.out().contains("certificate verify failed: unable to get local issuer certificate"), python.out());
            assertEquals(1, log.await(": Unexpected plaintext alert received: Level: fatal; Alert: unknown_ca", 1),
                    "OpenSSL's alert is logged; GnuTLS closes without one: " + log.messages());
        } finally {
            target.server.tree().write("tls/certificates", server.toString());
        }
    }

    /** A server-cert.pem whose second certificate did not issue the first is named when it is loaded, and the credentials in use stay. */
    @Test
    void aChainThatDoesNotFollowIsNamedAtLoad() throws Exception {
        Path wrong = Files.createDirectories(dir.resolve("server-wrong-chain"));
        String chain = Files.readString(server.resolve(TestPki.SERVER_CERT));
        String end = "-----END CERTIFICATE-----\n";
        Files.writeString(wrong.resolve(TestPki.SERVER_CERT), chain.substring(0, chain.indexOf(end) + end.length()) + Files.readString(root.caCert()));
        Files.copy(server.resolve(TestPki.SERVER_KEY), wrong.resolve(TestPki.SERVER_KEY));
        Files.copy(server.resolve(TestPki.CA_CERT), wrong.resolve(TestPki.CA_CERT));
        ControlException e = assertThrows(ControlException.class, () -> target.server.tree().write("tls/certificates", wrong.toString()));
        assertEquals("certificates=" + wrong + ": " + wrong.resolve(TestPki.SERVER_CERT) + ": certificate 2 (CN=chain test root CA) did not issue"
                     + " certificate 1 (CN=localhost, issued by CN=chain test intermediate CA): expected the certificate first, then each issuer"
                     + " after the certificate it issued", e.detail());
        assertEquals(server.toString() + "\n", target.server.tree().read("tls/certificates"), "the credentials in use stay");
    }

}
