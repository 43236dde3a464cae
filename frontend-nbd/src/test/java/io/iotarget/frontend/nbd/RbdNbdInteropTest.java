package io.iotarget.frontend.nbd;

import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.model.Device;
import io.iotarget.testkit.CephCluster;
import io.iotarget.testkit.Prerequisites;
import io.iotarget.testkit.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An RBD image served over NBD by iotarget is the same image Ceph's own tools see: what a real
 * NBD client writes through iotarget reads back identically with {@code rbd export}, and what
 * {@code rbd import} put there reads identically through iotarget, on a one-host Ceph (testkit's
 * CephCluster). The IO is charged to the export's group like any backend's.
 */
class RbdNbdInteropTest {
    private static final long MiB = 1 << 20;

    @TempDir
    static Path dir;
    private static CephCluster ceph;
    private static TestTarget target;

    @BeforeAll
    static void start() throws Exception {
        Tools.require("qemu-img", "/usr/bin/qemu-img");
        Tools.require("nbdcopy", "/usr/bin/nbdcopy");
        Prerequisites.require(RbdBackend.unavailable() == null, "librbd1 cannot be loaded: " + RbdBackend.unavailable());
        ceph = CephCluster.start(dir.resolve("ceph"));
        target = new TestTarget();
    }

    @AfterAll
    static void stop() throws Exception {
        if (target != null) {
            assertEquals(0, target.server.unexpectedErrors());
            target.close();
        }
        if (ceph != null) ceph.close();
    }

    private static Device export(String image) throws Exception {
        RbdBackend backend = RbdBackend.open(new RbdBackend.Options("rbd", image, null, null, ceph.conf(), "admin", ceph.adminKeyring(), 0, 512, false));
        return target.export(image, backend, false);
    }

    private static byte[] randomWithHoles(long size, long seed) {
        byte[] b = new byte[(int) size];
        new Random(seed).nextBytes(b);
        Arrays.fill(b, (int) (size / 4), (int) (size / 2), (byte) 0);
        return b;
    }

    @Test
    void whatQemuImgWritesThroughIotargetIsWhatRbdExportReads() throws Exception {
        ceph.rbd("create", "--size", "16M", "rbd/written");
        Device device = export("written");
        byte[] data = randomWithHoles(16 * MiB, 1);
        Path src = Files.write(dir.resolve("written.src"), data);
        Tools.ok(120, "qemu-img", "convert", "-n", "-f", "raw", "-O", "raw", src.toString(), target.uri("written"));
        Path exported = dir.resolve("written.export");
        ceph.rbd("export", "rbd/written", exported.toString());
        assertArrayEquals(data, Files.readAllBytes(exported), "rbd export reads what qemu-img wrote through iotarget");
        Map<String, Long> stat = target.ioStat("tenants/written", device);
        assertTrue(stat.get("wbytes") >= 12 * MiB, "the data written was charged: " + stat);
    }

    @Test
    void whatRbdImportPutThereReadsIdenticallyThroughIotarget() throws Exception {
        byte[] data = randomWithHoles(8 * MiB, 2);
        Path src = Files.write(dir.resolve("imported.src"), data);
        ceph.rbd("import", src.toString(), "rbd/imported");
        Device device = export("imported");
        String compare = Tools.ok(120, "qemu-img", "compare", "-f", "raw", "-F", "raw", src.toString(), target.uri("imported"));
        assertTrue(compare.contains("Images are identical"), compare);
        Path copied = dir.resolve("imported.copy");
        Tools.ok(120, "nbdcopy", target.uri("imported"), copied.toString());
        assertArrayEquals(data, Files.readAllBytes(copied), "nbdcopy through iotarget reads what rbd import wrote");
        Map<String, Long> stat = target.ioStat("tenants/imported", device);
        assertTrue(stat.get("rbytes") >= 6 * MiB, "the data read was charged: " + stat);
    }
}
