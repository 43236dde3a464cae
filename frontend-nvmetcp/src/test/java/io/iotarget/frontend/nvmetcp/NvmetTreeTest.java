package io.iotarget.frontend.nvmetcp;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.file.Path;
import java.util.List;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The configfs-shaped tree: nvmet's layout, value formats and errnos, and what enabling binds. */
class NvmetTreeTest {
    private static final String S = "subsystems/nqn.2026-11.io.iotarget:t";
    private static final String NS = S + "/namespaces/1";

    private Engine engine;
    private NvmeTarget target;
    private ConfigTree tree;
    private Device device;

    @BeforeEach
    void start() throws Exception {
        engine = new Engine();
        device = engine.addDevice("default", new MemoryBackend(1 << 20, 512, false), null, 16);
        target = new NvmeTarget(engine);
        tree = target.tree();
        tree.mkdir(S);
        tree.mkdir(NS);
    }

    @AfterEach
    void stop() {
        target.close();
        engine.close();
    }

    private static ControlException refused(Errno errno, Executable op) {
        ControlException e = assertThrows(ControlException.class, op);
        assertEquals(errno, e.errno(), e.getMessage());
        return e;
    }

    @Test
    void shouldListInDependencyOrderWithEnableLast() throws Exception {
        assertEquals(List.of("hosts/", "subsystems/", "ports/", "discovery_nqn"), tree.list(""));
        assertEquals(List.of("attr_allow_any_host", "attr_version", "attr_serial", "attr_model", "attr_firmware",
                "attr_cntlid_min", "attr_cntlid_max", "attr_qid_max", "shared", "allowed_hosts/", "namespaces/"), tree.list(S));
        assertEquals(List.of("device_path", "device_uuid", "device_nguid", "readonly", "buffered_io", "ana_grpid", "cgroup_id", "cgroup", "cgroup_per_host",
                             "resv_enable", "enable"),
                tree.list(NS));
        assertEquals(ConfigTree.Kind.LINKS, tree.kind(S + "/allowed_hosts"));
        assertEquals(ConfigTree.Kind.FILE, tree.kind(NS + "/enable"));
        assertEquals(ConfigTree.Kind.DIRECTORY, tree.kind(S + "/namespaces"));
        assertEquals("0\n", tree.read(S + "/attr_allow_any_host"));
        assertEquals("1.3\n", tree.read(S + "/attr_version"));
        assertEquals("(null)\n", tree.read(NS + "/device_path"));
        assertEquals("0\n", tree.read(NS + "/cgroup_id"));
        assertEquals("nqn.2014-08.org.nvmexpress.discovery\n", tree.read("discovery_nqn"));
    }

    @Test
    void shouldRefuseBadNamesAsNvmetDoes() throws Exception {
        refused(Errno.EINVAL, () -> tree.mkdir(S + "/namespaces/0"));
        refused(Errno.EINVAL, () -> tree.mkdir(S + "/namespaces/4294967295"));
        refused(Errno.EINVAL, () -> tree.mkdir(S + "/namespaces/x"));
        refused(Errno.EEXIST, () -> tree.mkdir(NS));
        refused(Errno.EEXIST, () -> tree.mkdir(S + "/namespaces/01"));   // octal 1: the same nsid must not replace namespace 1
        tree.mkdir("ports/8");
        refused(Errno.EEXIST, () -> tree.mkdir("ports/010"));             // octal 8: port 8 stays as it is
        assertEquals(List.of("8/"), tree.list("ports"));
        refused(Errno.EINVAL, () -> tree.mkdir("ports/65536"));
        refused(Errno.EINVAL, () -> tree.mkdir("subsystems/nqn.2014-08.org.nvmexpress.discovery"));
        refused(Errno.EPERM, () -> tree.mkdir(NS + "/extra"));
        refused(Errno.ENOENT, () -> tree.read(S + "/attr_nosuch"));
        refused(Errno.ENOENT, () -> tree.mkdir("subsystems/nqn.x/namespaces/1"));
    }

