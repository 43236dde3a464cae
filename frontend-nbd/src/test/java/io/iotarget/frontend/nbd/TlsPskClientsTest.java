package io.iotarget.frontend.nbd;

import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.TestPki;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NBD over TLS with pre-shared keys, beside certificates on the same port: keys made by GnuTLS's
 * psktool in {@code tls/psk_file}; libnbd (nbdinfo, nbdcopy with {@code nbds://USER@HOST/?tls-psk-file=FILE})
 * and qemu ({@code tls-creds-psk}) as clients. Export {@code a} admits
 * {@code psk:alice}, {@code mixed} admits {@code psk:bob} and a certificate; a wrong key or an
 * unknown username opens and lists nothing.
 */
class TlsPskClientsTest {
    private static final long MiB = 1 << 20;
    @TempDir
    static Path dir;
    private static TestTarget target;
    private static Path keys;
    private static Path certificateClient;

    @BeforeAll
    static void start() throws Exception {
        Tools.require("psktool (gnutls-bin)", "/usr/bin/psktool");
        keys = dir.resolve("keys.psk");
        for (String user : List.of("alice", "bob")) Tools.ok(30, "psktool", "-u", user, "-p", keys.toString());
        TestPki pki = TestPki.create(dir.resolve("ca"), "psk test CA");
        Path server = pki.server("server");
        certificateClient = pki.client("cert", "/O=tenants/CN=carol");
        target = new TestTarget();
        target.server.tree().write("tls/certificates", server.toString());
        target.server.tree().write("tls/psk_file", keys.toString());
        for (String e : List.of("a", "mixed")) {
            target.memoryExport(e, 16 * MiB);
            target.server.tree().write("exports/" + e + "/tls", "1");
            target.server.tree().write("exports/" + e + "/allow_any_client", "0");
        }
        target.memoryExport("public", 4 * MiB);
        target.server.tree().write("exports/a/allowed_clients", "psk:alice");
        target.server.tree().write("exports/mixed/allowed_clients", "psk:bob\n" + TestPki.subject(certificateClient.resolve(TestPki.CLIENT_CERT)));
    }

    /**
     * Every client's connection ends when the client ends it: none is left for the handshake
     * limit to close. nbdinfo --list sends NBD_OPT_ABORT and close_notify together; Bouncy
     * Castle's engine ends the session at close_notify, so the answer to the abort could never be
     * sent, and the connection used to wait the limit out (10 s).
     */
    @AfterEach
    void noConnectionWaitsForTheHandshakeLimit() throws Exception {
        Await.within(Duration.ofSeconds(30), () -> target.server.connectionCount() == 0);
        assertEquals(0, target.server.counters().counter(NbdCounter.HANDSHAKE_TIMEOUTS), "connections closed by the handshake limit");
    }

    @AfterAll
    static void stop() {
        assertEquals(0, target.server.unexpectedErrors());
        target.close();
    }

    /** libnbd's PSK URI; the username goes before the host (libnbd 1.14 has no tls-username parameter yet). */
    private static String uri(String export, String user, Path file) {
        return "nbds://" + user + "@127.0.0.1:" + target.port + "/" + export + "?tls-psk-file=" + file;
    }

    private static List<String> listed(String json) {
        return Arrays.stream(new String[]{"a", "mixed", "public"}).filter(e -> json.contains("\"export-name\": \"" + e + "\"")).toList();
    }

    @Test
    void nbdinfoListsAndOpensWhatTheKeyAllows() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        assertEquals(List.of("a", "public"), listed(Tools.ok(60, "nbdinfo", "--list", "--json", uri("", "alice", keys))));
        assertEquals(List.of("mixed", "public"), listed(Tools.ok(60, "nbdinfo", "--list", "--json", uri("", "bob", keys))));
        assertTrue(Tools.ok(60, "nbdinfo", "--json", uri("a", "alice", keys)).contains("\"export-size\": 16777216"));
        Tools.Result other = Tools.run(60, List.of("nbdinfo", uri("a", "bob", keys)));
        assertNotEquals(0, other.exit());
        assertTrue(other.out().contains("No such file or directory for export: a"), other.out());
        // A certificate client on the same port at the same time.
        String certificate = Tools.ok(60, "nbdinfo", "--list", "--json",
                "nbds://127.0.0.1:" + target.port + "/?tls-certificates=" + certificateClient);
        assertEquals(List.of("mixed", "public"), listed(certificate));
    }

    @Test
    void aWrongKeyOrAnUnknownUsernameOpensAndListsNothing() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Path wrong = dir.resolve("wrong.psk");
        Tools.ok(30, "psktool", "-u", "alice", "-p", wrong.toString());     // alice's name, another key
        Path unknown = dir.resolve("unknown.psk");
        Tools.ok(30, "psktool", "-u", "mallory", "-p", unknown.toString());
        for (String u : List.of(uri("", "alice", wrong), uri("a", "alice", wrong), uri("", "mallory", unknown), uri("a", "mallory", unknown))) {
            Tools.Result r = Tools.run(60, List.of("nbdinfo", "--list", u));
            assertNotEquals(0, r.exit(), u + ": " + r.out());
            assertTrue(r.out().contains("gnutls_handshake"), "the handshake fails: " + r.out());
            assertFalse(r.out().contains("export="), r.out());
        }
    }

    @Test
    void nbdcopyWritesAndReadsBackWithItsKey() throws Exception {
        Tools.require("nbdcopy", "/usr/bin/nbdcopy");
        byte[] data = new byte[(int) (4 * MiB)];
        new Random(3).nextBytes(data);
        Path src = Files.write(dir.resolve("in.img"), data);
        Path back = dir.resolve("out.img");
        Tools.ok(120, "nbdcopy", src.toString(), uri("a", "alice", keys));
        Tools.ok(120, "nbdcopy", uri("a", "alice", keys), back.toString());
        assertArrayEquals(data, Arrays.copyOf(Files.readAllBytes(back), data.length));
        assertNotEquals(0, Tools.run(60, List.of("nbdcopy", src.toString(), uri("a", "bob", keys))).exit(), "bob's key cannot write to a");
    }

    @Test
    void underCgroupPerHostAPskClientPaysInTheChildNamedAfterItsUsername() throws Exception {
        Tools.require("nbdcopy", "/usr/bin/nbdcopy");
        Device device = target.memoryExport("perhost", 4 * MiB);
        target.server.tree().write("exports/perhost/enable", "0");
        target.server.tree().write("exports/perhost/tls", "1");
        target.server.tree().write("exports/perhost/allow_any_client", "0");
        target.server.tree().write("exports/perhost/allowed_clients", "psk:alice");
        target.server.tree().write("exports/perhost/cgroup_per_host", "1");
        target.server.tree().write("exports/perhost/enable", "1");
        byte[] data = new byte[(int) MiB];
        new Random(5).nextBytes(data);
        Tools.ok(120, "nbdcopy", Files.write(dir.resolve("perhost.img"), data).toString(), uri("perhost", "alice", keys));
        assertEquals(MiB, target.ioStat("tenants/perhost/psk:alice", device).get("wbytes"), "alice's writes, in the child named after her PSK username");
        assertEquals(List.of("psk:alice/"), target.engine.controller().list("tenants/perhost").stream().filter(e -> e.endsWith("/")).toList(),
                     "no child named after the address");
    }

    @Test
    void qemuWithTlsCredsPsk() throws Exception {
        Tools.require("qemu-img", "/usr/bin/qemu-img");
        Tools.require("qemu-io", "/usr/bin/qemu-io");
        Path qemuDir = Files.createDirectories(dir.resolve("qemu-alice"));
        Files.copy(keys, qemuDir.resolve("keys.psk"));                      // qemu reads DIR/keys.psk, the line of its username
        String object = "tls-creds-psk,id=tls0,dir=" + qemuDir + ",endpoint=client,username=alice";
        String a = "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=a,tls-creds=tls0";
        String io = Tools.ok(60, "qemu-io", "--object", object, "--image-opts", a, "-c", "write -P 0x5c 2M 64k", "-c", "read -P 0x5c 2M 64k");
        assertFalse(io.contains("Pattern verification failed") || io.contains("error"), io);
        assertTrue(Tools.ok(60, "qemu-img", "info", "--object", object, "--image-opts", a).contains("16 MiB"));
        Tools.Result mixed = Tools.run(60, List.of("qemu-io", "--object", object, "--image-opts",
                "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=mixed,tls-creds=tls0", "-c", "read 0 4k"));
        assertNotEquals(0, mixed.exit(), mixed.out());
        assertTrue(mixed.out().contains("server reported: no export named 'mixed'"), mixed.out());
    }

    /** Writing the path again reads the file anew: a key replaced in it works, the old one no longer does. */
    @Test
    void rewritingThePskFileReadsItAnew() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Path rotated = dir.resolve("rotated.psk");
        Tools.ok(30, "psktool", "-u", "alice", "-p", rotated.toString());
        Path old = dir.resolve("old.psk");
        Files.copy(keys, old);
        Files.copy(rotated, keys, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        try {
            assertEquals(0, Tools.run(60, List.of("nbdinfo", "--list", uri("", "alice", old))).exit(), "not read again until written");
            target.server.tree().write("tls/psk_file", keys.toString());
            assertNotEquals(0, Tools.run(60, List.of("nbdinfo", "--list", uri("", "alice", old))).exit(), "the old key is gone");
            assertEquals(List.of("a", "public"), listed(Tools.ok(60, "nbdinfo", "--list", "--json", uri("", "alice", keys))));
        } finally {
            Files.copy(old, keys, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
            target.server.tree().write("tls/psk_file", keys.toString());
        }
    }

    /** Keys alone: the certificates can go while exports need TLS (the keys keep it up); a certificate client then fails. */
    @Test
    void keysAloneServeTls() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        String certificates = target.server.tree().read("tls/certificates").strip();
        target.server.tree().write("tls/certificates", "");
        try {
            assertEquals(List.of("a", "public"), listed(Tools.ok(60, "nbdinfo", "--list", "--json", uri("", "alice", keys))));
            Tools.Result certificate = Tools.run(60, List.of("nbdinfo", "--list",
                    "nbds://127.0.0.1:" + target.port + "/?tls-certificates=" + certificateClient));
            assertNotEquals(0, certificate.exit(), certificate.out());
            ControlException e = assertThrows(ControlException.class, () -> target.server.tree().write("tls/psk_file", ""));
            assertEquals("tls/psk_file: enabled exports need TLS: a, mixed (write their tls 0, or disable them, first)", e.detail());
        } finally {
            target.server.tree().write("tls/certificates", certificates);
        }
    }

    @Test
    void aBadPskFileOrEntryIsNamed() throws Exception {
        Path bad = Files.writeString(dir.resolve("bad.psk"), "alice:000102030405060708090a0b0c0d0e0f\nbob 1234\n");
        ControlException e = assertThrows(ControlException.class, () -> target.server.tree().write("tls/psk_file", bad.toString()));
        assertEquals("psk_file=" + bad + ": line 2: expected USERNAME:HEXKEY, as psktool -u USERNAME -p FILE writes it", e.detail());
        assertEquals(keys + "\n", target.server.tree().read("tls/psk_file"), "the keys in use stay");
        e = assertThrows(ControlException.class, () -> target.server.tree().write("exports/a/allowed_clients", "psk:"));
        assertEquals("allowed_clients=psk: (expected: psk:USERNAME, a username without ':' or spaces)", e.detail());
        assertEquals("psk:alice\n", target.server.tree().read("exports/a/allowed_clients"));
    }
}
