package io.iotarget.frontend.nbd;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.model.Device;
import io.iotarget.testkit.TestPki;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static io.iotarget.frontend.nbd.TestTarget.delta;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * NBD over TLS with the clients people use — libnbd (nbdinfo, nbdcopy, the Python binding) and
 * QEMU (qemu-img, qemu-io with a tls-creds-x509 object) — each with credentials in the same
 * directory layout: tenant a's certificate opens export {@code a} (listed by fingerprint) and
 * its IO is charged to tenants/a; tenant b's certificate (listed by subject) opens {@code b};
 * neither sees nor opens the other's export; without TLS neither is listed and opening gets
 * TLS_REQD; a client of another CA is refused; {@code public} still serves plaintext clients.
 */
class TlsClientsTest {
    private static final long MiB = 1 << 20;
    @TempDir
    static Path dir;
    private static TestTarget target;
    private static Path tenantA;
    private static Path tenantB;
    private static Path stranger;
    private static Device deviceA;
    private static CountingBackend backendA;

    @BeforeAll
    static void start() throws Exception {
        TestPki pki = TestPki.create(dir.resolve("ca"), "nbd clients CA");
        Path server = pki.server("server");
        tenantA = pki.client("tenant-a", "/O=tenants/CN=a");
        tenantB = pki.client("tenant-b", "/O=tenants/CN=b");
        stranger = TestPki.create(dir.resolve("other-ca"), "another CA").client("stranger", "/O=tenants/CN=a");
        target = new TestTarget();
        target.server.tree().write("tls/certificates", server.toString());
        backendA = new CountingBackend(new MemoryBackend(16 * MiB, 512, false));
        deviceA = target.export("a", backendA, false);
        target.memoryExport("b", 16 * MiB);
        target.memoryExport("public", 4 * MiB);
        for (String e : List.of("a", "b")) {
            target.server.tree().write("exports/" + e + "/tls", "1");
            target.server.tree().write("exports/" + e + "/allow_any_client", "0");
        }
        target.server.tree().write("exports/a/allowed_clients", TestPki.fingerprint(tenantA.resolve(TestPki.CLIENT_CERT)));
        target.server.tree().write("exports/b/allowed_clients", TestPki.subject(tenantB.resolve(TestPki.CLIENT_CERT)));
    }

    @AfterAll
    static void stop() {
        assertEquals(0, target.server.unexpectedErrors());
        target.close();
    }

    private static String tlsUri(String export, Path credentials) {
        return "nbds://127.0.0.1:" + target.port + "/" + export + "?tls-certificates=" + credentials;
    }

    private Path randomFile(String name, long size, long seed) throws Exception {
        Path p = dir.resolve(name);
        byte[] b = new byte[(int) size];
        new Random(seed).nextBytes(b);
        Files.write(p, b);
        return p;
    }