    @Test
    void shouldValidateAttributesWithNamedDetails() throws Exception {
        ControlException e = refused(Errno.EINVAL, () -> tree.write(S + "/attr_allow_any_host", "maybe"));
        assertTrue(e.detail().contains("attr_allow_any_host=maybe") && e.detail().contains("expected"), e.detail());
        tree.write(S + "/attr_allow_any_host", "y\n");
        assertEquals("1\n", tree.read(S + "/attr_allow_any_host"));
        refused(Errno.EINVAL, () -> tree.write(S + "/attr_serial", "123456789012345678901"));
        refused(Errno.EINVAL, () -> tree.write(S + "/attr_serial", "tab\there"));
        tree.write(S + "/attr_serial", "SN-1");
        refused(Errno.EINVAL, () -> tree.write(S + "/attr_version", "1"));
        tree.write(S + "/attr_version", "2.0.1");
        assertEquals("2.0.1\n", tree.read(S + "/attr_version"));
        refused(Errno.EINVAL, () -> tree.write(S + "/attr_cntlid_min", "0"));
        tree.write(S + "/attr_cntlid_max", "10");
        refused(Errno.EINVAL, () -> tree.write(S + "/attr_cntlid_min", "11"));
        refused(Errno.EINVAL, () -> tree.write(S + "/attr_qid_max", "129"));
        refused(Errno.EINVAL, () -> tree.write(NS + "/device_uuid", "not-a-uuid"));
        tree.write(NS + "/device_uuid", "0b6f8b4e-1c3d-4c5e-9f7a-2b3c4d5e6f70");
        assertEquals("0b6f8b4e-1c3d-4c5e-9f7a-2b3c4d5e6f70\n", tree.read(NS + "/device_uuid"));
        tree.write(NS + "/device_nguid", "00:11:22:33:44:55:66:77:88:99:aa:bb:cc:dd:ee:ff");
        assertEquals("00112233-4455-6677-8899-aabbccddeeff\n", tree.read(NS + "/device_nguid"));
        refused(Errno.EINVAL, () -> tree.write(NS + "/device_nguid", "0011"));
        refused(Errno.EINVAL, () -> tree.write(NS + "/cgroup_id", "-1"));
        refused(Errno.ENOENT, () -> tree.write(NS + "/cgroup_id", "999999"));
        refused(Errno.ENOENT, () -> tree.write(NS + "/cgroup", "/nosuch"));
    }

    @Test
    void shouldEnableOnlyWithAUsableDeviceAndFreezeItsAttributesMeanwhile() throws Exception {
        refused(Errno.EINVAL, () -> tree.write(NS + "/enable", "1"));          // no device_path yet
        tree.write(NS + "/device_path", "nosuch");
        ControlException e = refused(Errno.ENOENT, () -> tree.write(NS + "/enable", "1"));
        assertTrue(e.detail().contains("device_path=nosuch"), e.detail());
        tree.write(NS + "/device_path", "default");
        tree.write(NS + "/enable", "1");
        assertEquals("1\n", tree.read(NS + "/enable"));
        assertEquals(1, engine.users(device), "an enabled namespace holds its device");
        refused(Errno.EBUSY, () -> engine.removeDevice(device));
        refused(Errno.EBUSY, () -> tree.write(NS + "/device_path", "other"));
        refused(Errno.EBUSY, () -> tree.write(NS + "/device_uuid", "0b6f8b4e-1c3d-4c5e-9f7a-2b3c4d5e6f70"));
        refused(Errno.EBUSY, () -> tree.write(NS + "/cgroup_id", "0"));
        refused(Errno.EBUSY, () -> tree.write(NS + "/cgroup", "/"));
        refused(Errno.EBUSY, () -> tree.write(NS + "/readonly", "1"));
        refused(Errno.EINVAL, () -> tree.write(NS + "/buffered_io", "1"));
        tree.write(NS + "/enable", "0");
        assertEquals(0, engine.users(device));
        tree.write(NS + "/device_path", "other");
    }

