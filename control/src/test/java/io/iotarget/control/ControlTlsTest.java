package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.TestPki;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The control endpoint off plain loopback: TLS from PEM files, and the token for every request. */
class ControlTlsTest {
    private final ObjectMapper json = new ObjectMapper();
    @TempDir
    Path dir;
    private Path tokens;
    private Path cert;
    private Path key;

    @BeforeEach
    void certificate() throws Exception {
        Tools.require("openssl", "/usr/bin/openssl");
        tokens = dir.resolve("tokens");
        cert = dir.resolve("cert.pem");
        key = dir.resolve("key.pem");
        selfSigned(cert, key);
    }

    private void selfSigned(Path certFile, Path keyFile) throws Exception {
        Tools.ok(60, "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", keyFile.toString(), "-out", certFile.toString(), "-days", "2", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost");
    }

    private String config(String control, Path certFile, Path keyFile) {
        return "{ \"server\": { \"control\": \"" + control + "\", \"control_cert\": \"" + certFile + "\", \"control_key\": \"" + keyFile + "\" } }";
    }

    private String config(String control, Path certFile, Path keyFile, Path passphraseFile) {
        return "{ \"server\": { \"control\": \"" + control + "\", \"control_cert\": \"" + certFile + "\", \"control_key\": \"" + keyFile
               + "\", \"control_key_passphrase_file\": \"" + passphraseFile + "\" } }";
    }

    private record Result(int code, String out, String err) {
    }

    private Result cli(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(args, Map.of("IOTARGET_RUNTIME_DIR", tokens.toString()),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void shouldServeTlsAndNeedTheTokenForEveryRequest() throws Exception {
        try (Server server = Server.start(json.readTree(config("127.0.0.1:0", cert, key)), tokens)) {
            int port = server.controlAddress().getPort();
            Path tokenFile = tokens.resolve("control-127.0.0.1-" + port + ".token");
            assertTrue(server.summary().contains("control endpoint https://127.0.0.1:" + port + " (TLS; every request needs the token in "
                                                 + tokenFile + ", readable only by this user)"), server.summary().toString());
            String https = "https://127.0.0.1:" + port;
            assertEquals(new Result(0, "cgroup/\nbackends/\nnbd/\nnvmet/\n", ""), cli("--control", https, "--cacert", cert.toString(), "ls", "/"));
            assertEquals(new Result(0, "", ""), cli("--cacert", cert.toString(), "--control", https, "mkdir", "a"));
            Path other = tokens.resolve("other.token");
            Files.writeString(other, "not-this-servers-token\n");
            Files.setPosixFilePermissions(other, PosixFilePermissions.fromString("rw-------"));
            Result wrong = cli("--control", https, "--cacert", cert.toString(), "--token-file", other.toString(), "read", "cgroup.controllers");
            assertEquals(new Result(3, "", "iotarget: " + https + ": the listener did not prove it holds the token in " + other + ": it answered 200 with"
                                           + " a wrong proof. It is not the server that wrote that file (a file left behind by a server that stopped,"
                                           + " or another program on the port); nothing was sent to it\n"), wrong, "another server's token is not sent");
            Result untrusted = cli("--control", https, "ls", "/");
            assertEquals(3, untrusted.code);
            assertTrue(untrusted.err.contains("PKIX"), "the JDK's CAs do not vouch for a self-signed certificate: " + untrusted.err);
            assertEquals(3, cli("--control", "127.0.0.1:" + port, "ls", "/").code, "plain HTTP gets no answer from a TLS endpoint");
            assertEquals(List.of("a/"), server.mounts().list("").stream().filter(n -> n.endsWith("/")).toList(), "only the admitted mkdir");
        }
    }

    /**
     * The key in each PEM form an operator may have — SEC1 and PKCS#1 (openssl ec/rsa, certtool's
     * default), PKCS#8, PKCS#8 encrypted with the passphrase in a file — serves HTTPS as it is.
     */
    @Test
    void shouldServeWithTheKeyInEveryPemForm() throws Exception {
        Path sec1 = dir.resolve("sec1.pem");
        Tools.ok(30, "openssl", "ec", "-in", key.toString(), "-out", sec1.toString());
        Path rsaCert = dir.resolve("rsa-cert.pem");
        Path rsaKey8 = dir.resolve("rsa-key8.pem");
        Tools.ok(60, "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", rsaKey8.toString(), "-out", rsaCert.toString(),
                "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost");
        Path pkcs1 = dir.resolve("rsa-pkcs1.pem");
        Tools.ok(30, "openssl", "rsa", "-in", rsaKey8.toString(), "-traditional", "-out", pkcs1.toString());
        Path encrypted = dir.resolve("encrypted.pem");
        Path passphrase = dir.resolve("key.pass");
        Files.writeString(passphrase, "correct horse\n");
        Tools.ok(30, "openssl", "pkcs8", "-topk8", "-in", key.toString(), "-out", encrypted.toString(), "-passout", "pass:correct horse");
        assertTrue(Files.readString(sec1).contains("BEGIN EC PRIVATE KEY") && Files.readString(pkcs1).contains("BEGIN RSA PRIVATE KEY")
                   && Files.readString(encrypted).contains("BEGIN ENCRYPTED PRIVATE KEY"));
        for (String config : List.of(config("127.0.0.1:0", cert, sec1), config("127.0.0.1:0", rsaCert, pkcs1),
                                     config("127.0.0.1:0", cert, encrypted, passphrase))) {
            try (Server server = Server.start(json.readTree(config), tokens)) {
                String https = "https://127.0.0.1:" + server.controlAddress().getPort();
                Path ca = config.contains(rsaCert.toString()) ? rsaCert : cert;
                assertEquals(new Result(0, "cgroup/\nbackends/\nnbd/\nnvmet/\n", ""), cli("--control", https, "--cacert", ca.toString(), "ls", "/"), config);
            }
        }
    }

    /**
     * A certificate an intermediate CA issued: control_cert holds the leaf, then the intermediate;
     * the CLI ({@code --cacert}), curl and openssl s_client trust the root alone and read the
     * tree. Served without the intermediate, each of them refuses the endpoint for an issuer it
     * cannot find.
     */
    @Test
    void shouldServeAChainThatClientsVerifyAgainstTheRoot() throws Exception {
        Tools.require("curl", "/usr/bin/curl");
        TestPki root = TestPki.create(dir.resolve("root"), "control root CA");
        Path chained = root.intermediate(dir.resolve("intermediate"), "control intermediate CA").server("server");
        Path chain = chained.resolve(TestPki.SERVER_CERT);
        Path leafKey = chained.resolve(TestPki.SERVER_KEY);
        String pem = Files.readString(chain);
        String end = "-----END CERTIFICATE-----\n";
        Path leaf = Files.writeString(dir.resolve("leaf.pem"), pem.substring(0, pem.indexOf(end) + end.length()));
        assertTrue(pem.length() > Files.readString(leaf).length() + 100, "the intermediate follows the leaf");
        Path rootCert = root.caCert();
        try (Server server = Server.start(json.readTree(config("127.0.0.1:0", chain, leafKey)), tokens)) {
            int port = server.controlAddress().getPort();
            String https = "https://127.0.0.1:" + port;
            assertEquals(new Result(0, "cgroup/\nbackends/\nnbd/\nnvmet/\n", ""), cli("--control", https, "--cacert", rootCert.toString(), "ls", "/"));
            Path tokenFile = tokens.resolve("control-127.0.0.1-" + port + ".token");
            assertEquals("cgroup/\nbackends/\nnbd/\nnvmet/\n 200", Tools.ok(30, "sh", "-c", "curl -sS --noproxy '*' -w ' %{http_code}' --cacert " + rootCert
                    + " -H \"Authorization: Bearer $(cat " + tokenFile + ")\" '" + https + "/v1/list?path=/'"));
            String sClient = Tools.ok(30, "sh", "-c", "openssl s_client -connect 127.0.0.1:" + port + " -CAfile " + rootCert
                    + " -verify_return_error -verify_ip 127.0.0.1 -showcerts < /dev/null");
            assertTrue(sClient.contains("Verify return code: 0 (ok)"), sClient);
            assertTrue(sClient.contains("1 s:CN = control intermediate CA"), "the intermediate was sent: " + sClient);
        }
        try (Server server = Server.start(json.readTree(config("127.0.0.1:0", leaf, leafKey)), tokens)) {
            int port = server.controlAddress().getPort();
            String https = "https://127.0.0.1:" + port;
            Result cli = cli("--control", https, "--cacert", rootCert.toString(), "ls", "/");
            assertEquals(3, cli.code);
            assertTrue(cli.err.contains("PKIX path building failed") && cli.err.contains("unable to find valid certification path"), cli.err);
            Tools.Result curl = Tools.run(30, List.of("curl", "-sS", "--noproxy", "*", "--cacert", rootCert.toString(), https + "/v1/list?path=/"));
            assertEquals(60, curl.exit(), curl.out());
            assertTrue(curl.out().contains("SSL certificate problem: unable to get local issuer certificate"), curl.out());
            Tools.Result sClient = Tools.run(30, List.of("sh", "-c", "openssl s_client -connect 127.0.0.1:" + port + " -CAfile " + rootCert
                    + " -verify_return_error < /dev/null"));
            assertEquals(1, sClient.exit(), sClient.out());
            assertTrue(sClient.out().contains("verify error:num=20:unable to get local issuer certificate"), sClient.out());
        }
    }

    /** A handshake that stops part way holds its connection no longer than the request head's deadline, which includes it. */
    @Test
    void shouldCloseAStalledHandshakeAtTheHeadsDeadline() throws Exception {
        try (Server server = Server.start(json.readTree(config("127.0.0.1:0", cert, key)), tokens);
             java.net.Socket stalled = new java.net.Socket("127.0.0.1", server.controlAddress().getPort())) {
            long t0 = System.nanoTime();
            stalled.getOutputStream().write(new byte[]{0x16, 0x03, 0x01});     // the start of a ClientHello's record header
            stalled.setSoTimeout(30_000);
            try {
                assertEquals(-1, stalled.getInputStream().read(), "closed, nothing answered");
            } catch (java.net.SocketException reset) {
                // closed with our bytes unread
            }
            long ms = (System.nanoTime() - t0) / 1_000_000;
            long deadlineMs = java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(io.iotarget.control.http.ControlEndpoint.HEAD_TIMEOUT_NS);
            assertTrue(ms >= deadlineMs - 100 && ms < deadlineMs + 2_000, "closed after " + ms + " ms");
            Await.until(Duration.ofSeconds(5), () -> server.controlLoad().connections() == 0, () -> "and no longer counted: " + server.controlLoad());
        }
    }

    @Test
    void shouldRefuseANonLoopbackAddressWithoutTls() {
        ConfigException e = assertThrows(ConfigException.class,
                () -> Server.start(json.readTree("{ \"server\": { \"control\": \"0.0.0.0:0\" } }"), tokens));
        assertEquals("server.control = \"0.0.0.0:0\": not a loopback address, so the control endpoint needs TLS: set server.control_cert "
                     + "and server.control_key (PEM files); every request then needs the token", e.getMessage());
        assertEquals(new Result(2, "", "iotarget: --control http://192.0.2.1:9809: not loopback, so only https://192.0.2.1:9809 "
                                       + "(the token never travels in clear)\n"), cli("--control", "http://192.0.2.1:9809", "ls"));
    }

    @Test
    void shouldNameTheTlsKeyThatIsWrong() throws Exception {
        ConfigException e = assertThrows(ConfigException.class, () -> Server.start(json.readTree(
                "{ \"server\": { \"control\": \"127.0.0.1:0\", \"control_cert\": \"" + cert + "\" } }"), tokens));
        assertEquals("server.control_key: missing (TLS needs both server.control_cert and server.control_key)", e.getMessage());
        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree(
                "{ \"server\": { \"control\": \"127.0.0.1:0\", \"control_cert\": \"cert.pem\", \"control_key\": \"" + key + "\" } }"), tokens));
        assertEquals("server.control_cert = \"cert.pem\": expected the absolute path of a PEM file, as a string", e.getMessage());

        Path otherCert = dir.resolve("other-cert.pem");
        Path otherKey = dir.resolve("other-key.pem");
        selfSigned(otherCert, otherKey);
        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree(config("127.0.0.1:0", cert, otherKey)), tokens));
        assertEquals("server.control_key = \"" + otherKey + "\": is not the key of the first certificate in " + cert, e.getMessage());

