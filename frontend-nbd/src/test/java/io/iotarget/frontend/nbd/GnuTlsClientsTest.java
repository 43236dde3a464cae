package io.iotarget.frontend.nbd;

import io.iotarget.model.ControlException;
import io.iotarget.testkit.TestPki;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Credentials made the way GnuTLS's manual (and QEMU's, and libnbd's) teach — certtool, a CA of
 * its own with an RSA key, the server's key in PKCS#1 — and the GnuTLS clients people use:
 * libnbd's nbdinfo and nbdcopy, qemu-img and qemu-io with a tls-creds-x509 object, and
 * nbd-client (the kernel client's helper, TLS 1.2 only) — and OpenSSL (Python's ssl module)
 * with the very same files. For each kind of client key (RSA or EC,
 * certtool's PKCS#1/SEC1 or PKCS#8) the client certificate opens and lists export {@code fp},
 * which names it by SHA-256 fingerprint, and {@code subj}, which names it by subject, and never
 * {@code other}, which names someone else. Before the server stopped naming its CAs in the
 * CertificateRequest, GnuTLS withheld every RSA client certificate (Pem's NamingNoIssuers says
 * why) and these clients saw neither export.
 */
class GnuTlsClientsTest {
    private static final long MiB = 1 << 20;
    private static final List<TestPki.Key> CLIENT_KEYS = List.of(TestPki.Key.RSA_PKCS1, TestPki.Key.RSA_PKCS8,
                                                                  TestPki.Key.EC_SEC1, TestPki.Key.EC_PKCS8);
    @TempDir
    static Path dir;
    private static TestTarget target;
    private static TestPki pki;
    private static Path server;
    private static final Map<TestPki.Key, Path> clients = new EnumMap<>(TestPki.Key.class);

    @BeforeAll
    static void start() throws Exception {
        pki = TestPki.certtool(dir.resolve("ca"), "GnuTLS test CA", TestPki.Key.RSA_PKCS1);
        server = pki.server("server");
        assertTrue(Files.readString(server.resolve(TestPki.SERVER_KEY)).contains("-----BEGIN RSA PRIVATE KEY-----"), "certtool's PKCS#1");
        target = new TestTarget();
        target.server.tree().write("tls/certificates", server.toString());
        for (String e : List.of("fp", "subj", "other")) {
            target.memoryExport(e, 16 * MiB);
            target.server.tree().write("exports/" + e + "/tls", "1");
            target.server.tree().write("exports/" + e + "/allow_any_client", "0");
        }
        target.memoryExport("public", 4 * MiB);
        for (TestPki.Key key : CLIENT_KEYS) {
            Path client = pki.client(key.name(), "/C=GB/O=tenants/CN=" + key.name(), key);
            clients.put(key, client);
            target.server.tree().write("exports/fp/allowed_clients", TestPki.fingerprint(client.resolve(TestPki.CLIENT_CERT)));
            target.server.tree().write("exports/subj/allowed_clients", TestPki.subject(client.resolve(TestPki.CLIENT_CERT)));
        }
        target.server.tree().write("exports/other/allowed_clients", "CN=someone else,O=tenants");
    }

    @AfterAll
    static void stop() {
        assertEquals(0, target.server.unexpectedErrors());
        target.close();
    }

    private static String uri(String export, Path credentials) {
        return "nbds://127.0.0.1:" + target.port + "/" + export + "?tls-certificates=" + credentials;
    }

    @ParameterizedTest
    @EnumSource(names = {"RSA_PKCS1", "RSA_PKCS8", "EC_SEC1", "EC_PKCS8"})
    void nbdinfoListsAndOpensByFingerprintAndBySubject(TestPki.Key key) throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Path client = clients.get(key);
        String list = Tools.ok(60, "nbdinfo", "--list", "--json", uri("", client));
        for (String e : List.of("fp", "subj", "public")) assertTrue(list.contains("\"export-name\": \"" + e + "\""), e + " listed: " + list);
        assertFalse(list.contains("\"export-name\": \"other\""), "another's export is not listed: " + list);
        for (String e : List.of("fp", "subj")) {
            String info = Tools.ok(60, "nbdinfo", "--json", uri(e, client));
            assertTrue(info.contains("\"export-size\": 16777216"), info);
        }
        Tools.Result other = Tools.run(60, List.of("nbdinfo", uri("other", client)));
        assertNotEquals(0, other.exit());
        assertTrue(other.out().contains("No such file or directory for export: other"), other.out());
    }

    @ParameterizedTest
    @EnumSource(names = {"RSA_PKCS1", "RSA_PKCS8", "EC_SEC1", "EC_PKCS8"})
    void nbdcopyWritesAndReadsBack(TestPki.Key key) throws Exception {
        Tools.require("nbdcopy", "/usr/bin/nbdcopy");
        Path client = clients.get(key);
        byte[] data = new byte[(int) (4 * MiB)];
        new Random(key.ordinal()).nextBytes(data);
        Path src = Files.write(dir.resolve("in-" + key + ".img"), data);
        Path back = dir.resolve("out-" + key + ".img");
        Tools.ok(120, "nbdcopy", src.toString(), uri("subj", client));
        Tools.ok(120, "nbdcopy", uri("subj", client), back.toString());
        assertArrayEquals(data, java.util.Arrays.copyOf(Files.readAllBytes(back), data.length));
        Tools.Result other = Tools.run(60, List.of("nbdcopy", src.toString(), uri("other", client)));
        assertNotEquals(0, other.exit(), other.out());
    }

    @ParameterizedTest
    @EnumSource(names = {"RSA_PKCS1", "RSA_PKCS8", "EC_SEC1", "EC_PKCS8"})
    void qemuImgAndQemuIoWithTlsCredsX509(TestPki.Key key) throws Exception {
        Tools.require("qemu-img", "/usr/bin/qemu-img");
        Tools.require("qemu-io", "/usr/bin/qemu-io");
        String object = "tls-creds-x509,id=tls0,dir=" + clients.get(key) + ",endpoint=client";
        String fp = "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=fp,tls-creds=tls0";
        String io = Tools.ok(60, "qemu-io", "--object", object, "--image-opts", fp,
                "-c", "write -P 0x" + Integer.toHexString(0x40 + key.ordinal()) + " 1M 64k",
                "-c", "read -P 0x" + Integer.toHexString(0x40 + key.ordinal()) + " 1M 64k");
        assertFalse(io.contains("Pattern verification failed") || io.contains("error"), io);
        String info = Tools.ok(60, "qemu-img", "info", "--object", object, "--image-opts",
                "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=subj,tls-creds=tls0");
        assertTrue(info.contains("16 MiB"), info);
        Tools.Result other = Tools.run(60, List.of("qemu-io", "--object", object, "--image-opts",
                "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=other,tls-creds=tls0", "-c", "read 0 4k"));
        assertNotEquals(0, other.exit(), other.out());
        assertTrue(other.out().contains("server reported: no export named 'other'"), other.out());
    }

    /** nbd-client, which sets up the kernel's client, lists with the same certificate (its GnuTLS allows only TLS 1.2). */
    @ParameterizedTest
    @EnumSource(names = {"RSA_PKCS1", "RSA_PKCS8", "EC_SEC1", "EC_PKCS8"})
    void nbdClientListsOverTls12(TestPki.Key key) throws Exception {
        Tools.require("nbd-client", "/usr/sbin/nbd-client");
        Path client = clients.get(key);
        String out = Tools.ok(60, "/usr/sbin/nbd-client", "-certfile", client.resolve(TestPki.CLIENT_CERT).toString(),
                "-keyfile", client.resolve(TestPki.CLIENT_KEY).toString(), "-cacertfile", client.resolve(TestPki.CA_CERT).toString(),
                "-tlshostname", "localhost", "-l", "127.0.0.1", String.valueOf(target.port));
        List<String> names = out.lines().map(String::strip).filter(l -> !l.isEmpty() && !l.startsWith("Negotiation")).sorted().toList();
        assertEquals(List.of("fp", "public", "subj"), names, out);
    }

    /** OpenSSL (Python's ssl module) with the very same files lists the same exports: nothing depends on the client's library. */
    @ParameterizedTest
    @EnumSource(names = {"RSA_PKCS1", "RSA_PKCS8", "EC_SEC1", "EC_PKCS8"})
    void pythonOpenSslListsTheSame(TestPki.Key key) throws Exception {
        Tools.Result list = PythonNbdTls.list(target.port, clients.get(key));
        assertEquals(new Tools.Result(0, "fp public subj\n"), list);
    }

    /** The server's key in each form certtool writes, and encrypted with its passphrase beside it. */
    @ParameterizedTest
    @EnumSource(names = {"RSA_PKCS8", "EC_SEC1", "EC_PKCS8", "EC_PKCS8_ENCRYPTED"})
    void serverKeyInEveryPemForm(TestPki.Key key) throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Path other = pki.server("server-" + key, key);
        if (key == TestPki.Key.EC_PKCS8_ENCRYPTED) {
            Files.writeString(other.resolve(TlsCredentials.SERVER_KEY_PASSPHRASE), TestPki.PASSPHRASE + "\n");
        }
        try {
            target.server.tree().write("tls/certificates", other.toString());
            String info = Tools.ok(60, "nbdinfo", "--json", uri("fp", clients.get(TestPki.Key.RSA_PKCS1)));
            assertTrue(info.contains("\"export-size\": 16777216"), info);
        } finally {
            target.server.tree().write("tls/certificates", server.toString());
        }
    }

    @Test
    void anEncryptedServerKeyWithoutItsPassphraseIsNamed() throws Exception {
        Path other = pki.server("server-no-passphrase", TestPki.Key.EC_PKCS8_ENCRYPTED);
        ControlException e = assertThrows(ControlException.class,
                () -> target.server.tree().write("tls/certificates", other.toString()));
        assertEquals("certificates=" + other + ": " + other.resolve(TestPki.SERVER_KEY) + ": the key is encrypted and no passphrase file is given",
                     e.detail());
        assertEquals(server.toString() + "\n", target.server.tree().read("tls/certificates"), "the credentials in use stay");
    }
}
