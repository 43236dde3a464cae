package io.iotarget.frontend.nbd;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import io.iotarget.testkit.TestPki;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The exports tree as the control plane drives it: attributes, bindings and errors. */
class ExportTreeTest {
    private Engine engine;
    private NbdServer server;
    private ConfigTree tree;
    private Device device;
    private Group tenant;

    @BeforeEach
    void start() throws Exception {
        engine = new Engine();
        server = new NbdServer(engine);
        tree = server.tree();
        device = engine.addDevice("default", new MemoryBackend(1 << 20, 512, false), null, 16);
        engine.controller().write("cgroup.subtree_control", "+io");
        tenant = engine.controller().mkdir("tenant");
        tree.mkdir("exports/default");
    }

    @AfterEach
    void stop() {
        server.close();
        engine.close();
    }

    private static void assertErrno(Errno errno, org.junit.jupiter.api.function.Executable call, String detailPart) {
        ControlException e = assertThrows(ControlException.class, call);
        assertEquals(errno, e.errno(), e.getMessage());
        assertTrue(e.detail().contains(detailPart), e.detail());
    }

    @Test
    void shouldListAndReadDefaults() throws Exception {
        assertEquals(List.of("max_request", "tls/", "exports/"), tree.list(""));
        assertEquals(List.of("default/"), tree.list("exports"));
        assertEquals(List.of("allow_any_client", "allowed_clients", "backend", "cgroup", "cgroup_id", "cgroup_per_host", "description", "enable", "max_connections",
                "readonly", "tls"),
                tree.list("exports/default"));
        assertEquals("1\n", tree.read("exports/default/allow_any_client"));
        assertEquals(List.of("certificates", "psk_file"), tree.list("tls"));
        assertEquals("\n", tree.read("tls/certificates"));
        assertEquals("0\n", tree.read("exports/default/tls"));
        assertEquals("", tree.read("exports/default/allowed_clients"));
        assertEquals(ConfigTree.Kind.FILE, tree.kind("exports/default/enable"));
        assertEquals("\n", tree.read("exports/default/cgroup"), "unbound, as a namespace: the root pays");
        assertEquals("0\n", tree.read("exports/default/cgroup_id"));
        assertEquals("0\n", tree.read("exports/default/enable"));
        assertEquals("\n", tree.read("exports/default/backend"));
    }

    @Test
    void shouldKeepCgroupAndCgroupIdInStep() throws Exception {
        tree.write("exports/default/cgroup_id", tenant.id() + "\n");
        assertEquals("/tenant\n", tree.read("exports/default/cgroup"));
        tree.write("exports/default/cgroup", "/");
        assertEquals("1\n", tree.read("exports/default/cgroup_id"));
        tree.write("exports/default/cgroup", "tenant");
        assertEquals(tenant.id() + "\n", tree.read("exports/default/cgroup_id"));
        tree.write("exports/default/cgroup_id", "0");
        assertEquals("\n", tree.read("exports/default/cgroup"), "cgroup_id=0 unbinds, as for a namespace");
    }

