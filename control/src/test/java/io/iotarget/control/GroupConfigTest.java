package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A gateway group's shared subsystems live in etcd (docs/cluster.md, "Gateway group
 * configuration"): three in-process members over one file and a three-member etcd on loopback;
 * a namespace made through one member's control endpoint is read by an NVMe/TCP host through
 * the others, a member that starts later with nothing but its ports gets it, refused and
 * unstored changes reach no member, and a restart of every member and of etcd keeps it.
 */
class GroupConfigTest {
    private static final String NQN = "nqn.2026-12.io.example:group";
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
    private static final String UUID = "5a1e0c3d-9b7f-4e21-8c4a-0d6f2e8b1c97";
    private static final String NS = "/nvmet/subsystems/" + NQN + "/namespaces/1";
    private static final String PREFIX = "/iotarget/groups/g/config/";
    private static final Duration APPLIED = Duration.ofSeconds(10);

    @TempDir
    Path dir;
    private EtcdCluster etcd;
    private final Server[] nodes = new Server[3];
    private final int[] ports = new int[3];
    private Path disk;

    @AfterEach
    void stop() {
        for (Server s : nodes) if (s != null) s.close();
        if (etcd != null) etcd.close();
    }

    /**
     * Member {@code i}'s config: its cluster section, the shared file, its port and controller ids;
     * with {@code declares} also the subsystem's shared settings, as a config written before
     * groups would have them.
     */
    private String config(int i, boolean declares) {
        String shared = declares ? "\"attr_allow_any_host\": 1, \"attr_serial\": \"group-0001\", \"shared\": 1, " : "";
        return """
                { "server": { "control": "127.0.0.1:0" },
                  "cluster": { "node": "gw%d", "store": "%s", "nodes": 3, "group": "g" },
                  "backends": { "disk": { "type": "file", "path": "%s", "enable": 1 } },
                  "nvmet": {
                    "subsystems": { "%s": { %s"attr_cntlid_min": %d, "attr_cntlid_max": %d } },
                    "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1",
                                      "addr_trsvcid": "%d", "subsystems": ["%s"] } } } }
                """.formatted(i + 1, etcd.uri(), disk, NQN, shared, i * 100 + 1, i * 100 + 100, ports[i], NQN);
    }

    private void startNode(int i, boolean declares) throws Exception {
        nodes[i] = Server.start(new ObjectMapper().readTree(config(i, declares)), dir);
    }

    private ControlClient control(int i) throws Exception {
        return ControlClient.connect(ControlEndpoint.hostPort(nodes[i].controlAddress()), null, dir, null);
    }

    private ControlClient.Reply write(int i, String path, String value) throws Exception {
        try (ControlClient c = control(i)) {
            return c.post("write", path, null, value);
        }
    }

    private void mkdir(int i, String path) throws Exception {
        try (ControlClient c = control(i)) {
            ControlClient.Reply r = c.post("mkdir", path, null, null);
            assertTrue(r.ok(), "mkdir " + path + " on gw" + (i + 1) + ": " + r);
        }
    }

    private String read(int i, String path) throws Exception {
        return nodes[i].mounts().read(path).strip();
    }

    /** Block 0 of namespace 1 as a host reads it through member {@code i}'s port; null when the namespace does not answer. */
    private byte[] hostReads(int i) {
        try (SocketChannel admin = RawClients.nvmePastIcReq(ports[i], 0)) {
            int cntlid = RawClients.nvmeConnect(admin, NQN, HOST, 0, 0xFFFF, 32);
            try (SocketChannel io = RawClients.nvmePastIcReq(ports[i], 0)) {
                RawClients.nvmeConnect(io, NQN, HOST, 1, cntlid, 32);
                RawClients.Completion c = RawClients.nvmeReadBlocks(io, 7, 1, 0, 1);
                return c.status() == 0 ? c.data() : null;
            }
        } catch (IOException e) {
            return null;
        }
    }