    @Test
    void nbdinfoOpensAndListsOnlyWhatTheCertificateAllows() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        String info = Tools.ok(60, "nbdinfo", "--json", tlsUri("a", tenantA));
        assertTrue(info.contains("\"export-size\": 16777216"), info);
        assertTrue(info.contains("\"TLS\": true") || info.contains("tls"), info);
        String listA = Tools.ok(60, "nbdinfo", "--list", "--json", tlsUri("", tenantA));
        assertTrue(listA.contains("\"export-name\": \"a\"") && listA.contains("\"export-name\": \"public\""), listA);
        assertTrue(!listA.contains("\"export-name\": \"b\""), "a does not see b: " + listA);
        Tools.Result wrong = Tools.run(60, List.of("nbdinfo", tlsUri("a", tenantB)));
        Tools.Result unknown = Tools.run(60, List.of("nbdinfo", tlsUri("nope", tenantB)));
        assertNotEquals(0, wrong.exit());
        assertTrue(wrong.out().contains("No such file or directory for export: a"), wrong.out());
        assertEquals(unknown.out().replace("export: nope", "export: a"), wrong.out(), "another tenant's export looks like no export at all");
        String plainList = Tools.ok(60, "nbdinfo", "--list", "--json", "nbd://127.0.0.1:" + target.port + "/");
        assertTrue(plainList.contains("\"export-name\": \"public\"") && !plainList.contains("\"export-name\": \"a\"")
                   && !plainList.contains("\"export-name\": \"b\""), "without TLS only the plaintext export: " + plainList);
        Tools.Result plain = Tools.run(60, List.of("nbdinfo", "nbd://127.0.0.1:" + target.port + "/a"));
        assertNotEquals(0, plain.exit());
        assertTrue(plain.out().contains("Operation not supported for export: a"), "libnbd's word for TLS_REQD: " + plain.out());
        String publicInfo = Tools.ok(60, "nbdinfo", "--json", "nbd://127.0.0.1:" + target.port + "/public");
        assertTrue(publicInfo.contains("\"export-size\": 4194304"), publicInfo);
    }

    @Test
    void nbdinfoRefusesAServerOrClientOfAnotherCa() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Tools.Result r = Tools.run(60, List.of("nbdinfo", tlsUri("a", stranger)));
        assertNotEquals(0, r.exit());
        assertTrue(r.out().contains("Error in the certificate verification"), "the stranger's CA did not issue the server's certificate: " + r.out());
        // The stranger's certificate (same subject as a's) with our CA, so it trusts our server: the server names no
        // CAs, so GnuTLS shows the certificate, and the server refuses it at the handshake.
        Path mixed = Files.createDirectories(dir.resolve("mixed"));
        Files.copy(tenantA.resolve(TestPki.CA_CERT), mixed.resolve(TestPki.CA_CERT));
        Files.copy(stranger.resolve(TestPki.CLIENT_CERT), mixed.resolve(TestPki.CLIENT_CERT));
        Files.copy(stranger.resolve(TestPki.CLIENT_KEY), mixed.resolve(TestPki.CLIENT_KEY));
        Tools.Result refused = Tools.run(60, List.of("nbdinfo", tlsUri("a", mixed)));
        assertNotEquals(0, refused.exit(), refused.out());
        assertTrue(refused.out().contains("A TLS fatal alert has been received"), refused.out());
    }

    @Test
    void nbdcopyCopiesInAndOutOverTlsChargedToTheExportsGroup() throws Exception {
        Tools.require("nbdcopy", "/usr/bin/nbdcopy");
        Path src = randomFile("in.img", 16 * MiB, 5);
        Map<String, Long> before = target.ioStat("tenants/a", deviceA);
        Tools.ok(120, "nbdcopy", src.toString(), tlsUri("a", tenantA));
        Map<String, Long> afterIn = target.ioStat("tenants/a", deviceA);
        assertEquals(16 * MiB, delta(before, afterIn).get("wbytes"), "every byte written once, charged to tenants/a");
        Path back = dir.resolve("out.img");
        Tools.ok(120, "nbdcopy", tlsUri("a", tenantA), back.toString());
        assertArrayEquals(Files.readAllBytes(src), Files.readAllBytes(back));
        assertEquals(16 * MiB, delta(afterIn, target.ioStat("tenants/a", deviceA)).get("rbytes"));
        backendA.assertCharged(target.ioStat("tenants/a", deviceA), "io.stat of tenants/a vs what the backend saw");
        Tools.Result wrong = Tools.run(60, List.of("nbdcopy", src.toString(), tlsUri("a", tenantB)));
        assertNotEquals(0, wrong.exit(), "b's certificate cannot write to a");
    }

    @Test
    void pythonLibnbdWithSetTls() throws Exception {
        Tools.require("python3 with libnbd", "/usr/lib/python3/dist-packages/nbd.py");
        String script = String.join("\n",
                "import nbd",
                "def handle(tls, certs=None):",
                "    h = nbd.NBD()",
                "    h.set_tls(tls)",
                "    if certs: h.set_tls_certificates(certs)",
                "    return h",
                "h = handle(nbd.TLS_REQUIRE, '" + tenantA + "')",
                "h.set_export_name('a')",
                "h.connect_tcp('127.0.0.1', '" + target.port + "')",
                "assert h.get_tls_negotiated()",
                "buf = bytes(range(256)) * 256",
                "h.pwrite(buf, 1048576)",
                "assert h.pread(len(buf), 1048576) == buf",
                "h.flush()",
                "h.shutdown()",
                // Without TLS: the server says TLS is required.
                "h = handle(nbd.TLS_DISABLE)",
                "h.set_export_name('a')",
                "try:",
                "    h.connect_tcp('127.0.0.1', '" + target.port + "')",
                "    raise SystemExit('opened a without TLS')",
                "except nbd.Error as e:",
                "    assert 'TLS' in str(e) or 'tls' in str(e), e",
                // Option mode, plaintext: only the plaintext export is listed.
                "h = handle(nbd.TLS_DISABLE)",
                "h.set_opt_mode(True)",
                "h.connect_tcp('127.0.0.1', '" + target.port + "')",
                "names = []",
                "h.opt_list(lambda name, desc: names.append(name))",
                "assert names == ['public'], names",
                "h.opt_abort()",
                // Another tenant's certificate: a is neither listed nor opened.
                "h = handle(nbd.TLS_REQUIRE, '" + tenantB + "')",
                "h.set_opt_mode(True)",
                "h.connect_tcp('127.0.0.1', '" + target.port + "')",
                "names = []",
                "h.opt_list(lambda name, desc: names.append(name))",
                "assert names == ['b', 'public'], names",
                "h.set_export_name('a')",
                "try:",
                "    h.opt_go()",
                "    raise SystemExit('b opened a')",
                "except nbd.Error as e:",
                "    assert 'ENOENT' in str(e), e",                   // NBD_REP_ERR_UNKNOWN, as for a name that does not exist
                "print('PYTHON-OK')");
        Map<String, Long> before = target.ioStat("tenants/a", deviceA);
        String out = Tools.ok(60, "/usr/bin/python3", "-c", script);
        assertTrue(out.contains("PYTHON-OK"), out);
        Map<String, Long> d = delta(before, target.ioStat("tenants/a", deviceA));
        assertEquals(65536L, d.get("wbytes"));
        assertEquals(65536L, d.get("rbytes"));
        assertEquals(2L, d.get("wios"), "the write and the flush");
    }

    @Test
    void qemuImgAndQemuIoWithTlsCredsObjects() throws Exception {
        Tools.require("qemu-img", "/usr/bin/qemu-img");
        Tools.require("qemu-io", "/usr/bin/qemu-io");
        Path src = randomFile("qemu-src.img", 16 * MiB, 7);
        String objectA = "tls-creds-x509,id=tls0,dir=" + tenantA + ",endpoint=client";
        String imageA = "driver=nbd,host=127.0.0.1,port=" + target.port + ",export=a,tls-creds=tls0";
        Map<String, Long> before = target.ioStat("tenants/a", deviceA);
        Tools.ok(120, "qemu-img", "convert", "-n", "--object", objectA, "-f", "raw", src.toString(), "--target-image-opts", imageA);
        String compare = Tools.ok(120, "qemu-img", "compare", "--object", objectA, "--image-opts", "driver=file,filename=" + src, imageA);
        assertTrue(compare.contains("Images are identical"), compare);
        Map<String, Long> d = delta(before, target.ioStat("tenants/a", deviceA));
        assertTrue(d.get("wbytes") >= 16 * MiB && d.get("rbytes") >= 16 * MiB, "charged to tenants/a: " + d);
        String io = Tools.ok(60, "qemu-io", "--object", objectA, "--image-opts", imageA,
                "-c", "write -P 0x5a 8M 64k", "-c", "read -P 0x5a 8M 64k");
        assertTrue(!io.contains("Pattern verification failed") && !io.contains("error"), io);
        String objectB = "tls-creds-x509,id=tls0,dir=" + tenantB + ",endpoint=client";
        Tools.Result wrong = Tools.run(60, List.of("qemu-io", "--object", objectB, "--image-opts", imageA, "-c", "read 0 4k"));
        assertNotEquals(0, wrong.exit(), wrong.out());
        assertTrue(wrong.out().contains("Requested export not available") && wrong.out().contains("server reported: no export named 'a'"), wrong.out());
        Tools.Result plain = Tools.run(60, List.of("qemu-img", "info", "nbd://127.0.0.1:" + target.port + "/a"));
        assertNotEquals(0, plain.exit(), plain.out());
        assertTrue(plain.out().contains("TLS negotiation required"), plain.out());
        String publicInfo = Tools.ok(60, "qemu-img", "info", "nbd://127.0.0.1:" + target.port + "/public");
        assertTrue(publicInfo.contains("4 MiB"), publicInfo);
    }
}
