package io.iotarget.control;

import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.control.fence.RadosFence;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.CephCluster;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.GuestChannel;
import io.iotarget.testkit.GuestVm;
import io.iotarget.testkit.Prerequisites;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/rbd.md's walkthrough "Two gateways over one image", followed step by step with the Linux
 * host (Debian 12's 6.1, native multipath; src/test/vm/rbd-multipath.sh has the host's steps): a
 * one-host Ceph (scripts/ceph-dev) with an image made for several gateways, etcd, and two
 * {@code iotarget serve} gateways of one gateway group whose shared subsystem's namespace is that
 * image. The host connects to both: gateway 1, first up, owns the ANA group (optimized), gateway 2
 * is non-optimized. Under a crc32c-verified fio gateway 1 is SIGKILLed: gateway 2, the leader now,
 * blocklists gateway 1's published RADOS client before it takes the group (its log says so in that
 * order, and {@code ceph osd blocklist ls} lists the address); fio ends with no IO error and every
 * block verified; the namespace read through the host hashes the same as {@code rbd export} of the
 * image. Gateway 1 started again (new client, not blocklisted) serves a read through its path;
 * killed once more, now owning no ANA group, its new client is blocklisted all the same.
 */
class RbdMultipathKernelHostTest {
    private static final String NQN = "nqn.2026-12.io.iotarget:vol1";
    private static final String GROUP = "rbd-gw";
    private static final long INTERVAL_MS = 200;
    private static final long LEASE_MS = 1000;

    @TempDir
    Path dir;

    /** Gateway {@code node}'s config, as docs/rbd.md writes it (listening on loopback, where the guest reaches the host). */
    private Path config(String node, int nvmePort, EtcdCluster etcd, CephCluster ceph) throws IOException {
        Path config = dir.resolve(node + ".json");
        Files.writeString(config, """
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "cluster": { "store": "%s", "node": "%s", "group": "%s", "interval_ms": %d, "lease_ms": %d },
                  "backends": { "vol1": { "type": "rbd", "pool": "rbd", "image": "vol1", "conf": "%s", "enable": 1 } },
                  "nvmet": {
                    "subsystems": { "%s": { "attr_allow_any_host": 1, "attr_serial": "vol1", "shared": 1,
                                            "namespaces": { "1": { "device_path": "vol1", "device_uuid": "6b1f3c2e-7a4d-4e5f-9c8b-1d2e3f4a5b6c",
                                                                   "enable": 1 } } } },
                    "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1", "addr_trsvcid": "%d",
                                      "subsystems": ["%s"] } } } }
                """.formatted(etcd.uri(), node, GROUP, INTERVAL_MS, LEASE_MS, ceph.conf(), NQN, nvmePort, NQN));
        return config;
    }

    /** Whether the store names {@code node} ANA group 1's owner, with no move under way. */
    private static boolean owns(EtcdClient store, String node) {
        try {
            List<EtcdClient.KeyValue> kvs = store.get("/iotarget/groups/" + GROUP + "/owners/1").kvs();
            return !kvs.isEmpty() && kvs.getFirst().valueText().equals("{\"node\":\"" + node + "\"}");
        } catch (IOException e) {
            return false;                                    // etcd busy: ask again
        }
    }

    /** The image's bytes as {@code rbd export} reads them (librbd, no gateway): their SHA-256. */
    private String exportSha256(CephCluster ceph) throws Exception {
        Path exported = dir.resolve("vol1.exported");
        Files.deleteIfExists(exported);
        ceph.rbd("export", "rbd/vol1", exported.toString());
        MessageDigest sha = MessageDigest.getInstance("SHA-256");
        try (InputStream in = Files.newInputStream(exported)) {
            byte[] buffer = new byte[1 << 20];
            for (int n; (n = in.read(buffer)) > 0; ) sha.update(buffer, 0, n);
        }
        return HexFormat.of().formatHex(sha.digest());
    }

    /** The RADOS client {@code node} published last, as {@code ceph osd blocklist ls} names it (no "v2:", no brackets). */
    private static String newestClient(EtcdClient store, String node) throws IOException {
        String published = store.get(RadosFence.PREFIX + node).kvs().getFirst().valueText();    // oldest first: the greedy match takes the last
        return published.replaceAll(".*\"addr\":\"([^\"]*)\".*", "$1").replaceAll("^\\[?(v2:)?|[,\\]].*$", "");
    }

