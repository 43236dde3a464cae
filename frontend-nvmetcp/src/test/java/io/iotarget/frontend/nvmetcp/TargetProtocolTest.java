package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.testkit.ProcessResources;
import io.iotarget.testkit.ThreadCpu;
import io.iotarget.frontend.nvmetcp.TestHost.Completion;
import io.iotarget.frontend.nvmetcp.pdu.HostPdus;
import io.iotarget.frontend.nvmetcp.pdu.Pdu;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The target against an in-test NVMe/TCP host: bring-up, Identify layouts, IO paths, errors. */
class TargetProtocolTest {
    private TargetFixture fixture;

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
    }

    @AfterEach
    void stop() {
        fixture.close();
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static String ascii(byte[] b, int at, int n) {
        return new String(b, at, n, StandardCharsets.US_ASCII);
    }

    @Test
    void shouldBringUpAControllerLikeTheLinuxHost() throws Exception {
        try (TestHost h = new TestHost(fixture.port, false, false)) {
            Completion connect = h.connect(TargetFixture.NQN, TestHost.HOST_NQN, 0, 0xFFFF, 32, 5000, false);
            assertEquals(0, connect.status());
            int cntlid = (int) connect.result();
            assertTrue(cntlid >= 1 && cntlid <= 0xFFEF, "dynamic controller id " + cntlid);

            long cap = h.propertyGet(0x00, true).result();
            assertEquals(1023, cap & 0xFFFF, "MQES");
            assertEquals(15, (cap >>> 24) & 0xFF, "CAP.TO");
            assertEquals(1, (cap >>> 37) & 1, "CAP.CSS NVM");
            assertEquals(0, (cap >>> 48) & 0xF, "MPSMIN 4 KiB");
            assertEquals(0x010300, h.propertyGet(0x08, false).result(), "VS 1.3");
            assertEquals(0, h.propertyGet(0x1C, false).result(), "not ready before CC.EN");
            assertEquals(Status.COMMAND_SEQUENCE_ERROR | Status.DNR, h.identify(1, 0).status(), "admin commands wait for CC.EN");
            assertEquals(0, h.propertySet(0x14, 0x460001).status());
            assertEquals(1, h.propertyGet(0x1C, false).result(), "CSTS.RDY");
            assertEquals(Status.INVALID_FIELD | Status.DNR, h.propertyGet(0x00, false).status(), "CAP is 8 bytes");

            byte[] id = h.identify(1, 0).data();
            ByteBuffer b = le(id);
            assertEquals(cntlid, b.getShort(78) & 0xFFFF, "CNTLID matches Connect");
            assertEquals(TargetFixture.NQN, ascii(id, 768, TargetFixture.NQN.length()));
            assertEquals(0, id[768 + TargetFixture.NQN.length()], "SUBNQN NUL-terminated");
            assertEquals("iotarget", ascii(id, 24, 40).strip());
            assertEquals(10, b.getShort(320), "KAS");
            assertEquals(0x66, id[512] & 0xFF, "SQES");
            assertEquals(0x44, id[513] & 0xFF, "CQES");
            assertEquals((64 + 16384) / 16, b.getInt(1792), "IOCCSZ for 16 KiB in-capsule data");
            assertEquals(1, b.getInt(1796), "IORCSZ");
            assertEquals(0, b.getShort(1800), "ICDOFF");
            assertEquals(1, id[1803], "MSDBD");
            assertEquals(1, id[111], "CNTRLTYPE I/O");
            assertEquals(8, id[77], "MDTS 1 MiB");
            assertEquals(1, b.getInt(536) & 1, "SGLS");
            assertEquals(0xAD, b.getShort(520) & 0xFFFF, "ONCS compare, DSM, write zeroes, reservations, verify");
            assertEquals(1, id[525], "VWC");
            assertEquals(3, id[259], "AERL");
            assertEquals(1 << 8 | 1 << 11, b.getInt(92), "OAES namespace attribute and ANA change notices");
            assertEquals(0x010300, b.getInt(80), "VER");

            assertEquals(127 | 127 << 16, h.setFeatures(0x07, 0x00010001).result(), "128 IO queues granted");
            assertEquals(0, h.setFeatures(0x0B, 1 << 8).status(), "namespace notices");
            assertEquals(Status.INVALID_FIELD | Status.DNR, h.setFeatures(0x0B, 1 << 31).status(), "discovery notices only for discovery");
        }
    }

    @Test
    void shouldDescribeTheNamespaceForTheHost() throws Exception {
        try (TestHost h = fixture.admin(false, false)) {
            byte[] ns = h.identify(0, 1).data();
            ByteBuffer b = le(ns);
            long blocks = TargetFixture.DEVICE_BYTES / 512;
            assertEquals(blocks, b.getLong(0), "NSZE");
            assertEquals(blocks, b.getLong(8), "NCAP");
            assertEquals(9, (b.getInt(128) >>> 16) & 0xFF, "LBAF0 LBADS 512 B");
            assertEquals(0, ns[26], "FLBAS");
            assertEquals(1, ns[30], "NMIC shared");

            assertArrayEquals(new byte[4096], h.identify(0, 7).data(), "an absent nsid reads as zeroes");
            assertEquals(Status.INVALID_NAMESPACE | Status.DNR, h.identify(0, 0xFFFFFFFF).status());

            ByteBuffer list = le(h.identify(2, 0).data());
            assertEquals(1, list.getInt(0));
            assertEquals(0, list.getInt(4));
            assertEquals(0, le(h.identify(2, 1).data()).getInt(0), "only nsids above the one asked");

            byte[] desc = h.identify(3, 1).data();
            assertEquals(3, desc[0], "UUID descriptor");
            assertEquals(16, desc[1]);
            String uuid = fixture.tree.read("subsystems/" + TargetFixture.NQN + "/namespaces/1/device_uuid").strip();
            assertEquals(uuid.replace("-", ""), java.util.HexFormat.of().formatHex(desc, 4, 20));
            assertEquals(4, desc[20], "CSI descriptor");
            assertEquals(1, desc[21]);
            assertEquals(0, desc[24], "CSI = NVM");
            assertEquals(0, desc[25], "list ends");

            assertEquals(0, h.identify(6, 0).status(), "CS controller structure for NVM");
            assertEquals(1, h.identify(8, 1).data()[14], "NSTAT ready");
            assertEquals(Status.INVALID_FIELD | Status.DNR, h.identify(0x1F, 0).status());
        }
    }

    @Test
    void shouldReadBackWhatWasWrittenThroughEveryDataPath() throws Exception {
        for (boolean hd : new boolean[]{false, true}) {
            for (boolean dd : new boolean[]{false, true}) {
                for (boolean noFlowControl : new boolean[]{false, true}) {
                    try (TestHost admin = new TestHost(fixture.port, hd, dd)) {
                        int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
                        try (TestHost io = fixture.ioQueue(cntlid, 1, hd, dd, noFlowControl)) {
                            String what = "hd=" + hd + " dd=" + dd + " noSqFlow=" + noFlowControl;
                            byte[] small = random(4096, 1);
                            assertEquals(0, io.execute(io.lbaCommand(0x01, 1, 8, 8, 0), small, 0, true).status(), "in-capsule write " + what);
                            byte[] big = random(1 << 20, 2);                    // R2T, 8 H2CData PDUs
                            assertEquals(0, io.execute(io.lbaCommand(0x01, 1, 4096, 2048, 0), big, 0, false).status(), "R2T write " + what);
                            Completion r1 = io.execute(io.lbaCommand(0x02, 1, 8, 8, 0), null, 4096, false);
                            assertEquals(0, r1.status());
                            assertArrayEquals(small, r1.data(), "small read back " + what);
                            assertEquals(noFlowControl, r1.viaSuccessFlag(), "C2HData SUCCESS exactly when SQ flow control is off");
                            Completion r2 = io.execute(io.lbaCommand(0x02, 1, 4096, 2048, 0), null, 1 << 20, false);
                            assertArrayEquals(big, r2.data(), "1 MiB read back " + what);
                        }
                    }
                }
            }
        }
    }

    /**
     * A page-cache file namespace answers cached reads with a range of its file (sendfile(2)),
     * and the memory device with its own buffers, unless the host asked for data digests; the
     * host reads the same bytes either way, and a namespace whose reads went out from the
     * backend's memory or file can still be disabled: the in-flight count held for the send is
     * given back with the response.
     */
    @Test
    void shouldReadSharedDataBackAndStillLetTheNamespaceGo(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ns2.img");
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(8L << 20);
        }
        String ns2 = "subsystems/" + TargetFixture.NQN + "/namespaces/2";
        fixture.tree.mkdir(ns2);
        fixture.tree.write(ns2 + "/device_path", file.toString());
        fixture.tree.write(ns2 + "/buffered_io", "1");
        fixture.tree.write(ns2 + "/enable", "1");
        for (boolean dd : new boolean[]{false, true}) {
            for (boolean noFlowControl : new boolean[]{false, true}) {
                try (TestHost admin = new TestHost(fixture.port, false, dd)) {
                    int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
                    try (TestHost io = fixture.ioQueue(cntlid, 1, false, dd, noFlowControl)) {
                        for (int nsid = 1; nsid <= 2; nsid++) {
                            String what = "nsid " + nsid + " dd=" + dd + " noSqFlow=" + noFlowControl;
                            byte[] id = admin.identify(0, nsid).data();
                            int lbaShift = id[128 + 4 * (id[26] & 0xF) + 2];         // the LBA format in use: LBADS
                            int blocks = (1 << 20) >> lbaShift;
                            byte[] data = random(1 << 20, nsid * 10 + (dd ? 1 : 0) + (noFlowControl ? 2 : 0));
                            assertEquals(0, io.execute(io.lbaCommand(0x01, nsid, blocks, blocks, 0), data, 0, false).status(), "write " + what);
                            for (int i = 0; i < 3; i++) {       // written through the page cache: cached, so a region after the first
                                Completion r = io.execute(io.lbaCommand(0x02, nsid, blocks, blocks, 0), null, 1 << 20, false);
                                assertEquals(0, r.status(), "read " + what);
                                assertArrayEquals(data, r.data(), "1 MiB read back " + what);
                            }
                        }
                    }
                }
            }
        }
        String ns1 = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
        try (ExecutorService e = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<?> disable = e.submit(() -> {
                fixture.tree.write(ns1 + "/enable", "0");
                fixture.tree.write(ns2 + "/enable", "0");
                return null;
            });
            disable.get(10, java.util.concurrent.TimeUnit.SECONDS);
        }
        assertEquals("0", fixture.tree.read(ns1 + "/enable").trim());
        assertEquals("0", fixture.tree.read(ns2 + "/enable").trim());
    }

    @Test
    void shouldRefuseAHostThatIsNotAllowed() throws Exception {
        String s = "subsystems/" + TargetFixture.NQN;
        fixture.tree.write(s + "/attr_allow_any_host", "0");
        fixture.tree.mkdir("hosts/nqn.2014-08.org.nvmexpress:uuid:allowed");
        fixture.tree.link("hosts/nqn.2014-08.org.nvmexpress:uuid:allowed", s + "/allowed_hosts/allowed");
        try (TestHost h = new TestHost(fixture.port, false, false)) {
            Completion c = h.connect(TargetFixture.NQN, TestHost.HOST_NQN, 0, 0xFFFF, 32, 5000, false);
            assertEquals(Status.CONNECT_INVALID_HOST | Status.DNR, c.status());
            assertEquals(0x10200, c.result(), "invalid parameter: HOSTNQN in the connect data");
        }
        try (TestHost h = new TestHost(fixture.port, false, false)) {
            assertEquals(0, h.connect(TargetFixture.NQN, "nqn.2014-08.org.nvmexpress:uuid:allowed", 0, 0xFFFF, 32, 5000, false).status());
        }
        try (TestHost h = new TestHost(fixture.port, false, false)) {
            Completion c = h.connect("nqn.2026-11.io.iotarget:nosuch", TestHost.HOST_NQN, 0, 0xFFFF, 32, 5000, false);
            assertEquals(Status.CONNECT_INVALID_PARAMETERS | Status.DNR, c.status());
            assertEquals(0x10100, c.result(), "invalid parameter: SUBNQN");
        }
    }

    @Test
    void shouldAnswerUnknownOpcodesAndBadLbasWithoutHarm() throws Exception {
        try (TestHost admin = new TestHost(fixture.port, false, false)) {
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            assertEquals(Status.INVALID_OPCODE | Status.DNR, admin.execute(admin.sqe(0xC1, 0), null, 0, false).status(), "vendor admin opcode");
            try (TestHost io = fixture.ioQueue(cntlid, 1, false, false, false)) {
                for (int opcode : new int[]{0x04, 0x0D, 0x11, 0x19, 0x7E, 0x80, 0x81, 0x82, 0xFF}) {
                    Completion c = io.execute(io.lbaCommand(opcode, 1, 0, 1, 0), null, 0, false);
                    assertEquals(Status.INVALID_OPCODE | Status.DNR, c.status(), "opcode 0x" + Integer.toHexString(opcode));
                }
                Completion vendorWrite = io.execute(io.lbaCommand(0x81, 1, 0, 1, 0), new byte[512], 0, false);
                assertEquals(Status.INVALID_OPCODE | Status.DNR, vendorWrite.status(), "refused before any R2T");
                long blocks = TargetFixture.DEVICE_BYTES / 512;
                assertEquals(Status.LBA_OUT_OF_RANGE | Status.DNR, io.execute(io.lbaCommand(0x02, 1, blocks, 1, 0), null, 512, false).status());
                assertEquals(Status.LBA_OUT_OF_RANGE | Status.DNR, io.execute(io.lbaCommand(0x02, 1, blocks - 1, 2, 0), null, 1024, false).status());
                assertEquals(Status.LBA_OUT_OF_RANGE | Status.DNR, io.execute(io.lbaCommand(0x01, 1, -1L, 1, 0), new byte[512], 0, true).status(), "SLBA 2^64-1");
                assertEquals(Status.LBA_OUT_OF_RANGE | Status.DNR, io.execute(io.lbaCommand(0x08, 1, blocks - 4, 8, 0), null, 0, false).status());
                assertEquals(Status.LBA_OUT_OF_RANGE | Status.DNR, io.execute(io.lbaCommand(0x0C, 1, blocks, 1, 0), null, 0, false).status());
                assertEquals(Status.INVALID_NAMESPACE | Status.DNR, io.execute(io.lbaCommand(0x02, 2, 0, 1, 0), null, 512, false).status());
                assertEquals(Status.SGL_DATA_LENGTH_INVALID | Status.DNR, io.execute(io.lbaCommand(0x02, 1, 0, 2, 0), null, 512, false).status(),
                        "data length must match NLB");
                assertEquals(0, io.execute(io.lbaCommand(0x02, 1, 0, 1, 0), null, 512, false).status(), "the queue still works");
            }
            ByteBuffer log = le(admin.getLogPage(0x01, 64 * 16, 0, false).data());
            assertTrue(log.getLong(0) >= 1, "errors are counted in the error log");
            assertEquals(1, log.getShort(8), "most recent error on queue 1");
        }
    }

    @Test
    void shouldTellTheHostAboutNamespaceChanges() throws Exception {
        try (TestHost h = fixture.admin(false, false)) {
            assertEquals(0, h.setFeatures(0x0B, 1 << 8).status());
            String ns2 = "subsystems/" + TargetFixture.NQN + "/namespaces/2";
            fixture.tree.mkdir(ns2);
            fixture.tree.write(ns2 + "/device_path", "default");
            fixture.tree.write(ns2 + "/enable", "1");
            Completion aen = h.execute(h.sqe(0x0C, 0), null, 0, false);     // the event was queued: completes at once
            assertEquals(0, aen.status());
            assertEquals(0x00040002, aen.result(), "notice, namespace attribute changed, log 0x04");
            ByteBuffer changed = le(h.getLogPage(0x04, 4096, 0, false).data());
            assertEquals(2, changed.getInt(0));
            assertEquals(0, changed.getInt(4));
            assertEquals(0, le(h.getLogPage(0x04, 4096, 0, false).data()).getInt(0), "reading clears the list");
            ByteBuffer list = le(h.identify(2, 0).data());
            assertEquals(1, list.getInt(0));
            assertEquals(2, list.getInt(4));
        }
    }

    @Test
    void shouldListWhatAHostMayConnectToInTheDiscoveryLog() throws Exception {
        String other = "nqn.2026-11.io.iotarget:hidden";
        fixture.tree.mkdir("subsystems/" + other);
        fixture.tree.link("subsystems/" + other, "ports/1/subsystems/" + other);   // not allowed for any host
        try (TestHost h = new TestHost(fixture.port, false, false)) {
            int cntlid = h.bringUp("nqn.2014-08.org.nvmexpress.discovery", TestHost.HOST_NQN, 0);
            byte[] id = h.identify(1, 0).data();
            assertEquals(2, id[111], "CNTRLTYPE discovery");
            assertEquals(cntlid, le(id).getShort(78));
            byte[] header = h.getLogPage(0x70, 1024, 0, false).data();
            long records = le(header).getLong(8);
            assertEquals(2, records, "the discovery subsystem itself and the default subsystem");
            byte[] log = h.getLogPage(0x70, 1024 * 3, 0, false).data();
            ByteBuffer b = le(log);
            assertEquals(3, log[1024 + 2], "current discovery subsystem entry");
            assertEquals(2, log[2048 + 2], "NVM subsystem entry");
            assertEquals(3, log[2048], "TRTYPE tcp");
            assertEquals(1, log[2048 + 1], "ADRFAM ipv4");
            assertEquals(1, b.getShort(2048 + 4), "PORTID");
            assertEquals(TargetFixture.NQN, ascii(log, 2048 + 256, TargetFixture.NQN.length()));
            assertEquals("127.0.0.1", ascii(log, 2048 + 512, 9));
            assertEquals(Status.INVALID_OPCODE | Status.DNR, h.execute(h.sqe(0x08, 0), null, 0, false).status(), "no Abort on discovery controllers");
            try (TestHost q = new TestHost(fixture.port, false, false)) {
                Completion ioConnect = q.connect("nqn.2014-08.org.nvmexpress.discovery", TestHost.HOST_NQN, 1, cntlid, 32, 0, false);
                assertEquals(Status.CONNECT_INVALID_PARAMETERS | Status.DNR, ioConnect.status(), "no IO queues on a discovery controller");
            }
        }
    }

    @Test
    void shouldDropAControllerWhoseHostStopsTalking() throws Exception {
        try (TestHost h = new TestHost(fixture.port, false, false)) {
            h.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 1000);
            long start = System.nanoTime();
            assertTrue(h.closedByTarget(), "keep-alive timeout closes the admin queue");
            double seconds = (System.nanoTime() - start) / 1e9;
            assertTrue(seconds >= 0.9 && seconds < 3.5, "closed after one or two KATO periods: " + seconds + " s");
        }
    }

    @Test
    void shouldTakeAnyKeepAliveTimeoutAsUnsignedMilliseconds() throws Exception {
        // One controller id: a controller left behind by a failed Connect would lock every host out.
        fixture.tree.write("subsystems/" + TargetFixture.NQN + "/attr_cntlid_max", "1");
        try (TestHost h = new TestHost(fixture.port, false, false)) {
            Completion connect = h.connect(TargetFixture.NQN, TestHost.HOST_NQN, 0, 0xFFFF, 32, 0xFFFFFFFF, false);
            assertEquals(0, connect.status(), "KATO is a u32 of milliseconds: 0xFFFFFFFF is about 50 days");
            assertEquals(1, connect.result());
            assertEquals(0, h.propertySet(0x14, 0x460001).status());
            assertEquals(0, h.setFeatures(0x0F, 0x80000000).status(), "Set Features KATO, 2^31 ms");
            ByteBuffer get = h.sqe(0x0A, 0);
            get.putInt(40, 0x0F);
            assertEquals(0x80000000L, h.execute(get, null, 0, false).result(), "Get Features KATO: the same u32");
            assertEquals(0, h.identify(1, 0).status(), "the controller works");
        }
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (true) {
            try (TestHost again = new TestHost(fixture.port, false, false)) {
                int status = again.connect(TargetFixture.NQN, TestHost.HOST_NQN, 0, 0xFFFF, 32, 5000, false).status();
                if (status == 0) break;
                assertEquals(Status.CONNECT_CONTROLLER_BUSY | Status.DNR, status);
                assertTrue(System.nanoTime() < deadline, "controller 1 is free again once its admin queue closed");
            }
            Thread.sleep(20);
        }
    }

    @Test
    void shouldFinishInFlightIoBeforeDisablingANamespace(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("ns2.img");
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.setLength(8 << 20);
        }
        var cg = fixture.engine.controller();
        cg.write("cgroup.subtree_control", "+io");
        cg.mkdir("slow");
        String ns = "subsystems/" + TargetFixture.NQN + "/namespaces/2";
        fixture.tree.mkdir(ns);
        fixture.tree.write(ns + "/device_path", file.toString());
        fixture.tree.write(ns + "/buffered_io", "1");
        fixture.tree.write(ns + "/cgroup", "slow");
        fixture.tree.write(ns + "/enable", "1");
        // 64 KiB against 40 KB/s: the write waits in io.max for about 1.6 s.
        cg.write("slow/io.max", fixture.engine.device(file.toString()).number() + " wbps=40960");
        byte[] data = random(64 << 10, 11);
        try (TestHost admin = new TestHost(fixture.port, false, false)) {
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            int lbaShift = admin.identify(0, 2).data()[128 + 2];
            try (TestHost io = fixture.ioQueue(cntlid, 1, false, false, false); ExecutorService pool = Executors.newFixedThreadPool(2)) {
                Future<Completion> write = pool.submit(() -> io.execute(io.lbaCommand(0x01, 2, 0, data.length >> lbaShift, 0), data, 0, false));
                // The SMART log counts the write on its way to the engine; a moment later it is parked.
                while (le(admin.getLogPage(0x02, 512, 0, false).data()).getLong(80) == 0) Thread.sleep(10);
                Thread.sleep(50);
                assertTrue(!write.isDone(), "the write waits in io.max");
                Future<?> disable = pool.submit(() -> {
                    fixture.tree.write(ns + "/enable", "0");
                    return null;
                });
                while (!fixture.tree.read(ns + "/enable").equals("0\n")) {
                    if (disable.isDone()) disable.get();     // a failed disable fails the test instead of hanging it
                    Thread.sleep(1);
                }
                // While it drains, the configuration lock is free: other hosts and tenants carry on.
                assertEquals(0, admin.identify(1, 0).status(), "Identify (which takes the configuration lock) answers");
                try (TestHost other = new TestHost(fixture.port, false, false)) {
                    assertEquals(0, other.connect(TargetFixture.NQN, TestHost.HOST_NQN, 0, 0xFFFF, 32, 5000, false).status(), "a new host connects");
                }
                fixture.tree.mkdir("subsystems/" + TargetFixture.NQN + "/namespaces/3");
                fixture.tree.rmdir("subsystems/" + TargetFixture.NQN + "/namespaces/3");
                ControlException busy = assertThrows(ControlException.class, () -> fixture.tree.write(ns + "/enable", "1"));
                assertEquals(Errno.EBUSY, busy.errno(), busy.getMessage());
                assertTrue(busy.getMessage().contains("being disabled"), busy.getMessage());
                assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> fixture.tree.rmdir(ns)).errno());
                assertTrue(!write.isDone() && !disable.isDone(), "all that while, the write waited in io.max and the disable for it");
                disable.get();
                byte[] back = new byte[data.length];
                try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "r")) {
                    f.readFully(back);
                }
                assertArrayEquals(data, back, "disabling waited for the namespace's IO, as nvmet_ns_disable does");
                assertEquals(0, write.get().status(), "IO in flight when the namespace was disabled completes");
            }
        }
        assertNull(fixture.engine.device(file.toString()), "the file's device is gone with the namespace");
        cg.rmdir("slow");
    }

    @Test
    void shouldStopServingOnceTheHostShutsTheControllerDown() throws Exception {
        try (TestHost admin = new TestHost(fixture.port, false, false)) {
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            try (TestHost io = fixture.ioQueue(cntlid, 1, false, false, false)) {
                assertEquals(0, io.execute(io.lbaCommand(0x02, 1, 0, 1, 0), null, 512, false).status());
                // The Linux host's shutdown: CC.SHN = normal with EN still set (nvme_disable_ctrl).
                assertEquals(0, admin.propertySet(0x14, 0x460001 | 1 << 14).status());
                assertEquals(0b1000, admin.propertyGet(0x1C, false).result(), "CSTS: shutdown complete, not ready (nvmet_clear_ctrl)");
                assertEquals(0, admin.propertyGet(0x14, false).result(), "CC cleared, as nvmet does");
                assertEquals(Status.COMMAND_SEQUENCE_ERROR | Status.DNR, io.execute(io.lbaCommand(0x02, 1, 0, 1, 0), null, 512, false).status(),
                        "no IO after shutdown");
            }
        }
    }

    @Test
    void shouldWaitOutAFullFileTableWithoutSpinning() throws Throwable {
        long[] original = ProcessResources.fileLimit(-1);
        fixture.admin(false, false).close();                               // the classes a connection needs are loaded
        // And what a log line needs (the time zones, read from a file): the accept failure below logs,
        // and a class that fails to initialize for want of a descriptor stays failed for every later
        // test in this JVM (as Server.start preloads it).
        new java.util.logging.SimpleFormatter().format(new java.util.logging.LogRecord(java.util.logging.Level.INFO, "loaded"));
        try (SocketChannel client = SocketChannel.open()) {
            ThreadCpu.snapshot().msSince();                                 // loaded too: nothing may open a file below
            Map<String, Long> cpuMs;
            // No descriptor can be allocated now: the target's accept() fails with EMFILE.
            ProcessResources.fileLimit(3);
            try {
                client.connect(new InetSocketAddress("127.0.0.1", fixture.port));
                Thread.sleep(100);
                ThreadCpu before = ThreadCpu.snapshot();
                Thread.sleep(1000);
                cpuMs = before.msSince();
            } finally {
                ProcessResources.fileLimit(original[0]);
            }
            long loopMs = ThreadCpu.ms(cpuMs, "iotarget-loop-");                // the transport's event loops; one accepts
            assertTrue(loopMs < 100, "the accept loop waits while accept() fails: " + loopMs + " ms of CPU in 1 s; by thread (ms): " + cpuMs);
            client.write(ByteBuffer.wrap(HostPdus.icRequest(0)));
            client.socket().setSoTimeout(5000);
            byte[] icResp = client.socket().getInputStream().readNBytes(Pdu.IC_HLEN);
            assertEquals(Pdu.IC_HLEN, icResp.length, "the connection is served once descriptors are free again");
            assertEquals(Pdu.TYPE_IC_RESP, icResp[0]);
        }
    }


    @Test
    void shouldTerminateOnAFramingErrorAndKeepServingOthers() throws Exception {
        try (TestHost bad = fixture.admin(false, false); TestHost good = fixture.admin(false, false)) {
            byte[] pdu = HostPdus.capsule(new byte[64], null, false, false);
            pdu[2] = 40;                                                         // wrong hlen
            bad.sendRaw(pdu);
            try {
                bad.readPdu();
            } catch (java.io.EOFException e) {
                // expected: a C2HTermReq
            }
            assertNotNull(bad.termRequest, "C2HTermReq sent");
            assertEquals(1, le(bad.termRequest).getShort(8), "FES invalid header field");
            assertEquals(2, le(bad.termRequest).getInt(10), "FEI: hlen");
            assertTrue(bad.closedByTarget());
            assertEquals(0, good.identify(1, 0).status(), "other connections are unaffected");
            assertEquals(1, fixture.target.counters().counter(NvmeTcpCounter.PROTOCOL_ERRORS), "one connection ended for a protocol error");
            assertEquals(0, fixture.target.counters().counter(NvmeTcpCounter.HOST_TERMINATIONS));
        }
    }

    @Test
    void shouldRefuseASecondConnectOnTheSameQueueId() throws Exception {
        try (TestHost admin = new TestHost(fixture.port, false, false)) {
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            try (TestHost q1 = fixture.ioQueue(cntlid, 1, false, false, false); TestHost again = new TestHost(fixture.port, false, false)) {
                assertEquals(Status.CONNECT_CONTROLLER_BUSY | Status.DNR,
                        again.connect(TargetFixture.NQN, TestHost.HOST_NQN, 1, cntlid, 128, 0, false).status());
                assertEquals(0, q1.execute(q1.sqe(0x00, 1), null, 0, false).status(), "the first queue 1 still works");
            }
        }
    }

    @Test
    void shouldServeAnIpv6Port() throws Exception {
        fixture.tree.mkdir("ports/6");
        fixture.tree.write("ports/6/addr_trtype", "tcp");
        fixture.tree.write("ports/6/addr_adrfam", "ipv6");
        fixture.tree.write("ports/6/addr_traddr", "::1");
        int port = freePort();
        fixture.tree.write("ports/6/addr_trsvcid", Integer.toString(port));
        fixture.tree.link("subsystems/" + TargetFixture.NQN, "ports/6/subsystems/default");
        try (TestHost h = new TestHost("::1", port, false, false)) {
            h.bringUp("nqn.2014-08.org.nvmexpress.discovery", TestHost.HOST_NQN, 0);
            byte[] log = h.getLogPage(0x70, 2048 + 1024, 0, false).data();
            assertEquals(2, log[2048 + 1], "ADRFAM ipv6 in the entry");
            assertEquals(6, le(log).getShort(2048 + 4), "PORTID");
            assertEquals("::1", ascii(log, 2048 + 512, 3));
        }
    }

    @Test
    void shouldTerminateAHostThatSendsDataBeforeItsR2T() throws Exception {
        try (TestHost admin = new TestHost(fixture.port, false, false)) {
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            try (TestHost io = new TestHost(fixture.port, false, false)) {
                // Queue size 2: the queue has 4 command slots. Three writes wait for their data,
                // so their R2Ts name three tags; the Connect's tag was given back before the
                // third R2T went out, so the fourth write gets the one tag left, known here.
                assertEquals(0, io.connect(TargetFixture.NQN, TestHost.HOST_NQN, 1, cntlid, 2, 0, false).status());
                Set<Integer> free = new HashSet<>(List.of(0, 1, 2, 3));
                for (int i = 0; i < 3; i++) {
                    io.sendRaw(HostPdus.capsule(transportWrite(io, 8 * i).array(), null, false, false));
                    ByteBuffer r2t = io.readPdu();
                    assertEquals(Pdu.TYPE_R2T, r2t.get(Pdu.TYPE));
                    assertTrue(free.remove(r2t.getShort(Pdu.DATA_TTAG) & 0xFFFF), "distinct tags of the queue's 4");
                }
                int tag = free.iterator().next();
                ByteBuffer sqe = transportWrite(io, 64);
                int cid = sqe.getShort(2);
                byte[] capsule = HostPdus.capsule(sqe.array(), null, false, false);
                byte[] early = HostPdus.h2cData(cid, tag, 0, new byte[4096], true, false, false);
                byte[] both = new byte[capsule.length + early.length];
                System.arraycopy(capsule, 0, both, 0, capsule.length);
                System.arraycopy(early, 0, both, capsule.length, early.length);
                io.sendRaw(both);                                          // one segment: decoded before the writer runs
                try {
                    while (true) io.readPdu();
                } catch (java.io.IOException e) {
                    // the C2HTermReq, then the end of the stream
                }
                assertNotNull(io.termRequest, "C2HTermReq sent");
                assertEquals(2, le(io.termRequest).getShort(8), "FES PDU sequence error");
            }
            assertEquals(0, admin.identify(1, 0).status(), "the admin queue of another connection is unaffected");
        }
    }

    @Test
    void shouldFailTheControllerWhenDataFailsItsDigest() throws Exception {
        for (boolean inCapsule : new boolean[]{true, false}) {
            try (TestHost admin = new TestHost(fixture.port, false, true)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
                try (TestHost io = fixture.ioQueue(cntlid, 1, false, true, false)) {
                    byte[] data = random(4096, 21);
                    byte[] pdu;
                    if (inCapsule) {
                        ByteBuffer sqe = io.lbaCommand(0x01, 1, 0, 8, 0);
                        sqe.putInt(32, data.length);
                        sqe.put(39, (byte) 0x01);
                        pdu = HostPdus.capsule(sqe.array(), data, false, true);
                    } else {
                        ByteBuffer sqe = transportWrite(io, 0);
                        io.sendRaw(HostPdus.capsule(sqe.array(), null, false, true));
                        ByteBuffer r2t = io.readPdu();
                        assertEquals(Pdu.TYPE_R2T, r2t.get(Pdu.TYPE));
                        pdu = HostPdus.h2cData(sqe.getShort(2), r2t.getShort(Pdu.DATA_TTAG) & 0xFFFF, 0, data, true, false, true);
                    }
                    pdu[pdu.length - 1] ^= 1;                               // the data digest no longer matches
                    io.sendRaw(pdu);
                    assertTrue(io.closedByTarget(), "inCapsule=" + inCapsule + ": the IO queue is closed");
                }
                assertTrue(admin.closedByTarget(), "inCapsule=" + inCapsule + ": so is the admin queue: the controller failed, as in nvmet");
            }
        }
        try (TestHost admin = new TestHost(fixture.port, false, false)) {
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            try (TestHost io = fixture.ioQueue(cntlid, 1, false, false, false)) {
                assertArrayEquals(new byte[4096], io.execute(io.lbaCommand(0x02, 1, 0, 8, 0), null, 4096, false).data(), "nothing was written");
            }
        }
        String stat = fixture.engine.controller().read("io.stat");
        // The in-capsule write never reached the policies; the R2T one was admitted (and counted) before its data
        // failed, as a bio submitted and then failed is (docs/decisions.md).
        assertTrue(stat.contains(" rbytes=4096 wbytes=4096 rios=1 wios=1 "), "one write charged, at its admission, and the check's read: " + stat);
    }

    /** A 4 KiB Write at {@code slba} whose data goes through R2T/H2CData. */
    private static ByteBuffer transportWrite(TestHost io, long slba) {
        ByteBuffer sqe = io.lbaCommand(0x01, 1, slba, 8, 0);
        sqe.putInt(32, 4096);
        sqe.put(39, (byte) 0x5A);
        return sqe;
    }

    @Test
    void shouldReportHealthAndCommandCountsInTheSmartLog() throws Exception {
        try (TestHost admin = new TestHost(fixture.port, false, false)) {
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            try (TestHost q = fixture.ioQueue(cntlid, 1, false, false, false)) {
                for (int i = 0; i < 3; i++) assertEquals(0, q.execute(q.lbaCommand(0x02, 1, 0, 8, 0), null, 4096, false).status());
                for (int i = 0; i < 2; i++) assertEquals(0, q.execute(q.lbaCommand(0x01, 1, 0, 8, 0), new byte[4096], 0, true).status());
                ByteBuffer smart = le(admin.getLogPage(0x02, 512, 0, false).data());
                assertEquals(0, smart.get(0), "no critical warning");
                assertEquals(100, smart.get(3), "available spare");
                assertEquals(1, smart.getLong(32), "data units read: 24 sectors, rounded up to one unit of 1000");
                assertEquals(1, smart.getLong(48), "data units written");
                assertEquals(3, smart.getLong(64), "host read commands");
                assertEquals(2, smart.getLong(80), "host write commands");
                ByteBuffer effects = le(admin.getLogPage(0x05, 4096, 0, false).data());
                assertEquals(1, effects.getInt(4 * 0x06), "Identify supported");
                assertEquals(3, effects.getInt(1024 + 4 * 0x01), "Write supported, changes logical block content");
                assertEquals(0, effects.getInt(1024 + 4 * 0x81), "no vendor IO commands");
                assertEquals(Status.INVALID_FIELD | Status.DNR, admin.getLogPage(0x70, 1024, 0, false).status(), "no discovery log on an IO controller");
                assertEquals(Status.INVALID_FIELD | Status.DNR, admin.getLogPage(0xC1, 512, 0, false).status(), "unknown log page");
                byte[] io = admin.getLogPage(0x05, 1024, 1024, false).data();
                assertEquals(3, le(io).getInt(4 * 0x01), "LPO 1024: the IO command entries");
            }
        }
    }
}
