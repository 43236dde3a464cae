package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.TestHost.Completion;
import io.iotarget.model.Device;
import io.iotarget.testkit.Prerequisites;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A namespace on a block device (a loop device over a file; attaching it needs root, a
 * prerequisite): opened as a FileBackend engine device on enable, charged to the bound
 * group like memory- and file-backed namespaces, removed on disable.
 */
class BlockDeviceNamespaceTest {
    @Test
    void blockDeviceNamespaceIsChargedToItsGroup(@TempDir Path dir) throws Exception {
        Path image = dir.resolve("bdev.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(32 << 20);
        }
        String loop = run("losetup", "-f", "--show", image.toString());
        Prerequisites.require(loop != null && loop.startsWith("/dev/loop"), "losetup attached no loop device (it needs root): " + loop);
        try (TargetFixture f = new TargetFixture()) {
            var cg = f.engine.controller();
            cg.write("cgroup.subtree_control", "+io");
            cg.mkdir("bdev");
            String s = "subsystems/nqn.2026-11.io.iotarget:bdev";
            f.tree.mkdir(s);
            f.tree.write(s + "/attr_allow_any_host", "1");
            f.tree.mkdir(s + "/namespaces/1");
            f.tree.write(s + "/namespaces/1/device_path", loop);
            f.tree.write(s + "/namespaces/1/cgroup", "bdev");
            f.tree.write(s + "/namespaces/1/enable", "1");
            f.tree.link(s, "ports/1/subsystems/bdev");
            Device device = f.engine.device(loop);
            assertEquals(32 << 20, device.sizeBytes(), "the block device's size");
            assertEquals(512, device.logicalBlockSize(), "the loop device's logical block size");
            try (TestHost admin = new TestHost(f.port, false, false)) {
                int cntlid = admin.bringUp("nqn.2026-11.io.iotarget:bdev", TestHost.HOST_NQN, 5000);
                try (TestHost io = new TestHost(f.port, false, false)) {
                    assertEquals(0, io.connect("nqn.2026-11.io.iotarget:bdev", TestHost.HOST_NQN, 1, cntlid, 32, 0, false).status());
                    byte[] data = new byte[64 << 10];
                    new Random(3).nextBytes(data);
                    assertEquals(0, io.execute(io.lbaCommand(0x01, 1, 2048, 128, 0), data, 0, false).status());
                    Completion back = io.execute(io.lbaCommand(0x02, 1, 2048, 128, 0), null, data.length, false);
                    assertArrayEquals(data, back.data());
                    assertEquals(0, io.execute(io.lbaCommand(0x08, 1, 0, 16, 0), null, 0, false).status());
                    assertEquals(0, io.execute(io.sqe(0x00, 1), null, 0, false).status());
                }
            }
            assertEquals(device.number() + " rbytes=65536 wbytes=73728 rios=1 wios=3 dbytes=0 dios=0\n", cg.read("bdev/io.stat"),
                    "write 64 KiB + write zeroes 8 KiB + flush, read 64 KiB");
            f.tree.write(s + "/namespaces/1/enable", "0");
            assertNull(f.engine.device(loop), "disable removed the device");
        } finally {
            run("losetup", "-d", loop);
        }
    }

    /** The command's first output line, or null when it cannot run or fails. */
    private static String run(String... command) throws InterruptedException {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) return null;
            return out;
        } catch (IOException e) {
            return null;
        }
    }
}
