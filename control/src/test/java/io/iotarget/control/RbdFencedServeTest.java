package io.iotarget.control;

import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.control.fence.RadosFence;
import io.iotarget.testkit.CephCluster;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.Prerequisites;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A serve process in a cluster, on an RBD image, fenced by another node at the storage: it had
 * published its RADOS client before serving, so the other node's fence blocklists it; its next
 * write fails and never lands, it exits with status 75 at once, and started again it publishes a
 * new client and serves. Real etcd, real one-host Ceph, qemu-io as the NBD client.
 */
class RbdFencedServeTest {
    @TempDir
    Path dir;

    private static int qemuIo(int nbdPort, String command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("qemu-io", "-f", "raw", "-c", command, "nbd://127.0.0.1:" + nbdPort + "/a")
                .redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        return p.waitFor();
    }

    private static String published(EtcdClient store) throws IOException {
        List<EtcdClient.KeyValue> kvs = store.get(RadosFence.PREFIX + "gw1").kvs();
        return kvs.isEmpty() ? "" : kvs.getFirst().valueText();
    }

    @Test
    void aNodeFencedAtTheStorageLandsNoWriteExitsWith75AndComesBackWithANewClient() throws Exception {
        Prerequisites.require(RbdBackend.unavailable() == null, "librbd1 cannot be loaded: " + RbdBackend.unavailable());
        Tools.require("qemu-io", "/usr/bin/qemu-io");
        try (CephCluster ceph = CephCluster.start(dir.resolve("ceph"));
             EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"), 1);
             EtcdClient store = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(5))) {
            Path config = dir.resolve("gw1.json");
            Files.writeString(config, """
                    { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                      "cluster": { "node": "gw1", "store": "%s", "nodes": 1 },
                      "backends": { "img": { "type": "rbd", "pool": "rbd", "image": "fenced", "conf": "%s", "create": 1, "size": "16M", "enable": 1 } },
                      "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { } } },
                      "nbd": { "exports": { "a": { "backend": "img", "cgroup": "tenants/a", "enable": 1 } } } }
                    """.formatted(etcd.uri(), ceph.conf()));
            String first;
            try (ServerProcess gw1 = ServerProcess.start(config, dir, null);
                 RbdBackend other = RbdBackend.open(new RbdBackend.Options("rbd", "fenced", null, null, ceph.conf(), null, null, 0, 512, false))) {
                first = published(store);
                assertTrue(first.contains("\"addr\""), "gw1 published its client before serving: " + first);
                assertEquals(0, qemuIo(gw1.nbdPort(), "write -P 0x11 0 4k"));

                // Another node takes gw1 for dead and fences it at the storage, then writes over the block.
                new RadosFence(store, "gw2", () -> List.of(other), () -> 0).fence("gw1");
                other.write(0, ByteBuffer.wrap(new byte[4096]).put(0, (byte) 0x22), false);

                assertNotEquals(0, qemuIo(gw1.nbdPort(), "write -P 0x33 0 4k"), "the fenced node's write fails");
                assertEquals(Server.EXIT_FENCED, gw1.awaitExit(Duration.ofSeconds(60)), gw1.output());
                assertTrue(gw1.output().contains("blocklisted this node's RADOS client"), gw1.output());
                ByteBuffer block = ByteBuffer.allocateDirect(4096);
                other.read(0, block);
                assertEquals(0x22, block.get(0), "the fenced node's write never landed");
            }
            try (ServerProcess again = ServerProcess.start(config, dir, null)) {
                String now = published(store);
                assertNotEquals(first, now, "the new process published a new client");
                assertTrue(now.indexOf("\"addr\"") != now.lastIndexOf("\"addr\""), "and kept the fenced one named: " + now);
                assertEquals(0, qemuIo(again.nbdPort(), "write -P 0x44 0 4k"));
                assertEquals(0, qemuIo(again.nbdPort(), "read -P 0x44 0 4k"));
            }
        }
    }
}
