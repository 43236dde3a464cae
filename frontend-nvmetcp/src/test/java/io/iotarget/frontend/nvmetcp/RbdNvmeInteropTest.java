package io.iotarget.frontend.nvmetcp;

import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.engine.Engine;
import io.iotarget.testkit.CephCluster;
import io.iotarget.testkit.Prerequisites;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * An RBD image served as an NVMe/TCP namespace is the image Ceph's tools see: what a host
 * writes (in-capsule and through R2T) reads back identically with {@code rbd export}, and what
 * {@code rbd import} put there a host reads identically, on a one-host Ceph.
 */
class RbdNvmeInteropTest {
    private static final long MiB = 1 << 20;

    @TempDir
    Path dir;

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void hostWritesReachRbdExportAndRbdImportReachesTheHost() throws Exception {
        Prerequisites.require(RbdBackend.unavailable() == null, "librbd1 cannot be loaded: " + RbdBackend.unavailable());
        try (CephCluster ceph = CephCluster.start(dir.resolve("ceph")); TargetFixture fixture = new TargetFixture()) {
            byte[] imported = random((int) (4 * MiB), 1);
            Path src = Files.write(dir.resolve("imported.src"), imported);
            ceph.rbd("import", src.toString(), "rbd/imported");
            ceph.rbd("create", "--size", "4M", "rbd/written");
            int nsid = 2;
            for (String image : new String[] {"written", "imported"}) {
                RbdBackend backend = RbdBackend.open(new RbdBackend.Options("rbd", image, null, null, ceph.conf(), "admin", ceph.adminKeyring(),
                                                                            0, 512, false));
                fixture.engine.addDevice(image, backend, null, Engine.DEFAULT_QUEUE_DEPTH);
                String ns = "subsystems/" + TargetFixture.NQN + "/namespaces/" + nsid++;
                fixture.tree.mkdir(ns);
                fixture.tree.write(ns + "/device_path", image);
                fixture.tree.write(ns + "/enable", "1");
            }
            byte[] small = random(4096, 2);
            byte[] big = random((int) MiB, 3);
            try (TestHost admin = new TestHost(fixture.port, false, false)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
                try (TestHost io = fixture.ioQueue(cntlid, 1, false, false, false)) {
                    assertEquals(0, io.execute(io.lbaCommand(0x01, 2, 8, 8, 0), small, 0, true).status(), "in-capsule write");
                    assertEquals(0, io.execute(io.lbaCommand(0x01, 2, 4096, 2048, 0), big, 0, false).status(), "R2T write");
                    assertEquals(0, io.execute(io.lbaCommand(0x00, 2, 0, 1, 0), null, 0, false).status(), "flush");
                    for (int at = 0; at < 4 * MiB; at += (int) MiB) {
                        TestHost.Completion r = io.execute(io.lbaCommand(0x02, 3, at / 512, 2048, 0), null, (int) MiB, false);
                        assertEquals(0, r.status());
                        assertArrayEquals(Arrays.copyOfRange(imported, at, at + (int) MiB), r.data(), "imported MiB at " + at);
                    }
                }
            }
            Path exported = dir.resolve("written.export");
            ceph.rbd("export", "rbd/written", exported.toString());
            byte[] image = Files.readAllBytes(exported);
            assertArrayEquals(small, Arrays.copyOfRange(image, 8 * 512, 8 * 512 + 4096));
            assertArrayEquals(big, Arrays.copyOfRange(image, 4096 * 512, 4096 * 512 + (int) MiB));
        }
    }
}