    @Test
    void shouldBindTheGroupByIdOrPathAndPinItWhileEnabled() throws Exception {
        var cg = engine.controller();
        cg.write("cgroup.subtree_control", "+io");
        Group a = cg.mkdir("a");
        Group b = cg.mkdir("b");
        tree.write(NS + "/cgroup_id", Long.toString(a.id()));
        assertEquals("/a\n", tree.read(NS + "/cgroup"), "writing cgroup_id sets cgroup");
        tree.write(NS + "/cgroup", "b");
        assertEquals(b.id() + "\n", tree.read(NS + "/cgroup_id"), "writing cgroup sets cgroup_id");
        tree.write(NS + "/device_path", "default");
        tree.write(NS + "/enable", "1");
        assertEquals(1, b.members());
        refused(Errno.EBUSY, () -> cg.rmdir("b"));
        cg.rmdir("a");                                            // not bound: removable
        tree.write(NS + "/enable", "0");
        assertEquals(0, b.members());
        cg.rmdir("b");
        refused(Errno.ENOENT, () -> tree.write(NS + "/enable", "1"));  // the bound group is gone
        tree.write(NS + "/cgroup_id", "0");
        assertEquals("\n", tree.read(NS + "/cgroup"));
        tree.write(NS + "/enable", "1");                          // unbound: the root pays
        assertEquals(cg.root(), target.subsystems.get("nqn.2026-11.io.iotarget:t").table.find(1).group());
    }