    private static boolean blocklisted(CephCluster ceph, String address) {
        try {
            return ceph.ceph("osd", "blocklist", "ls").contains(address);
        } catch (IOException e) {
            return false;                                    // the monitor busy: ask again
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Test
    void linuxHostKeepsWritingThroughTheSurvivorOfTwoRbdGatewaysThatFencedTheDeadOne() throws Exception {
        GuestVm.require();
        Prerequisites.require(RbdBackend.unavailable() == null, "librbd1 cannot be loaded: " + RbdBackend.unavailable());
        int port1 = freePort(), port2 = freePort();
        ServerProcess[] gateways = new ServerProcess[3];
        String[] found = new String[4];                         // gw1's address, the blocklist, takeover ms, gw2's log at takeover
        try (CephCluster ceph = CephCluster.start(dir.resolve("ceph"));
             EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"));
             EtcdClient store = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(5))) {
            // An image for several gateways: layering only, no exclusive lock passed back and forth
            ceph.rbd("create", "--image-feature", "layering", "--size", "64M", "rbd/vol1");
            Path config1 = config("gw1", port1, etcd, ceph), config2 = config("gw2", port2, etcd, ceph);
            try {
                gateways[1] = ServerProcess.start(config1, dir, null);
                Await.until(Duration.ofSeconds(30), () -> owns(store, "gw1"), () -> "gw1, alone, owns ANA group 1");
                gateways[2] = ServerProcess.start(config2, dir, null);
                try (GuestChannel channel = GuestChannel.open("RbdMultipathKernelHostTest", command -> switch (command[0]) {
                    // SIGKILL gw1 under the host's IO; until gw2 owns the group: was gw1's client blocklisted first?
                    case "kill" -> {
                        String address = newestClient(store, "gw1");
                        long killedNs = System.nanoTime();
                        gateways[1].kill();
                        Await.until(Duration.ofSeconds(30), () -> owns(store, "gw2"), () -> "gw2 took ANA group 1 over from the killed gw1");
                        long takeoverMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedNs);
                        String blocklist = ceph.ceph("osd", "blocklist", "ls");
                        String log = gateways[2].output();
                        int fencedAt = log.indexOf("gw1's lease ended: its clients are fenced at the storage");
                        int ownerAt = log.indexOf("ANA group owners {1={\"node\":\"gw2\"}}");
                        found[0] = address;
                        found[1] = blocklist;
                        found[2] = Long.toString(takeoverMs);
                        found[3] = log;
                        yield "takeover_ms=" + takeoverMs + " lease_ms=" + LEASE_MS + " blocklisted=" + (blocklist.contains(address) ? "yes" : "no")
                              + " fenced_before_owner=" + (fencedAt >= 0 && ownerAt > fencedAt ? "yes" : "no") + " gw1_client=" + address;
                    }
                    case "export" -> "sha256=" + exportSha256(ceph);
                    case "start" -> {
                        gateways[1] = ServerProcess.start(config1, dir, null);
                        yield "started";
                    }
                    default -> "ERR unknown " + command;
                })) {
                    GuestVm.Result result = GuestVm.run(GuestVm.script("rbd-multipath.sh"), Map.of(
                            "NQN", NQN, "PORT1", Integer.toString(port1), "PORT2", Integer.toString(port2),
                            "CTL_PORT", Integer.toString(channel.port())), List.of(GuestVm.script("two-nodes.sh")), 300);
                    result.lines("RESULT").forEach(l -> System.out.println("[rbd-multipath] " + l));
                    System.out.println("[rbd-multipath] blocklist after the takeover:\n" + found[1]);
                    System.out.println("[rbd-multipath] gw2's log:\n" + gateways[2].output());
                    List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
                    assertEquals(List.of(), failed, result.text());
                    assertEquals(9, result.lines("CHECK").size(), "every step reported: " + result.text());
                    assertEquals(0, result.exitCode(), result.text());
                    assertTrue(found[1].contains(found[0]), "gw1's client " + found[0] + " is blocklisted: " + found[1]);
                    int fencedAt = found[3].indexOf("gw1's lease ended: its clients are fenced at the storage");
                    assertTrue(fencedAt >= 0 && fencedAt < found[3].indexOf("ANA group owners {1={\"node\":\"gw2\"}}"),
                               "gw2 fenced gw1 before it took the group:\n" + found[3]);

                    // gw1, back with a new client and owning no ANA group (a host could still write down its non-optimized
                    // path), killed again: gw2 blocklists that client all the same, and the group stays where it is
                    String again = newestClient(store, "gw1");
                    assertTrue(!again.equals(found[0]) && !blocklisted(ceph, again), "gw1's new client " + again + " is not blocklisted");
                    long killedNs = System.nanoTime();
                    gateways[1].kill();
                    Await.until(Duration.ofSeconds(30), () -> blocklisted(ceph, again),
                                () -> "gw1, owning no ANA group, died but its client " + again + " was never blocklisted");
                    System.out.println("[rbd-multipath] gw1 owning no group killed: its client blocklisted "
                                       + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedNs) + " ms after");
                    assertTrue(owns(store, "gw2"), "gw2 keeps ANA group 1");
                }
            } finally {
                for (ServerProcess g : gateways) if (g != null) g.close();
            }
        }
    }
}
