package io.iotarget.control.fence;

import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.testkit.CephCluster;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.Prerequisites;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Fencing at the storage on a real Ceph and a real etcd: a node that published its RADOS client
 * is blocklisted by another that fences it — its writes fail and none reaches the image, while
 * the fencing node's go on — and a node that cannot reach the cluster a client is on refuses to
 * call it fenced.
 */
class RadosFenceTest {
    @TempDir
    static Path dir;
    private static CephCluster ceph;
    private static EtcdCluster etcd;
    private static EtcdClient store;

    @BeforeAll
    static void start() throws Exception {
        Prerequisites.require(RbdBackend.unavailable() == null, "librbd1 cannot be loaded: " + RbdBackend.unavailable());
        ceph = CephCluster.start(dir.resolve("ceph"));
        etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
        store = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(5));
    }

    @AfterAll
    static void stop() throws IOException {
        if (store != null) store.close();
        if (etcd != null) etcd.close();
        if (ceph != null) ceph.close();
    }

    private static RbdBackend open(String image, long createBytes) throws IOException {
        return RbdBackend.open(new RbdBackend.Options("rbd", image, null, null, ceph.conf(), null, null, createBytes, 512, false));
    }

    /** The client's address as `ceph osd blocklist ls` lists it: "v2:127.0.0.1:0/123" or "[v2:...,v1:...]" made "127.0.0.1:0/123". */
    private static String blocklisted(RbdBackend b) throws IOException {
        return b.clientAddress().replaceAll("^\\[?(v2:)?|[,\\]].*$", "");
    }

    private static byte[] random(long seed) {
        byte[] b = new byte[4096];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static byte[] read(RbdBackend b, long offset) throws IOException {
        ByteBuffer dst = ByteBuffer.allocateDirect(4096);
        b.read(offset, dst);
        byte[] out = new byte[4096];
        dst.get(0, out);
        return out;
    }

    @Test
    void aFencedNodesClientIsRefusedByEveryOsdAndTheFencingNodeWritesOn() throws Exception {
        try (RbdBackend onNode1 = open("fence1", 8 << 20); RbdBackend onNode2 = open("fence1", 0)) {
            RadosFence node1 = new RadosFence(store, "node1", () -> List.of(onNode1), () -> 0);
            RadosFence node2 = new RadosFence(store, "node2", () -> List.of(onNode2), () -> 0);
            node1.published(onNode1);
            node2.published(onNode2);
            onNode1.write(0, ByteBuffer.wrap(random(1)), false);

            node2.fence("node1");

            IOException refused = assertThrows(IOException.class, () -> onNode1.write(0, ByteBuffer.wrap(random(2)), false));
            assertTrue(refused.getMessage().contains("108") || refused.getMessage().toLowerCase().contains("blocklist")
                       || refused.getMessage().contains("shutdown"), refused.getMessage());
            onNode2.write(4096, ByteBuffer.wrap(random(3)), false);
            assertArrayEquals(random(1), read(onNode2, 0), "node 1's write after the fence never landed");
            assertArrayEquals(random(3), read(onNode2, 4096));
            String listed = ceph.ceph("osd", "blocklist", "ls");
            java.util.regex.Matcher until = java.util.regex.Pattern.compile(java.util.regex.Pattern.quote(blocklisted(onNode1))
                                                                             + "\\s+(\\d{4}-\\d{2}-\\d{2})").matcher(listed);
            assertTrue(until.find(), listed);
            assertTrue(java.time.LocalDate.parse(until.group(1)).isAfter(java.time.LocalDate.now().plusDays(29)), "blocklisted for 30 days: " + listed);
            String entry = store.range(RadosFence.PREFIX + "node1").kvs().getFirst().valueText();
            assertTrue(entry.contains(onNode1.clientAddress()) && entry.contains(onNode1.clusterFsid()), entry);
        }
    }

    @Test
    void aNodeThatPublishedNoClientNeedsNoFencingAndOneOnAnUnknownClusterCannotBeFenced() throws Exception {
        try (RbdBackend mine = open("fence2", 4 << 20)) {
            RadosFence fence = new RadosFence(store, "node3", () -> List.of(mine), () -> 0);
            fence.fence("never-published");                     // nothing to blocklist: returns
            store.put(RadosFence.PREFIX + "elsewhere",
                      "{\"rados\":[{\"fsid\":\"00000000-0000-0000-0000-000000000000\",\"addr\":\"v2:10.9.9.9:0/1\"}]}".getBytes(StandardCharsets.UTF_8), 0);
            IOException e = assertThrows(IOException.class, () -> fence.fence("elsewhere"));
            assertTrue(e.getMessage().contains("no rbd backend"), e.getMessage());
            assertEquals(0, store.range(RadosFence.PREFIX + "node3").kvs().size(), "fencing publishes nothing of its own");
        }
    }

    /**
     * The restart race: node 4's process dies, and its next process opens its image and publishes
     * the new client before the fence for the old lease runs. Only the old process's client is
     * blocklisted: the new one, opened under a lease the store still has, writes on.
     */
    @Test
    void theFenceForAnEndedLeaseSparesTheClientOfTheNodesNextProcess() throws Exception {
        EtcdClient.Lease first = store.grant(60);
        EtcdClient.Lease second = store.grant(60);
        try (RbdBackend oldProcess = open("fence3", 4 << 20); RbdBackend newProcess = open("fence3", 0);
             RbdBackend fencer = open("fence3", 0)) {
            new RadosFence(store, "node4", () -> List.of(oldProcess), first::id).published(oldProcess);
            store.revoke(first.id());                            // the first process's lease ended
            RadosFence next = new RadosFence(store, "node4", () -> List.of(newProcess), second::id);
            next.published(newProcess);
            next.published(newProcess);                          // published again: keeps the lease it was opened under
            assertTrue(store.leaseAlive(second.id()));
            assertFalse(store.leaseAlive(first.id()));

            new RadosFence(store, "node5", () -> List.of(fencer), () -> 0).fence("node4");

            assertThrows(IOException.class, () -> oldProcess.write(0, ByteBuffer.wrap(random(4)), false));
            newProcess.write(4096, ByteBuffer.wrap(random(5)), false);
            assertArrayEquals(random(5), read(fencer, 4096), "the next process's write landed");
            String listed = ceph.ceph("osd", "blocklist", "ls");
            assertFalse(listed.contains(blocklisted(newProcess)), listed);

            store.revoke(second.id());                           // and once that process's lease ends too, its client goes
            new RadosFence(store, "node5", () -> List.of(fencer), () -> 0).fence("node4");
            assertThrows(IOException.class, () -> newProcess.write(8192, ByteBuffer.wrap(random(6)), false));
        }
    }
}
