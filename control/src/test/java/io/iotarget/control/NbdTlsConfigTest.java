package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.testkit.TestPki;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** NBD TLS as the config file sets it up: credentials, exports that need TLS, allow lists; and its mistakes, by field. */
class NbdTlsConfigTest {
    private final ObjectMapper json = new ObjectMapper();
    @TempDir
    Path dir;

    private String config(Path credentials, String exportA) {
        return """
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "backends": { "a": { "type": "memory", "size": "4M", "enable": 1 } },
                  "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": {} } },
                  "nbd": { "tls": { "certificates": "%s" },
                           "exports": { "a": { %s } } } }""".formatted(credentials, exportA);
    }

    @Test
    void shouldServeATenantsExportOverTlsAsConfigured() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        TestPki pki = TestPki.create(dir.resolve("ca"), "config test CA");
        Path server = pki.server("server");
        Path tenant = pki.client("tenant-a", "/O=tenants/CN=a");
        Path other = pki.client("tenant-b", "/O=tenants/CN=b");
        String exportA = """
                "backend": "a", "cgroup": "tenants/a", "tls": true, "allow_any_client": false,
                "allowed_clients": ["%s"], "enable": 1""".formatted(TestPki.subject(tenant.resolve(TestPki.CLIENT_CERT)));
        try (Server s = Server.start(json.readTree(config(server, exportA)), dir.resolve("tokens"))) {
            int port = s.nbdAddresses().getFirst().getPort();
            assertTrue(s.summary().contains("NBD on 127.0.0.1:" + port + " (exports: a; TLS with " + server + ")"), s.summary().toString());
            String uri = "nbds://127.0.0.1:" + port + "/a?tls-certificates=";
            String info = Tools.ok(60, "nbdinfo", "--size", uri + tenant);
            assertEquals("4194304", info.strip());
            assertNotEquals(0, Tools.run(60, List.of("nbdinfo", "--size", uri + other)).exit(), "b's certificate is not on a's list");
            assertEquals("CN=a,O=tenants\n", s.mounts().read("/nbd/exports/a/allowed_clients"));
        }
    }

    @Test
    void shouldNameTheFieldOfEachTlsMistake() throws Exception {
        TestPki pki = TestPki.create(dir.resolve("ca"), "config test CA");
        Path server = pki.server("server");
        ConfigException missing = assertThrows(ConfigException.class,
                () -> Server.start(json.readTree(config(dir.resolve("nope"), "\"backend\": \"a\"")), dir.resolve("tokens")));
        assertEquals("nbd.tls.certificates = \"" + dir.resolve("nope") + "\": No such file or directory (ENOENT): certificates="
                     + dir.resolve("nope") + ": not a directory (expected: one holding ca-cert.pem, server-cert.pem and server-key.pem, "
                     + "as for qemu's tls-creds-x509)", missing.getMessage());
        ConfigException noTls = assertThrows(ConfigException.class, () -> Server.start(json.readTree(config(server,
                "\"backend\": \"a\", \"allow_any_client\": 0, \"enable\": 1")), dir.resolve("tokens")));
        assertEquals("nbd.exports.a.enable = 1: Invalid argument (EINVAL): enable=1: exports/a: allow_any_client 0 needs tls 1 "
                     + "(a client certificate is only seen over TLS)", noTls.getMessage());
        ConfigException anyClient = assertThrows(ConfigException.class, () -> Server.start(json.readTree(config(server,
                "\"backend\": \"a\", \"tls\": 1, \"allowed_clients\": [\"CN=a\"]")), dir.resolve("tokens")));
        assertEquals("nbd.exports.a.allowed_clients[0] = \"CN=a\": Invalid argument (EINVAL): exports/a/allowed_clients: "
                     + "allow_any_client is 1 (write 0 first, as for nvmet's allowed_hosts)", anyClient.getMessage());
        ConfigException bad = assertThrows(ConfigException.class, () -> Server.start(json.readTree(config(server,
                "\"backend\": \"a\", \"tls\": 1, \"allow_any_client\": 0, \"allowed_clients\": [\"tenant-a\"]")), dir.resolve("tokens")));
        assertTrue(bad.getMessage().startsWith("nbd.exports.a.allowed_clients[0] = \"tenant-a\": Invalid argument (EINVAL): "
                                               + "allowed_clients=tenant-a (expected: a SHA-256 certificate fingerprint"), bad.getMessage());
    }
}