    @Test
    void shouldCreateAndRemoveAFileDeviceForAnAbsolutePath(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ns.img");
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(8 << 20);
        }
        tree.write(NS + "/device_path", file.toString());
        tree.write(NS + "/buffered_io", "1");                      // @TempDir may be on a file system without O_DIRECT
        tree.write(NS + "/enable", "1");
        Device created = engine.device(file.toString());
        assertNotNull(created, "enable opened the file as an engine device");
        assertEquals(8 << 20, created.sizeBytes());
        tree.write(NS + "/enable", "0");
        assertNull(engine.device(file.toString()), "disable removed it");
        tree.write(NS + "/device_path", dir.resolve("missing.img").toString());
        refused(Errno.ENOENT, () -> tree.write(NS + "/enable", "1"));
    }

    /**
     * Issue 20.2: a subsystem other nodes serve too enables a namespace only with what every node
     * can agree on (attr_serial, device_uuid, a controller-id range of its own) over a backend
     * another process sees; each refusal names what is missing, and nothing is left half done.
     */
    @Test
    void shouldEnableASharedNamespaceOnlyWhereSeveralNodesCanServeIt(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("shared.img");
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(8 << 20);
        }
        tree.write(S + "/shared", "1");
        tree.write(NS + "/device_path", file.toString());
        tree.write(NS + "/buffered_io", "1");                      // @TempDir may be on a file system without O_DIRECT
        assertTrue(refused(Errno.EINVAL, () -> tree.write(NS + "/enable", "1")).getMessage().contains("attr_serial is not set"));
        tree.write(S + "/attr_serial", "ha0001");
        assertTrue(refused(Errno.EINVAL, () -> tree.write(NS + "/enable", "1")).getMessage().contains("attr_cntlid_min..attr_cntlid_max is the whole range"));
        tree.write(S + "/attr_cntlid_max", "1000");
        assertTrue(refused(Errno.EINVAL, () -> tree.write(NS + "/enable", "1")).getMessage().contains("device_uuid is not set"));
        assertNull(engine.device(file.toString()), "a refused enable leaves no device behind");
        tree.write(NS + "/device_uuid", "0b6f8b4e-1c3d-4c5e-9f7a-2b3c4d5e6f70");
        tree.write(NS + "/enable", "1");
        tree.write(NS + "/enable", "0");
        tree.write(NS + "/device_path", "default");
        String memory = refused(Errno.EINVAL, () -> tree.write(NS + "/enable", "1")).getMessage();
        assertTrue(memory.contains("device_path=default is a memory backend, which no other node can see"), memory);

        tree.write(S + "/shared", "0");
        tree.write(NS + "/enable", "1");                            // one node: memory is fine
        assertTrue(refused(Errno.EINVAL, () -> tree.write(S + "/shared", "1")).getMessage().contains("(namespace 1 is enabled)"));
        assertEquals("0\n", tree.read(S + "/shared"));
    }

    @Test
    void shouldLinkHostsAndSubsystemsAsConfigfsDoes() throws Exception {
        String host = "nqn.2014-08.org.nvmexpress:uuid:h1";
        tree.mkdir("hosts/" + host);
        tree.write(S + "/attr_allow_any_host", "1");
        refused(Errno.EINVAL, () -> tree.link("hosts/" + host, S + "/allowed_hosts/" + host));
        tree.write(S + "/attr_allow_any_host", "0");
        tree.link("hosts/" + host, S + "/allowed_hosts/" + host);
        assertEquals("hosts/" + host, tree.readLink(S + "/allowed_hosts/" + host));
        assertEquals(List.of(host), tree.list(S + "/allowed_hosts"));
        refused(Errno.EEXIST, () -> tree.link("hosts/" + host, S + "/allowed_hosts/again"));
        refused(Errno.EINVAL, () -> tree.write(S + "/attr_allow_any_host", "1"));
        refused(Errno.EINVAL, () -> tree.link(S, S + "/allowed_hosts/x"));
        refused(Errno.EBUSY, () -> tree.rmdir("hosts/" + host));
        refused(Errno.ENOTEMPTY, () -> tree.rmdir(S));
        tree.unlink(S + "/allowed_hosts/" + host);
        tree.rmdir("hosts/" + host);
        refused(Errno.ENOENT, () -> tree.unlink(S + "/allowed_hosts/" + host));
    }

    @Test
    void shouldListenWhileLinkedAndFreezeThePortAddressMeanwhile() throws Exception {
        tree.mkdir("ports/3");
        refused(Errno.EINVAL, () -> tree.link(S, "ports/3/subsystems/s"));  // no address yet
        refused(Errno.EINVAL, () -> tree.write("ports/3/addr_trtype", "rdma"));
        refused(Errno.EINVAL, () -> tree.write("ports/3/addr_adrfam", "ib"));
        tree.write("ports/3/addr_trtype", "tcp");
        tree.write("ports/3/addr_adrfam", "ipv4");
        tree.write("ports/3/addr_traddr", "127.0.0.1");
        tree.write("ports/3/addr_trsvcid", Integer.toString(freePort()));
        assertEquals("not specified\n", tree.read("ports/3/addr_treq"));
        tree.link(S, "ports/3/subsystems/s");
        assertTrue(target.ports.get(3).listening());
        assertEquals(ConfigTree.Kind.DIRECTORY, tree.kind("ports/3/subsystems/s"));
        assertEquals(tree.list(S), tree.list("ports/3/subsystems/s"), "a link leads to its subsystem");
        refused(Errno.EACCES, () -> tree.write("ports/3/addr_trsvcid", "4420"));
        refused(Errno.EACCES, () -> tree.write("ports/3/addr_traddr", "127.0.0.2"));
        refused(Errno.EEXIST, () -> tree.link(S, "ports/3/subsystems/again"));
        tree.rmdir(NS);
        refused(Errno.EBUSY, () -> tree.rmdir(S));
        refused(Errno.ENOTEMPTY, () -> tree.rmdir("ports/3"));
        tree.mkdir("ports/4");
        tree.write("ports/4/addr_trtype", "tcp");
        tree.write("ports/4/addr_adrfam", "ipv4");
        tree.write("ports/4/addr_traddr", "127.0.0.1");
        tree.write("ports/4/addr_trsvcid", tree.read("ports/3/addr_trsvcid"));
        refused(Errno.EADDRINUSE, () -> tree.link(S, "ports/4/subsystems/s"));
        tree.unlink("ports/3/subsystems/s");
        assertTrue(!target.ports.get(3).listening(), "the last link gone, the port stops");
        tree.write("ports/3/addr_trsvcid", "4420");
        tree.rmdir("ports/3");
        tree.write("ports/4/addr_traddr", "10.0.0.300");
        refused(Errno.EINVAL, () -> tree.link(S, "ports/4/subsystems/s"));
    }

    @Test
    void shouldKeepAHostsDhchapSettingsAndShowThemAsNvmet() throws Exception {
        String h = "hosts/nqn.2014-08.org.nvmexpress:uuid:host1";
        tree.mkdir(h);
        assertEquals(List.of("dhchap_key", "dhchap_ctrl_key", "dhchap_hash", "dhchap_dhgroup", "tls_key", "cgroup_id", "cgroup"), tree.list(h));
        assertEquals("\n", tree.read(h + "/dhchap_key"), "no key: an empty line, as nvmet");
        assertEquals("\n", tree.read(h + "/dhchap_ctrl_key"));
        assertEquals("hmac(sha256)\n", tree.read(h + "/dhchap_hash"));
        assertEquals("null\n", tree.read(h + "/dhchap_dhgroup"));
        String key = "DHHC-1:01:FZutw06N2trA/TvbhG4i6jXua32pSJce08/ZmPlk0jMEPvkB:";
        tree.write(h + "/dhchap_key", key + "\n");
        assertEquals(key + "\n", tree.read(h + "/dhchap_key"), "the secret reads back as written, as nvmet's does");
        tree.write(h + "/dhchap_ctrl_key", "DHHC-1:00:MnBoSvHUz4hzN33W+3RcyZpvT1N6wqTqbHCF3voDojtNN4vK:");
        tree.write(h + "/dhchap_hash", "hmac(sha512)");
        tree.write(h + "/dhchap_dhgroup", "ffdhe8192");
        assertEquals("hmac(sha512)\n", tree.read(h + "/dhchap_hash"));
        assertEquals("ffdhe8192\n", tree.read(h + "/dhchap_dhgroup"));
        tree.write(h + "/dhchap_ctrl_key", "");
        assertEquals("\n", tree.read(h + "/dhchap_ctrl_key"), "an empty write removes a key, so a listing replays");
        assertEquals(key + "\n", tree.read(h + "/dhchap_key"));
    }

    @Test
    void shouldRefuseBadDhchapValuesWithoutEchoingSecrets() throws Exception {
        String h = "hosts/nqn.2014-08.org.nvmexpress:uuid:host2";
        tree.mkdir(h);
        String mistyped = "DHHC-1:01:FZutw06N2trA/TvbhG4i6jXua32pSJce08/ZmPlk0jMEPvkC:";
        ControlException e = refused(Errno.EINVAL, () -> tree.write(h + "/dhchap_key", mistyped));
        assertTrue(e.getMessage().contains("dhchap_key: the key's CRC-32 does not match"), e.getMessage());
        assertTrue(!e.getMessage().contains("FZutw06N"), "the secret is not in the message: " + e.getMessage());
        refused(Errno.EINVAL, () -> tree.write(h + "/dhchap_ctrl_key", "secret"));
        refused(Errno.EINVAL, () -> tree.write(h + "/dhchap_hash", "hmac(md5)"));
        refused(Errno.EINVAL, () -> tree.write(h + "/dhchap_hash", "sha256"));
        refused(Errno.EINVAL, () -> tree.write(h + "/dhchap_dhgroup", "ffdhe1024"));
        assertEquals("\n", tree.read(h + "/dhchap_key"), "a refused write changes nothing");
        assertEquals("hmac(sha256)\n", tree.read(h + "/dhchap_hash"));
    }

    @Test
    void shouldTakeTransportRequirementsAsNvmet() throws Exception {
        tree.mkdir("ports/5");
        assertEquals("reserved\n", tree.read("ports/5/addr_tsas"), "no transport yet, as nvmet shows it");
        refused(Errno.EINVAL, () -> tree.write("ports/5/addr_tsas", "none"));
        tree.write("ports/5/addr_trtype", "tcp");
        assertEquals("none\n", tree.read("ports/5/addr_tsas"));
        ControlException required = refused(Errno.EINVAL, () -> tree.write("ports/5/addr_treq", "required"));
        assertTrue(required.getMessage().contains("addr_tsas=tls1.3 first"), required.getMessage());
        refused(Errno.EINVAL, () -> tree.write("ports/5/addr_treq", "maybe"));
        tree.write("ports/5/addr_treq", "not required");
        assertEquals("not required\n", tree.read("ports/5/addr_treq"));
        tree.write("ports/5/addr_tsas", "none");
        assertEquals("not specified\n", tree.read("ports/5/addr_treq"), "writing addr_tsas resets addr_treq, as nvmet");
        assertEquals(List.of("addr_trtype", "addr_adrfam", "addr_traddr", "addr_trsvcid", "addr_tsas", "addr_treq",
                "param_inline_data_size", "param_max_queue_size", "ana_groups/", "subsystems/"), tree.list("ports/5"));
    }

    @Test
    void shouldAcceptTheEmbeddedDefaultConfigurationSequence() throws Exception {
        try (TargetFixture f = new TargetFixture()) {
            String s = "subsystems/" + TargetFixture.NQN;
            assertEquals("1\n", f.tree.read(s + "/namespaces/1/enable"));
            assertEquals("default\n", f.tree.read(s + "/namespaces/1/device_path"));
            assertEquals(List.of(TargetFixture.NQN), f.tree.list("ports/1/subsystems"));
            assertEquals(s, f.tree.readLink("ports/1/subsystems/" + TargetFixture.NQN));
            try (TestHost h = new TestHost(f.port, false, false)) {
                assertEquals(0, h.connect(TargetFixture.NQN, TestHost.HOST_NQN, 0, 0xFFFF, 32, 5000, false).status());
            }
        }
    }

    @Test
    void shouldFixSerialAndModelOnceAHostHasIdentifiedTheSubsystem() throws Exception {
        try (TargetFixture f = new TargetFixture(); TestHost h = f.admin(false, false)) {
            assertEquals(0, h.identify(1, 0).status());
            String s = "subsystems/" + TargetFixture.NQN;
            refused(Errno.EINVAL, () -> f.tree.write(s + "/attr_serial", "NEW"));
            refused(Errno.EINVAL, () -> f.tree.write(s + "/attr_model", "NEW"));
        }
    }

    @Test
    void shouldKeepAnaGroupsPerPortAsNvmetDoes() throws Exception {
        tree.mkdir("ports/2");
        String groups = "ports/2/ana_groups";
        assertEquals(ConfigTree.Kind.DIRECTORY, tree.kind(groups));
        assertEquals(List.of("1/"), tree.list(groups), "the default group exists on every port");
        assertEquals(List.of("ana_state"), tree.list(groups + "/1"));
        assertEquals("optimized\n", tree.read(groups + "/1/ana_state"));
        refused(Errno.EEXIST, () -> tree.mkdir(groups + "/1"));
        refused(Errno.EPERM, () -> tree.rmdir(groups + "/1"));
        refused(Errno.EINVAL, () -> tree.mkdir(groups + "/0"));
        refused(Errno.EINVAL, () -> tree.mkdir(groups + "/129"));
        refused(Errno.EINVAL, () -> tree.mkdir(groups + "/x"));
        tree.mkdir(groups + "/128");
        tree.mkdir(groups + "/0x2");                       // kstrtou32 with base 0, as nvmet
        assertEquals(List.of("1/", "2/", "128/"), tree.list(groups));
        assertEquals("inaccessible\n", tree.read(groups + "/2/ana_state"), "a new group starts inaccessible, as nvmet's");
        for (String state : List.of("optimized", "non-optimized", "inaccessible", "persistent-loss", "change")) {
            tree.write(groups + "/2/ana_state", state + "\n");
            assertEquals(state + "\n", tree.read(groups + "/2/ana_state"));
        }
        refused(Errno.EINVAL, () -> tree.write(groups + "/2/ana_state", "Optimized"));
        refused(Errno.EINVAL, () -> tree.write(groups + "/2/ana_state", "4"));
        tree.write(groups + "/2/ana_state", "optimized");
        tree.rmdir(groups + "/2");
        refused(Errno.ENOENT, () -> tree.read(groups + "/2/ana_state"));
        tree.mkdir(groups + "/2");
        assertEquals("inaccessible\n", tree.read(groups + "/2/ana_state"), "rmdir resets the port's state for the group");
        tree.mkdir("ports/3");
        assertEquals(List.of("1/"), tree.list("ports/3/ana_groups"), "groups are per port");
    }

    @Test
    void shouldTakeAnyAnaGroupIdForANamespaceAsNvmetDoes() throws Exception {
        assertEquals("1\n", tree.read(NS + "/ana_grpid"));
        refused(Errno.EINVAL, () -> tree.write(NS + "/ana_grpid", "0"));
        refused(Errno.EINVAL, () -> tree.write(NS + "/ana_grpid", "129"));
        refused(Errno.EINVAL, () -> tree.write(NS + "/ana_grpid", "x"));
        tree.write(NS + "/ana_grpid", "128");              // nvmet 6.7+ lands this in group 0 (array_index_nospec); iotarget keeps 128
        assertEquals("128\n", tree.read(NS + "/ana_grpid"));
        tree.write(NS + "/device_path", "default");
        tree.write(NS + "/enable", "1");
        tree.write(NS + "/ana_grpid", "5");                // a group no port has yet; writable while enabled
        assertEquals("5\n", tree.read(NS + "/ana_grpid"));
    }
}