    /** The group's keys in the store, with their mod revisions. */
    private Map<String, Long> storeRevisions() throws IOException {
        try (EtcdClient client = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(2))) {
            Map<String, Long> out = new TreeMap<>();
            for (EtcdClient.KeyValue kv : client.range(PREFIX).kvs()) out.put(kv.key(), kv.modRevision());
            return out;
        }
    }

    /** etcd up, a file whose block 0 holds a pattern, members 1 and 2 started with the subsystem in their files. */
    private byte[] twoMembers() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"));
        disk = dir.resolve("disk.img");
        byte[] pattern = new byte[512];
        Arrays.fill(pattern, (byte) 0xA5);
        System.arraycopy("gateway group".getBytes(StandardCharsets.US_ASCII), 0, pattern, 0, 13);
        try (RandomAccessFile f = new RandomAccessFile(disk.toFile(), "rw")) {
            f.setLength(16 << 20);
            f.write(pattern);
        }
        for (int i = 0; i < 3; i++) ports[i] = freePort();
        startNode(0, true);
        startNode(1, true);
        return pattern;
    }

    /** Namespace 1 made and enabled through member 1's control endpoint. */
    private void namespaceThroughMemberOne() throws Exception {
        mkdir(0, NS);
        for (String[] w : List.of(new String[] {"device_path", "disk"}, new String[] {"device_uuid", UUID}, new String[] {"enable", "1"})) {
            ControlClient.Reply r = write(0, NS + "/" + w[0], w[1]);
            assertTrue(r.ok(), "write " + w[0] + " on gw1: " + r);
        }
    }

    @Test
    void namespaceMadeThroughOneMemberIsServedByEveryMemberAndByOneThatStartsLater() throws Exception {
        byte[] pattern = twoMembers();
        assertEquals(null, hostReads(1), "no namespace 1 yet on gw2");
        namespaceThroughMemberOne();
        assertArrayEquals(pattern, hostReads(0), "gw1 serves the namespace it was told of");
        Await.until(APPLIED, () -> Arrays.equals(pattern, hostReads(1)), () -> "gw2 never served namespace 1: enable reads " + readOrError(1, NS + "/enable"));
        assertEquals(UUID, read(1, NS + "/device_uuid"));

        // gw3's file names its port and controller ids, and nothing of the subsystem's settings.
        startNode(2, false);
        assertArrayEquals(pattern, hostReads(2), "gw3 serves namespace 1 as soon as it has started");
        assertEquals("group-0001", read(2, "/nvmet/subsystems/" + NQN + "/attr_serial"));
        assertEquals("201", read(2, "/nvmet/subsystems/" + NQN + "/attr_cntlid_min"), "its own controller ids, not the store's");
        try (ControlClient c = control(2)) {
            ControlClient.Reply save = c.get("save", null);
            assertTrue(save.ok(), save.toString());
            assertTrue(save.body().contains("\"device_uuid\" : \"" + UUID + "\""), save.body());
            assertTrue(save.body().contains("\"attr_serial\" : \"group-0001\""), save.body());
        }

        // A change through gw2 reaches the others too.
        assertTrue(write(1, NS + "/ana_grpid", "2").ok());
        Await.until(APPLIED, () -> "2".equals(readOrError(0, NS + "/ana_grpid")) && "2".equals(readOrError(2, NS + "/ana_grpid")),
                    () -> "ana_grpid on gw1, gw3: " + readOrError(0, NS + "/ana_grpid") + ", " + readOrError(2, NS + "/ana_grpid"));
    }

    @Test
    void refusedOrUnstoredChangeReachesNoMember() throws Exception {
        twoMembers();
        namespaceThroughMemberOne();
        Await.until(APPLIED, () -> "1".equals(readOrError(1, NS + "/enable")), () -> "gw2 never enabled namespace 1");
        Map<String, Long> before = storeRevisions();
        assertEquals(2, before.size(), "the subsystem and its namespace: " + before);

        ControlClient.Reply refused = write(1, NS + "/ana_grpid", "0");
        assertEquals("EINVAL", refused.errno(), refused.toString());
        ControlClient.Reply busy = write(1, NS + "/device_uuid", "0b6f8b4e-1c3d-4c5e-9f7a-2b3c4d5e6f70");
        assertEquals("EBUSY", busy.errno(), "device_uuid is fixed while enabled: " + busy);
        ControlClient.Reply unshare = write(0, "/nvmet/subsystems/" + NQN + "/shared", "0");
        assertEquals("EPERM", unshare.errno(), unshare.toString());
        assertEquals("1", read(0, "/nvmet/subsystems/" + NQN + "/shared"), "put back on the writer");
        assertEquals(before, storeRevisions(), "nothing reached the store");

        // The store is gone: the write fails, and no member changes.
        for (int m = 0; m < etcd.size(); m++) etcd.kill(m);
        ControlClient.Reply unreachable = write(0, "/nvmet/subsystems/" + NQN + "/attr_model", "other-model");
        assertEquals("EIO", unreachable.errno(), unreachable.toString());
        assertTrue(unreachable.body().contains("could not be reached") && unreachable.body().contains("nothing was changed"), unreachable.body());
        assertEquals("iotarget", read(0, "/nvmet/subsystems/" + NQN + "/attr_model"), "put back on the writer");
        assertEquals("iotarget", read(1, "/nvmet/subsystems/" + NQN + "/attr_model"));
        for (int m = 0; m < etcd.size(); m++) etcd.restart(m);
        for (int m = 0; m < etcd.size(); m++) etcd.awaitHealthy(m);
        assertEquals(before, storeRevisions(), "the failed write is not in the store");

        // Back: a write goes through to both, their watches having been read again.
        Await.until(APPLIED, () -> {
            try {
                return write(0, "/nvmet/subsystems/" + NQN + "/attr_model", "third-model").ok();
            } catch (Exception e) {
                return false;
            }
        }, () -> "the write never succeeded once etcd was back");
        Await.until(APPLIED, () -> "third-model".equals(readOrError(1, "/nvmet/subsystems/" + NQN + "/attr_model")), () -> "gw2 never got attr_model");
        assertEquals("1", read(1, NS + "/ana_grpid"));
        assertEquals(UUID, read(1, NS + "/device_uuid"));
    }

    @Test
    void restartOfEveryMemberAndOfEtcdKeepsTheGroupsNamespace() throws Exception {
        byte[] pattern = twoMembers();
        namespaceThroughMemberOne();
        Await.until(APPLIED, () -> Arrays.equals(pattern, hostReads(1)), () -> "gw2 never served namespace 1");
        for (int i = 0; i < 2; i++) {
            nodes[i].close();
            nodes[i] = null;
        }
        for (int m = 0; m < etcd.size(); m++) etcd.kill(m);
        for (int m = 0; m < etcd.size(); m++) etcd.restart(m);
        for (int m = 0; m < etcd.size(); m++) etcd.awaitHealthy(m);
        // Their files still declare the subsystem without a namespace: the store's copy wins.
        startNode(1, true);
        startNode(0, true);
        List<String> failures = new ArrayList<>();
        for (int i = 0; i < 2; i++) if (!Arrays.equals(pattern, hostReads(i))) failures.add("gw" + (i + 1) + " does not serve namespace 1");
        assertTrue(failures.isEmpty(), failures.toString());
        assertEquals(UUID, read(0, NS + "/device_uuid"));
        assertFalse(storeRevisions().isEmpty());
    }

    @Test
    void allowedHostsRemovalsAndNewlySharedSubsystemsReachTheOtherMember() throws Exception {
        twoMembers();
        namespaceThroughMemberOne();
        Await.until(APPLIED, () -> "1".equals(readOrError(1, NS + "/enable")), () -> "gw2 never enabled namespace 1");
        String subsystem = "/nvmet/subsystems/" + NQN;

        // A host allowed through gw1: gw2 makes an entry for it and links it.
        assertTrue(write(0, subsystem + "/attr_allow_any_host", "0").ok());
        mkdir(0, "/nvmet/hosts/" + HOST);
        try (ControlClient c = control(0)) {
            ControlClient.Reply r = c.post("link", subsystem + "/allowed_hosts/" + HOST, "/nvmet/hosts/" + HOST, null);
            assertTrue(r.ok(), r.toString());
        }
        Await.until(APPLIED, () -> listOrEmpty(1, subsystem + "/allowed_hosts").equals(List.of(HOST)),
                    () -> "gw2's allowed_hosts: " + listOrEmpty(1, subsystem + "/allowed_hosts"));
        assertEquals("0", read(1, subsystem + "/attr_allow_any_host"));

        // The namespace removed through gw2 goes from gw1 and from the store.
        try (ControlClient c = control(1)) {
            ControlClient.Reply r = c.post("rmdir", NS, null, null);
            assertTrue(r.ok(), r.toString());
        }
        Await.until(APPLIED, () -> listOrEmpty(0, subsystem + "/namespaces").isEmpty(), () -> "gw1 kept namespace 1");
        assertEquals(1, storeRevisions().size(), "only the subsystem is left: " + storeRevisions());

        // A subsystem of gw2 alone joins the group when marked shared, and leaves it with rmdir through gw1.
        String other = "/nvmet/subsystems/nqn.2026-12.io.example:later";
        mkdir(1, other);
        assertTrue(write(1, other + "/attr_serial", "later-0001").ok());
        assertFalse(listOrEmpty(0, "/nvmet/subsystems").contains("nqn.2026-12.io.example:later/"), "not shared yet");
        assertTrue(write(1, other + "/shared", "1").ok());
        Await.until(APPLIED, () -> "later-0001".equals(readOrError(0, other + "/attr_serial")), () -> "gw1 never got the newly shared subsystem");
        try (ControlClient c = control(0)) {
            ControlClient.Reply r = c.post("rmdir", other, null, null);
            assertTrue(r.ok(), r.toString());
        }
        Await.until(APPLIED, () -> !listOrEmpty(1, "/nvmet/subsystems").contains("nqn.2026-12.io.example:later/"), () -> "gw2 kept it");
    }

    /**
     * Two members change one subsystem at once (gw1 its attr_model, gw2 its attr_firmware: one
     * object in the store), round after round: both may not win, since each swaps the whole
     * object against the revision it last saw. One gets EAGAIN with a message saying nothing was
     * changed, and its own tree is put back; the other's change reaches every member and the
     * store; the refused one, written again, goes through. So no change is lost, neither the
     * winner's (overwritten by the loser's stale copy) nor the loser's (taken on one member only).
     */
    @Test
    void concurrentChangesToOneSubsystemThroughTwoMembersOneGetsEagainAndNoneIsLost() throws Exception {
        twoMembers();
        String subsystem = "/nvmet/subsystems/" + NQN;
        String[] current = {read(0, subsystem + "/attr_model"), read(0, subsystem + "/attr_firmware")};
        String[] files = {"attr_model", "attr_firmware"};
        int refused = 0, rounds = 0;
        for (; rounds < 60 && refused < 3; rounds++) {
            String[] wanted = {"model-" + rounds, "fw" + rounds};
            ControlClient[] clients = {control(0), control(1)};
            CountDownLatch go = new CountDownLatch(1);
            List<CompletableFuture<ControlClient.Reply>> replies = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                int member = i;
                CompletableFuture<ControlClient.Reply> reply = new CompletableFuture<>();
                Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                        reply.complete(clients[member].post("write", subsystem + "/" + files[member], null, wanted[member]));
                    } catch (Exception e) {
                        reply.completeExceptionally(e);
                    }
                });
                replies.add(reply);
            }
            go.countDown();
            boolean[] ok = new boolean[2];
            for (int i = 0; i < 2; i++) {
                ControlClient.Reply r = replies.get(i).get(30, TimeUnit.SECONDS);
                clients[i].close();
                ok[i] = r.ok();
                if (!ok[i]) {
                    assertEquals("EAGAIN", r.errno(), "round " + rounds + ", gw" + (i + 1) + ": " + r);
                    assertTrue(r.body().contains("changed meanwhile") && r.body().contains("nothing was changed"), r.body());
                    assertEquals(current[i], read(i, subsystem + "/" + files[i]), "round " + rounds + ": put back on the refused gw" + (i + 1));
                    refused++;
                }
            }
            assertTrue(ok[0] || ok[1], "round " + rounds + ": both refused");
            for (int i = 0; i < 2; i++) if (ok[i]) current[i] = wanted[i];
            awaitEverywhere(subsystem, files, current, "round " + rounds);
            // The refused change, written again once its member has seen the winner's: it goes through.
            for (int i = 0; i < 2; i++) {
                if (ok[i]) continue;
                ControlClient.Reply again = write(i, subsystem + "/" + files[i], wanted[i]);
                assertTrue(again.ok(), "round " + rounds + ", gw" + (i + 1) + " again: " + again);
                current[i] = wanted[i];
            }
            awaitEverywhere(subsystem, files, current, "round " + rounds + ", after the retry");
        }
        System.out.println("concurrent changes through gw1 and gw2: " + refused + " refused with EAGAIN in " + rounds + " rounds");
        assertTrue(refused > 0, "the two writes never met in " + rounds + " rounds");
    }

    /** Waits until both members and the store hold {@code values} for {@code files} of {@code subsystem}. */
    private void awaitEverywhere(String subsystem, String[] files, String[] values, String when) throws Exception {
        String key = PREFIX + "subsystems/" + NQN;
        Await.until(APPLIED, () -> {
            for (int m = 0; m < 2; m++) for (int f = 0; f < files.length; f++) if (!values[f].equals(readOrError(m, subsystem + "/" + files[f]))) return false;
            try (EtcdClient client = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(2))) {
                EtcdClient.KeyValue kv = client.range(key).kvs().stream().filter(k -> k.key().equals(key)).findFirst().orElse(null);
                if (kv == null) return false;
                var stored = new ObjectMapper().readTree(kv.value());
                for (int f = 0; f < files.length; f++) if (!values[f].equals(stored.path(files[f]).asText())) return false;
                return true;
            } catch (IOException e) {
                return false;
            }
        }, () -> when + ": wanted " + Arrays.toString(values) + " everywhere; gw1 " + readOrError(0, subsystem + "/" + files[0]) + " "
                 + readOrError(0, subsystem + "/" + files[1]) + ", gw2 " + readOrError(1, subsystem + "/" + files[0]) + " " + readOrError(1, subsystem + "/" + files[1]));
    }

    private List<String> listOrEmpty(int i, String path) {
        try {
            return nodes[i].mounts().list(path);
        } catch (Exception e) {
            return List.of("(" + e + ")");
        }
    }

    private String readOrError(int i, String path) {
        try {
            return read(i, path);
        } catch (Exception e) {
            return e.toString();
        }
    }
}