    @Test
    void shouldRefuseBadValuesNamingAttributeValueAndExpectation() {
        assertErrno(Errno.ENODEV, () -> tree.write("exports/default/backend", "nope"), "backend=nope (expected: an engine device name; have default)");
        assertErrno(Errno.ENOENT, () -> tree.write("exports/default/cgroup", "missing"), "cgroup=missing");
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/cgroup_id", "x1"), "cgroup_id=x1 (expected: an unsigned number");
        assertErrno(Errno.ENOENT, () -> tree.write("exports/default/cgroup_id", "999"), "cgroup_id=999");
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/readonly", "maybe"), "readonly=maybe (expected: 1, y, t or on; 0, n, f or off)");
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/enable", "1"), "backend is not set");
        assertErrno(Errno.ENOENT, () -> tree.write("exports/default/size", "1"), "exports/default/size");
        assertErrno(Errno.EEXIST, () -> tree.mkdir("exports/default"), "exists");
        assertErrno(Errno.EPERM, () -> tree.mkdir("other"), "expected: exports/<name>");
        assertErrno(Errno.EISDIR, () -> tree.read("exports/default"), "is a directory");
    }

    @Test
    void shouldHoldDeviceAndGroupWhileEnabledAndRefuseChangesWithEbusy() throws Exception {
        tree.write("exports/default/backend", "default");
        tree.write("exports/default/cgroup", "tenant");
        tree.write("exports/default/enable", "1");
        assertEquals("1\n", tree.read("exports/default/enable"));
        assertEquals(1, engine.users(device));
        assertErrno(Errno.EBUSY, () -> engine.controller().rmdir("tenant"), "bound");
        assertErrno(Errno.EBUSY, () -> engine.removeDevice(device), "used by");
        assertErrno(Errno.EBUSY, () -> tree.write("exports/default/backend", "default"), "export is enabled");
        assertErrno(Errno.EBUSY, () -> tree.write("exports/default/cgroup", "/"), "export is enabled");
        assertErrno(Errno.EBUSY, () -> tree.write("exports/default/cgroup_id", "1"), "export is enabled");
        assertErrno(Errno.EBUSY, () -> tree.write("exports/default/readonly", "1"), "export is enabled");
        tree.write("exports/default/description", "changeable any time");
        assertEquals("changeable any time", server.exports().find("").description());
        tree.write("exports/default/enable", "0");
        assertEquals(0, engine.users(device));
        tree.write("exports/default/enable", "1");
        tree.rmdir("exports/default");                  // removing an enabled export disables it first
        assertEquals(0, engine.users(device));
        engine.controller().rmdir("tenant");
        assertEquals(List.of(), tree.list("exports"));
    }

    @Test
    void shouldKeepAllowedClientsInTheFormOpensslPrints() throws Exception {
        String fingerprint = "4bb816b072998ddb1796a2e4b74f70212eea9f605848ea4b1e0a9d767095908e";
        String printed = "4B:B8:16:B0:72:99:8D:DB:17:96:A2:E4:B7:4F:70:21:2E:EA:9F:60:58:48:EA:4B:1E:0A:9D:76:70:95:90:8E";
        String path = "exports/default/allowed_clients";
        assertErrno(Errno.EINVAL, () -> tree.write(path, fingerprint), "allow_any_client is 1 (write 0 first, as for nvmet's allowed_hosts)");
        tree.write("exports/default/allow_any_client", "0");
        tree.write(path, fingerprint + "\n");
        tree.write(path, "CN=client, O=tenant a\n" + printed.toLowerCase());   // the same fingerprint again: kept once
        assertEquals(printed + "\nCN=client,O=tenant a\n", tree.read(path));
        assertErrno(Errno.EINVAL, () -> tree.write(path, "CN=other\nnot an identity"), "allowed_clients=not an identity (expected: a SHA-256");
        assertErrno(Errno.EINVAL, () -> tree.write(path, "AB:CD"), "AB:CD (expected: a SHA-256");
        assertEquals(printed + "\nCN=client,O=tenant a\n", tree.read(path), "a refused write changes nothing, not even its good lines");
        tree.write(path, "-cn=CLIENT,o=Tenant A");                      // DNs compare as X.500 names do
        assertEquals(printed + "\n", tree.read(path));
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/allow_any_client", "1"), "allowed_clients is not empty");
        tree.write(path, "");
        assertEquals("", tree.read(path));
        tree.write("exports/default/allow_any_client", "1");
    }

    @Test
    void shouldEnableTlsExportsOnlyWithCredentialsAndAllowListsOnlyWithTls(@TempDir Path dir) throws Exception {
        Path credentials = TestPki.create(dir.resolve("ca"), "tree test CA").server("server");
        tree.write("exports/default/backend", "default");
        tree.write("exports/default/allow_any_client", "0");
        tree.write("exports/default/allowed_clients", "CN=client");
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/enable", "1"), "exports/default: allow_any_client 0 needs tls 1");
        tree.write("exports/default/tls", "1");
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/enable", "1"), "tls 1 needs the server's credentials in tls/certificates");
        tree.write("tls/certificates", credentials + "\n");
        assertEquals(credentials + "\n", tree.read("tls/certificates"));
        tree.write("exports/default/enable", "1");
        Export live = server.exports().find("default");
        assertTrue(live.tls() && !live.allowAnyClient() && live.allowedClients().size() == 1, live.toString());
        assertErrno(Errno.EINVAL, () -> tree.write("exports/default/tls", "0"), "allow_any_client 0 needs tls 1");
        assertErrno(Errno.EBUSY, () -> tree.write("tls/certificates", ""), "enabled exports need TLS: default");
        tree.write("exports/default/allowed_clients", "");                // changeable while enabled: published at once
        assertEquals(List.of(), server.exports().find("default").allowedClients());
        tree.write("exports/default/allow_any_client", "1");
        tree.write("exports/default/tls", "0");
        tree.write("tls/certificates", "");
        assertEquals("\n", tree.read("tls/certificates"));
    }

    @Test
    void shouldRefuseCertificateDirectoriesNamingTheFileAndTheProblem(@TempDir Path dir) throws Exception {
        TestPki pki = TestPki.create(dir.resolve("ca"), "tree test CA");
        Path good = pki.server("server");
        assertErrno(Errno.EINVAL, () -> tree.write("tls/certificates", "relative/dir"), "certificates=relative/dir (expected: an absolute directory path)");
        assertErrno(Errno.ENOENT, () -> tree.write("tls/certificates", dir.resolve("none").toString()), "not a directory");
        Path noKey = Files.createDirectories(dir.resolve("no-key"));
        Files.copy(good.resolve(TestPki.CA_CERT), noKey.resolve(TestPki.CA_CERT));
        Files.copy(good.resolve(TestPki.SERVER_CERT), noKey.resolve(TestPki.SERVER_CERT));
        assertErrno(Errno.ENOENT, () -> tree.write("tls/certificates", noKey.toString()), "no readable server-key.pem");
        Path otherKey = pki.client("client", "/CN=client").resolve(TestPki.CLIENT_KEY);
        Files.copy(otherKey, noKey.resolve(TestPki.SERVER_KEY));
        assertErrno(Errno.EINVAL, () -> tree.write("tls/certificates", noKey.toString()),
                noKey.resolve(TestPki.SERVER_KEY) + ": is not the key of the first certificate in " + noKey.resolve(TestPki.SERVER_CERT));
        assertEquals("\n", tree.read("tls/certificates"), "nothing was loaded");
        assertErrno(Errno.ENOENT, () -> tree.write("tls/other", "x"), "no tls/other in the NBD tree");
    }
}
