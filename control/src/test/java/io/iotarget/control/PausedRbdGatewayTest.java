package io.iotarget.control;

import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.control.ReservationClient.Host;
import io.iotarget.control.fence.RadosFence;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.CephCluster;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.Prerequisites;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 33's fencing at the storage, shown with real processes on a real Ceph: two
 * {@code iotarget serve} gateways of one gateway group serve one RBD image (a shared namespace,
 * no reservation: nothing but the storage can refuse a paused gateway's write). The owner of
 * the namespace's ANA group is SIGSTOPped with a host's writes queued on its socket; once its
 * lease is gone the survivor blocklists its RADOS client and takes the group over; another host
 * writes through the survivor; the paused gateway is resumed. None of its queued writes reaches
 * the image (read through a third client), none is answered success, and the gateway, finding
 * itself blocklisted, exits with status 75.
 */
class PausedRbdGatewayTest {
    private static final String NQN = "nqn.2026-12.io.iotarget:paused-rbd";
    private static final int BLOCKS = 8;
    private static final int BLOCK = 512;
    private static final long LEASE_MS = 1000;
    private static final int SUCCESS = 0;

    @TempDir
    Path dir;

    private Path config(String node, int nvmePort, EtcdCluster etcd, CephCluster ceph) throws IOException {
        Path config = dir.resolve(node + ".json");
        Files.writeString(config, """
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "cluster": { "store": "%s", "node": "%s", "group": "g", "interval_ms": 100, "lease_ms": %d },
                  "backends": { "img": { "type": "rbd", "pool": "rbd", "image": "shared", "conf": "%s", "enable": 1 } },
                  "nvmet": {
                    "subsystems": { "%s": { "attr_allow_any_host": 1, "attr_serial": "iotarget-rbd", "shared": 1,
                                            "namespaces": { "1": { "device_path": "img", "device_uuid": "3f1c2b7a-5d4e-4a8b-9c6d-0e1f2a3b4c5d",
                                                                   "enable": 1 } } } },
                    "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1", "addr_trsvcid": "%d",
                                      "subsystems": ["%s"] } } } }
                """.formatted(etcd.uri(), node, LEASE_MS, ceph.conf(), NQN, nvmePort, NQN));
        return config;
    }

    /** The node the store names as ANA group 1's owner, or "" while it names none. */
    private static String owner(EtcdClient store) throws IOException {
        List<EtcdClient.KeyValue> kvs = store.get("/iotarget/groups/g/owners/1").kvs();
        if (kvs.isEmpty()) return "";
        String v = kvs.getFirst().valueText();
        return v.contains("\"to\"") ? "" : v.replaceAll(".*\"node\":\"([^\"]*)\".*", "$1");
    }

    private static boolean ownerIs(EtcdClient store, String node) {
        try {
            return owner(store).equals(node);
        } catch (IOException e) {
            return false;                                    // etcd busy: ask again
        }
    }

    private static byte[] filled(byte fill) {
        byte[] b = new byte[BLOCK];
        Arrays.fill(b, fill);
        return b;
    }

    @Test
    void aPausedGatewaysQueuedWritesNeverReachTheImageOnceTheSurvivorFencedIt() throws Exception {
        Prerequisites.require(RbdBackend.unavailable() == null, "librbd1 cannot be loaded: " + RbdBackend.unavailable());
        Host a = Host.of(0xAA), b = Host.of(0xBB);
        byte aFill = 0x11, aQueuedFill = 0x44, bFill = (byte) 0x88;
        int port1 = freePort(), port2 = freePort();
        try (CephCluster ceph = CephCluster.start(dir.resolve("ceph"));
             EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"));
             EtcdClient store = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(5));
             RbdBackend reader = RbdBackend.open(new RbdBackend.Options("rbd", "shared", null, null, ceph.conf(), null, null, 16 << 20, 512, false))) {
            try (ServerProcess gw1 = ServerProcess.start(config("gw1", port1, etcd, ceph), dir, null)) {
                Await.until(Duration.ofSeconds(30), () -> ownerIs(store, "gw1"), () -> "gw1, alone, owns ANA group 1");
                try (ServerProcess gw2 = ServerProcess.start(config("gw2", port2, etcd, ceph), dir, null);
                     ReservationClient aOn1 = ReservationClient.connect(NQN, port1, a)) {
                    for (int lba = 0; lba < BLOCKS; lba++) assertEquals(SUCCESS, aOn1.write(10 + lba, lba, aFill), "A writes LBA " + lba + " through gw1");
                    String gw1Clients = store.get(RadosFence.PREFIX + "gw1").kvs().getFirst().valueText();

                    gw1.signal("STOP");
                    for (int lba = 0; lba < BLOCKS; lba++) RawClients.writeFully(aOn1.io, RawClients.nvmeWrite(100 + lba, 1, lba, filled(aQueuedFill)));
                    long stoppedNs = System.nanoTime();
                    Await.until(Duration.ofSeconds(30), () -> ownerIs(store, "gw2"), () -> "gw2 took ANA group 1 over from the stopped gw1");
                    long tookOverMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - stoppedNs);
                    String blocklist = ceph.ceph("osd", "blocklist", "ls");
                    String gw1Address = gw1Clients.replaceAll(".*\"addr\":\"([^\"]*)\".*", "$1").replaceAll("^\\[?(v2:)?|[,\\]].*$", "");
                    assertTrue(blocklist.contains(gw1Address), "gw1's client " + gw1Address + " was blocklisted before gw2 took over: " + blocklist);

                    try (ReservationClient bOn2 = ReservationClient.connect(NQN, port2, b)) {
                        for (int lba = 0; lba < BLOCKS; lba++) assertEquals(SUCCESS, bOn2.write(10 + lba, lba, bFill), "B writes LBA " + lba + " through gw2");
                    }

                    gw1.signal("CONT");
                    List<String> statuses = new ArrayList<>();
                    int succeeded = 0;
                    for (int i = 0; i < BLOCKS; i++) {
                        CompletableFuture<Integer> next = RawClients.nvmeResponseLater(aOn1.io);
                        try {
                            int status = next.get(60, TimeUnit.SECONDS) & 0xFFFF;
                            statuses.add("0x" + Integer.toHexString(status));
                            if (status == SUCCESS) succeeded++;
                        } catch (ExecutionException e) {
                            statuses.add("connection closed");        // the gateway exited: what it had not answered never ran
                            break;
                        }
                    }
                    int exit = gw1.awaitExit(Duration.ofSeconds(60));
                    List<String> wrong = new ArrayList<>();
                    for (int lba = 0; lba < BLOCKS; lba++) {
                        ByteBuffer block = ByteBuffer.allocateDirect(BLOCK);
                        reader.read((long) lba * BLOCK, block);
                        byte[] got = new byte[BLOCK];
                        block.get(0, got);
                        if (!Arrays.equals(filled(bFill), got)) wrong.add("LBA " + lba + " holds 0x" + Integer.toHexString(got[0] & 0xFF));
                    }
                    System.out.println("[paused-rbd] gw2 took over " + tookOverMs + " ms after SIGSTOP; queued writes answered " + statuses
                                       + "; gw1 exited " + exit + "; wrong blocks " + wrong);
                    System.out.println("[paused-rbd] gw2's log:\n" + gw2.output());
                    assertEquals(0, succeeded, "no queued write of the paused gateway succeeded: " + statuses);
                    assertEquals(List.of(), wrong, "the image holds B's data at every block");
                    assertEquals(Server.EXIT_FENCED, exit, gw1.output());
                }
            }
        }
    }
}
