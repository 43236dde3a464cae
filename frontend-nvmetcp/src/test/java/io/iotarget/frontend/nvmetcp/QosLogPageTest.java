package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.wire.Status;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The QoS log page (C0h) over the wire, as a host's {@code nvme get-log -i 0xc0} reads it: the
 * calling host's own group under cgroup_per_host, its limits and what its IO did, equal to what
 * the operator reads in the group's files; and its advertisement (LPA bit 5, log page 00h).
 */
class QosLogPageTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private TargetFixture fixture;

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
        var cg = fixture.engine.controller();
        cg.write("cgroup.subtree_control", "+io");
        cg.mkdir("tenants");
        cg.write("tenants/cgroup.subtree_control", "+io");
        cg.write("tenants/io.max.per_host", "default riops=100000 wbps=104857600");
        fixture.tree.write(NS + "/enable", "0");
        fixture.tree.write(NS + "/cgroup", "tenants");
        fixture.tree.write(NS + "/cgroup_per_host", "1");
        fixture.tree.write(NS + "/enable", "1");
    }

    @AfterEach
    void stop() {
        fixture.close();
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Get Log Page of {@code lid} for {@code nsid}, {@code bytes} long from offset 0. */
    private static TestHost.Completion getLog(TestHost admin, int lid, int nsid, int bytes) throws Exception {
        ByteBuffer sqe = admin.sqe(0x02, nsid);
        int numd = bytes / 4 - 1;
        sqe.putInt(40, lid | (numd & 0xFFFF) << 16);
        sqe.putInt(44, numd >>> 16);
        return admin.execute(sqe, null, bytes, false);
    }

    /** Namespace 1's QoS page as {@code admin}'s host sees it, for polls (which cannot throw). */
    private static ByteBuffer qosPage(TestHost admin) {
        try {
            return le(getLog(admin, 0xC0, 1, 4096).data());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void shouldShowTheHostItsOwnGroupsLimitsAndWhatItsIoDid() throws Exception {
        try (TestHost admin = new TestHost(fixture.port, false, false)) {
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            try (TestHost q = fixture.ioQueue(cntlid, 1, false, false, false)) {
                for (int i = 0; i < 3; i++) assertEquals(0, q.execute(q.lbaCommand(0x02, 1, 0, 8, 0), null, 4096, false).status());
                for (int i = 0; i < 2; i++) assertEquals(0, q.execute(q.lbaCommand(0x01, 1, 0, 8, 0), new byte[4096], 0, true).status());
            }
            byte[] raw = getLog(admin, 0xC0, 1, 4096).data();
            ByteBuffer page = le(raw);
            assertEquals(1, raw[0], "version");
            assertEquals(1, raw[1] & 3, "flags: the host's own child, a group was had");
            assertEquals(4096, page.getShort(2) & 0xFFFF, "length");
            assertEquals(1, page.getInt(4), "NSID");
            assertTrue(Math.abs(page.getLong(8) - System.currentTimeMillis()) < 600_000, "timestamp in ms since the epoch");
            assertEquals(259, page.getInt(16), "major");
            String group = new String(raw, 24, 232, StandardCharsets.UTF_8).replace("\0", "");
            assertEquals("/tenants/nqn:" + TestHost.HOST_NQN, group, "the host's own group, not its parent's");

            assertEquals(-1L, page.getLong(256), "io.max rbps max");
            assertEquals(104857600L, page.getLong(264), "io.max wbps, from io.max.per_host");
            assertEquals(100000L, page.getLong(272), "io.max riops");
            assertEquals(-1L, page.getLong(280), "io.max wiops max");
            assertEquals(0L, page.getLong(288), "no io.min");
            assertEquals(-1L, page.getLong(320), "no burst in effect");
            assertEquals(100, page.getInt(392), "io.weight default");
            assertEquals(-1, page.getInt(400), "hweight not reported: no iocost on the device");
            assertEquals(-1, page.getInt(404), "hweight_inuse not reported either");

            assertEquals(3 * 4096L, page.getLong(408), "io.stat rbytes");
            assertEquals(2 * 4096L, page.getLong(416), "io.stat wbytes");
            assertEquals(3L, page.getLong(424), "io.stat rios");
            assertEquals(2L, page.getLong(432), "io.stat wios");
            assertEquals(5L, page.getLong(488), "lat_ios: every completion");
            int buckets = page.getShort(552);
            long histogram = 0;
            for (int i = 0; i < buckets; i++) histogram += page.getLong(560 + 16 * i + 8);
            assertEquals(5L, histogram, "the histogram's counts add up to lat_ios");

            // The same numbers the operator reads in the child's files.
            String dir = group.substring(1);
            String ioStat = fixture.engine.controller().read(dir + "/io.stat");
            assertTrue(ioStat.contains("rbytes=12288 wbytes=8192 rios=3 wios=2"), ioStat);
            String own = fixture.engine.controller().read(dir + "/iotarget.io.stat");
            assertTrue(own.contains(" lat_ios=5 lat_usec=" + page.getLong(496) + " "), own + " vs lat_usec " + page.getLong(496));
            assertEquals(0L, page.getLong(384), "no io.latency of its own: its parent's target protects the parent among its siblings");
            fixture.engine.controller().write(dir + "/io.latency", "default target=5000");
            assertEquals(5000L, le(getLog(admin, 0xC0, 1, 4096).data()).getLong(384), "a change shows at the next read");

            assertEquals(Status.INVALID_FIELD | Status.DNR, getLog(admin, 0xC0, 7, 4096).status(), "no such namespace");

            // scripts/nvme-qos, as the host runs it on what nvme get-log -b printed.
            java.nio.file.Path bin = java.nio.file.Files.createTempFile("qos", ".bin");
            try {
                java.nio.file.Files.write(bin, raw);
                Process p = new ProcessBuilder("python3", java.nio.file.Path.of("..", "scripts", "nvme-qos").toString(), "-")
                        .redirectInput(bin.toFile()).redirectErrorStream(true).start();
                String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertEquals(0, p.waitFor(), text);
                assertTrue(text.contains("group " + group + "  (this host's own, cgroup_per_host)"), text);
                assertTrue(text.contains("io.max        rbps=max wbps=104857600 riops=100000 wiops=max"), text);
                assertTrue(text.contains("io.stat       rbytes=12288 wbytes=8192 rios=3 wios=2"), text);
                assertTrue(text.contains("latency       5 IOs"), text);
            } finally {
                java.nio.file.Files.delete(bin);
            }
        }
    }

    @Test
    void shouldShowEachHostItsShareOfTheDeviceUnderIoWeight() throws Exception {
        String otherHost = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000002";
        var cg = fixture.engine.controller();
        try (TestHost admin1 = new TestHost(fixture.port, false, false); TestHost admin2 = new TestHost(fixture.port, false, false)) {
            int cntlid1 = admin1.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            int cntlid2 = admin2.bringUp(TargetFixture.NQN, otherHost, 5000);
            ByteBuffer first = le(getLog(admin1, 0xC0, 1, 4096).data());
            String device = first.getInt(16) + ":" + first.getInt(20);
            cg.write("io.cost.qos", device + " enable=1");
            try (TestHost q1 = new TestHost(fixture.port, false, false); TestHost q2 = new TestHost(fixture.port, false, false)) {
                assertEquals(0, q1.connect(TargetFixture.NQN, TestHost.HOST_NQN, 1, cntlid1, 128, 0, false).status());
                assertEquals(0, q2.connect(TargetFixture.NQN, otherHost, 1, cntlid2, 128, 0, false).status());
                assertEquals(0, q2.execute(q2.lbaCommand(0x01, 1, 0, 8, 0), new byte[4096], 0, true).status());
                cg.write("tenants/nqn:" + otherHost + "/io.weight", "300");
                // Both hosts keep writing, so both groups stay active on the device period after period.
                var stop = new java.util.concurrent.atomic.AtomicBoolean();
                var failure = new java.util.concurrent.atomic.AtomicReference<Throwable>();
                Thread[] writers = new Thread[2];
                TestHost[] queues = {q1, q2};
                for (int i = 0; i < 2; i++) {
                    TestHost q = queues[i];
                    writers[i] = Thread.ofPlatform().start(() -> {
                        try {
                            while (!stop.get()) q.execute(q.lbaCommand(0x01, 1, 0, 8, 0), new byte[4096], 0, true);
                        } catch (Throwable t) {
                            failure.compareAndSet(null, t);
                        }
                    });
                }
                int[] last = new int[4];
                try {
                    io.iotarget.testkit.Await.until(java.time.Duration.ofSeconds(20), () -> {
                        ByteBuffer p1 = qosPage(admin1);
                        ByteBuffer p2 = qosPage(admin2);
                        last[0] = p1.getInt(400);
                        last[1] = p2.getInt(400);
                        last[2] = p1.getInt(404);
                        last[3] = p2.getInt(404);
                        // Weights 100 and 300, both active: 25.00% and 75.00% of the device.
                        return last[0] == 2500 && last[1] == 7500;
                    }, () -> "hweight_active of the two hosts, hundredths of a percent: " + last[0] + ", " + last[1]);
                } finally {
                    stop.set(true);
                    for (Thread w : writers) w.join();
                }
                assertEquals(null, failure.get(), "the writers' IO");
                assertTrue(last[2] >= 1 && last[2] <= 10_000 && last[3] >= 1 && last[3] <= 10_000,
                        "hweight_inuse reported: " + last[2] + ", " + last[3]);
                String own = cg.read("tenants/nqn:" + otherHost + "/iotarget.io.stat");
                assertTrue(own.contains(" hweight_active_pct="), own);

                // Idle, the groups leave the device's active set within a few periods: no share now.
                io.iotarget.testkit.Await.until(java.time.Duration.ofSeconds(10), () -> qosPage(admin1).getInt(400) == 0,
                        () -> "host 1's hweight after its IO stopped");
            }
        }
    }

    /**
     * The Linux host (src/test/vm/qos-host.sh): nvme-cli's {@code get-log --log-id=0xc0
     * --raw-binary} before and after the host's own IO, decoded here (the guest has no python3):
     * its own group under cgroup_per_host, io.max as io.max.per_host configured it, and io.stat
     * counters that moved by exactly what the host wrote and read; scripts/nvme-qos prints it.
     */
    @Test
    void linuxHostReadsItsOwnPageWithNvmeCli() throws Exception {
        io.iotarget.testkit.GuestVm.require();
        String hostNqn = "nqn.2014-08.org.nvmexpress:uuid:0c0c0c0c-5a5a-4b4b-8c8c-000000000035";
        io.iotarget.testkit.GuestVm.Result result = io.iotarget.testkit.GuestVm.run(io.iotarget.testkit.GuestVm.script("qos-host.sh"),
                java.util.Map.of("NQN", TargetFixture.NQN, "PORT", Integer.toString(fixture.port), "HOSTNQN", hostNqn),
                java.util.List.of(), 300);
        java.util.List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
        assertEquals(java.util.List.of(), failed, result.text());
        assertEquals(4, result.lines("CHECK").size(), "every step reported: " + result.text());
        assertEquals(0, result.exitCode(), result.text());
        byte[] before = hexPage(result, "QOSHEX1 ");
        byte[] after = hexPage(result, "QOSHEX2 ");
        ByteBuffer p1 = le(before);
        ByteBuffer p2 = le(after);
        String group = new String(after, 24, 232, StandardCharsets.UTF_8).replace("\0", "");
        assertEquals(1, after[0], "version");
        assertEquals(1, after[1] & 3, "the host's own child");
        assertEquals("/tenants/nqn:" + hostNqn, group, "the group of the host NQN nvme-cli connected with");
        assertEquals(-1L, p2.getLong(256), "io.max rbps max");
        assertEquals(104857600L, p2.getLong(264), "io.max wbps, as io.max.per_host set it");
        assertEquals(100000L, p2.getLong(272), "io.max riops");
        assertEquals(-1L, p2.getLong(280), "io.max wiops max");
        assertEquals(5 * 4096L, p2.getLong(416) - p1.getLong(416), "wbytes: the 5 writes of dd");
        assertEquals(5L, p2.getLong(432) - p1.getLong(432), "wios");
        assertEquals(3 * 4096L, p2.getLong(408) - p1.getLong(408), "rbytes: the 3 reads of dd");
        assertEquals(3L, p2.getLong(424) - p1.getLong(424), "rios");
        assertEquals(8L, p2.getLong(488) - p1.getLong(488), "lat_ios: each IO completed");
        String dir = group.substring(1);
        String ioStat = fixture.engine.controller().read(dir + "/io.stat");
        assertTrue(ioStat.contains("rbytes=" + p2.getLong(408) + " wbytes=" + p2.getLong(416) + " rios=" + p2.getLong(424) + " wios=" + p2.getLong(432)),
                "the page agrees with the operator's io.stat: " + ioStat);

        java.nio.file.Path bin = java.nio.file.Files.createTempFile("qos", ".bin");
        try {
            java.nio.file.Files.write(bin, after);
            Process p = new ProcessBuilder("python3", java.nio.file.Path.of("..", "scripts", "nvme-qos").toString(), "-")
                    .redirectInput(bin.toFile()).redirectErrorStream(true).start();
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, p.waitFor(), text);
            System.out.println("scripts/nvme-qos on the guest's page:\n" + text);
            assertTrue(text.contains("io.max        rbps=max wbps=104857600 riops=100000 wiops=max"), text);
            assertTrue(text.contains("io.stat       rbytes=" + p2.getLong(408) + " wbytes=" + p2.getLong(416)), text);
        } finally {
            java.nio.file.Files.delete(bin);
        }
    }

    /** The page a guest printed as {@code od -An -tx1 -v} lines after {@code prefix}. */
    private static byte[] hexPage(io.iotarget.testkit.GuestVm.Result result, String prefix) {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        for (String line : result.lines(prefix)) {
            for (String hex : line.substring(prefix.length()).trim().split("\\s+")) {
                if (!hex.isEmpty()) out.write(Integer.parseInt(hex, 16));
            }
        }
        byte[] page = out.toByteArray();
        assertEquals(4096, page.length, prefix + "lines: " + result.text());
        return page;
    }

    @Test
    void shouldAdvertiseThePageInTheSupportedLogPagesLog() throws Exception {
        try (TestHost admin = fixture.admin(false, false)) {
            byte[] id = admin.identify(1, 0).data();
            assertEquals(1 << 5, id[261] & 1 << 5, "LPA bit 5: log page 00h lists the supported pages");
            ByteBuffer supported = le(getLog(admin, 0x00, 0xFFFFFFFF, 1024).data());
            assertEquals(1, supported.getInt(4 * 0xC0) & 1, "C0h supported");
            assertEquals(1, supported.getInt(4 * 0x02) & 1, "SMART supported");
            assertEquals(0, supported.getInt(4 * 0xC1), "C1h not");
        }
    }
}