        Path encrypted = dir.resolve("encrypted.pem");
        Path passphrase = dir.resolve("key.pass");
        Files.writeString(passphrase, "s3cret\n");
        Tools.ok(30, "openssl", "pkcs8", "-topk8", "-in", key.toString(), "-out", encrypted.toString(), "-passout", "pass:s3cret");
        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree(config("127.0.0.1:0", cert, encrypted)), tokens));
        assertEquals("server.control_key = \"" + encrypted + "\": the key is encrypted and no passphrase file is given", e.getMessage());
        Path wrongPassphrase = dir.resolve("wrong.pass");
        Files.writeString(wrongPassphrase, "guess\n");
        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree(config("127.0.0.1:0", cert, encrypted, wrongPassphrase)), tokens));
        assertEquals("server.control_key = \"" + encrypted + "\": cannot decrypt the key with the passphrase in " + wrongPassphrase
                     + " (wrong passphrase?)", e.getMessage());
        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree(config("127.0.0.1:0", cert, encrypted, dir.resolve("none.pass"))), tokens));
        assertTrue(e.getMessage().startsWith("server.control_key_passphrase_file = \"" + dir.resolve("none.pass") + "\": cannot read"), e.getMessage());
        Path notKey = dir.resolve("not-a-key.pem");
        Files.writeString(notKey, "hello\n");
        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree(config("127.0.0.1:0", cert, notKey)), tokens));
        assertEquals("server.control_key = \"" + notKey + "\": no private key (expected -----BEGIN PRIVATE KEY-----, -----BEGIN RSA PRIVATE KEY-----, "
                     + "-----BEGIN EC PRIVATE KEY----- or -----BEGIN ENCRYPTED PRIVATE KEY-----)", e.getMessage());

        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree(config("127.0.0.1:0", key, key)), tokens));
        assertTrue(e.getMessage().startsWith("server.control_cert = \"" + key + "\": "), e.getMessage());
        assertFalse(Files.exists(tokens), "no endpoint was started, so no token was written");
    }
}
