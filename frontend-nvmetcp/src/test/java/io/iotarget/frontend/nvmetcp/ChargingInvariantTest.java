package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.TestHost.Completion;
import io.iotarget.iocontrol.Group;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The project's invariant on the NVMe front end: every command that moves data changes io.stat
 * of the namespace's group exactly as IoOp classifies it (reads, writes, discards), and
 * commands that fail before reaching the media change nothing.
 */
class ChargingInvariantTest {
    private static final int LBA = 512;
    private TargetFixture fixture;
    private Group group;
    private TestHost admin;
    private TestHost io;
    private int cntlid;

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
        var cg = fixture.engine.controller();
        cg.write("cgroup.subtree_control", "+io");
        group = cg.mkdir("tenant");
        String ns = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
        fixture.tree.write(ns + "/enable", "0");
        fixture.tree.write(ns + "/cgroup", "tenant");
        fixture.tree.write(ns + "/enable", "1");
        admin = new TestHost(fixture.port, false, false);
        cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
        io = fixture.ioQueue(cntlid, 1, false, false, false);
    }

    @AfterEach
    void stop() throws Exception {
        io.close();
        admin.close();
        fixture.close();
    }

    /** The group's io.stat counters summed over devices. */
    private Map<String, Long> stat() throws Exception {
        Map<String, Long> m = new HashMap<>(Map.of("rbytes", 0L, "wbytes", 0L, "rios", 0L, "wios", 0L, "dbytes", 0L, "dios", 0L));
        for (String line : fixture.engine.controller().read("tenant/io.stat").split("\n")) {
            for (String kv : line.split(" ")) {
                String[] p = kv.split("=");
                if (p.length == 2 && m.containsKey(p[0])) m.merge(p[0], Long.parseLong(p[1]), Long::sum);
            }
        }
        return m;
    }

    private interface Command {
        Completion run() throws Exception;
    }

    /** Runs the command and checks its status and the io.stat delta it caused (unnamed fields: 0). */
    private void charges(String what, Command command, int status, Map<String, Long> expected) throws Exception {
        Map<String, Long> before = stat();
        Completion c = command.run();
        assertEquals(status, c.status(), what + " status");
        Map<String, Long> after = stat();
        Map<String, Long> delta = new HashMap<>();
        after.forEach((k, v) -> delta.put(k, v - before.get(k)));
        Map<String, Long> want = new HashMap<>(Map.of("rbytes", 0L, "wbytes", 0L, "rios", 0L, "wios", 0L, "dbytes", 0L, "dios", 0L));
        want.putAll(expected);
        assertEquals(want, delta, what + " io.stat delta");
    }

    private static byte[] pattern(int n, int seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void everyDataMovingOpcodeIsChargedAsClassified() throws Exception {
        byte[] data = pattern(16 * LBA, 7);
        charges("Write, in-capsule", () -> io.execute(io.lbaCommand(0x01, 1, 0, 16, 0), data, 0, true), 0,
                Map.of("wbytes", 16L * LBA, "wios", 1L));
        charges("Write, R2T + H2CData", () -> io.execute(io.lbaCommand(0x01, 1, 100, 16, 1 << 30), data, 0, false), 0,
                Map.of("wbytes", 16L * LBA, "wios", 1L));
        charges("Read", () -> io.execute(io.lbaCommand(0x02, 1, 0, 16, 0), null, 16 * LBA, false), 0,
                Map.of("rbytes", 16L * LBA, "rios", 1L));
        charges("Flush: one write IO of 0 bytes", () -> io.execute(io.sqe(0x00, 1), null, 0, false), 0,
                Map.of("wios", 1L));
        charges("Write Zeroes", () -> io.execute(io.lbaCommand(0x08, 1, 200, 32, 0), null, 0, false), 0,
                Map.of("wbytes", 32L * LBA, "wios", 1L));
        charges("Write Zeroes with DEAC", () -> io.execute(io.lbaCommand(0x08, 1, 300, 32, 1 << 25), null, 0, false), 0,
                Map.of("wbytes", 32L * LBA, "wios", 1L));
        charges("Verify", () -> io.execute(io.lbaCommand(0x0C, 1, 0, 8, 0), null, 0, false), 0,
                Map.of("rbytes", 8L * LBA, "rios", 1L));
        charges("Compare, equal", () -> io.execute(io.lbaCommand(0x05, 1, 0, 16, 0), data, 0, true), 0,
                Map.of("rbytes", 16L * LBA, "rios", 1L));
        byte[] other = pattern(16 * LBA, 8);
        charges("Compare, different: the media was read", () -> io.execute(io.lbaCommand(0x05, 1, 0, 16, 0), other, 0, false),
                Status.COMPARE_FAILURE | Status.DNR, Map.of("rbytes", 16L * LBA, "rios", 1L));
        charges("Dataset Management, deallocate 3 ranges", () -> io.execute(dsm(0b100, new long[][]{{1000, 8}, {2000, 16}, {3000, 0}, {4000, 1}}),
                dsmRanges(new long[][]{{1000, 8}, {2000, 16}, {3000, 0}, {4000, 1}}), 0, true), 0,
                Map.of("dbytes", 25L * LBA, "dios", 3L));
        charges("Dataset Management, hints only: nothing moves", () -> io.execute(dsm(0b011, new long[][]{{1000, 8}}),
                dsmRanges(new long[][]{{1000, 8}}), 0, true), 0, Map.of());
        long blocks = TargetFixture.DEVICE_BYTES / LBA;
        charges("Read past the end", () -> io.execute(io.lbaCommand(0x02, 1, blocks - 1, 2, 0), null, 2 * LBA, false),
                Status.LBA_OUT_OF_RANGE | Status.DNR, Map.of());
        charges("Deallocate with one range past the end", () -> io.execute(dsm(0b100, new long[][]{{0, 8}, {blocks, 1}}),
                dsmRanges(new long[][]{{0, 8}, {blocks, 1}}), 0, true), Status.LBA_OUT_OF_RANGE | Status.DNR, Map.of());
        charges("Vendor opcode", () -> io.execute(io.lbaCommand(0x85, 1, 0, 1, 0), null, 0, false),
                Status.INVALID_OPCODE | Status.DNR, Map.of());
        charges("Read of the deallocated range reads zeroes", () -> {
            Completion c = io.execute(io.lbaCommand(0x02, 1, 1000, 8, 0), null, 8 * LBA, false);
            assertArrayEquals(new byte[8 * LBA], c.data());
            return c;
        }, 0, Map.of("rbytes", 8L * LBA, "rios", 1L));
    }

    @Test
    void aReadOnlyNamespaceRefusesWritesWithoutCharging() throws Exception {
        io.close();
        admin.close();
        String ns = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
        fixture.tree.write(ns + "/enable", "0");
        fixture.tree.write(ns + "/readonly", "1");
        fixture.tree.write(ns + "/enable", "1");
        admin = new TestHost(fixture.port, false, false);
        cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
        io = fixture.ioQueue(cntlid, 1, false, false, false);
        assertEquals(1, admin.identify(0, 1).data()[99] & 1, "NSATTR write protected");
        charges("Write to a read-only namespace", () -> io.execute(io.lbaCommand(0x01, 1, 0, 1, 0), new byte[LBA], 0, true),
                Status.NAMESPACE_WRITE_PROTECTED | Status.DNR, Map.of());
        charges("Write Zeroes to a read-only namespace", () -> io.execute(io.lbaCommand(0x08, 1, 0, 1, 0), null, 0, false),
                Status.NAMESPACE_WRITE_PROTECTED | Status.DNR, Map.of());
        charges("Reads still work", () -> io.execute(io.lbaCommand(0x02, 1, 0, 1, 0), null, LBA, false), 0,
                Map.of("rbytes", (long) LBA, "rios", 1L));
    }

    @Test
    void manyQueuesAtOnceAreChargedExactly() throws Exception {
        int queues = 4, rounds = 200, blocks = 8;
        List<TestHost> hosts = new ArrayList<>();
        for (int q = 2; q <= queues + 1; q++) hosts.add(fixture.ioQueue(cntlid, q, q % 2 == 0, q % 3 == 0, q == 5));
        Map<String, Long> before = stat();
        try (ExecutorService pool = Executors.newFixedThreadPool(queues)) {
            List<Future<?>> done = new ArrayList<>();
            for (int q = 0; q < queues; q++) {
                TestHost h = hosts.get(q);
                long base = 10_000L * (q + 1);
                done.add(pool.submit(() -> {
                    for (int i = 0; i < rounds; i++) {
                        byte[] d = pattern(blocks * LBA, (int) base + i);
                        long lba = base + (long) i * blocks;
                        assertEquals(0, h.execute(h.lbaCommand(0x01, 1, lba, blocks, 0), d, 0, i % 2 == 0).status());
                        assertArrayEquals(d, h.execute(h.lbaCommand(0x02, 1, lba, blocks, 0), null, blocks * LBA, false).data());
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) f.get();
        }
        Map<String, Long> after = stat();
        long ios = (long) queues * rounds;
        assertEquals(ios, after.get("wios") - before.get("wios"));
        assertEquals(ios, after.get("rios") - before.get("rios"));
        assertEquals(ios * blocks * LBA, after.get("wbytes") - before.get("wbytes"));
        assertEquals(ios * blocks * LBA, after.get("rbytes") - before.get("rbytes"));
        for (TestHost h : hosts) h.close();
    }

    private ByteBuffer dsm(int attributes, long[][] ranges) {
        ByteBuffer sqe = io.sqe(0x09, 1);
        sqe.putInt(40, ranges.length - 1);
        sqe.putInt(44, attributes);
        return sqe;
    }

    private static byte[] dsmRanges(long[][] ranges) {
        ByteBuffer b = ByteBuffer.allocate(16 * ranges.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < ranges.length; i++) {
            b.putInt(16 * i + 4, (int) ranges[i][1]);
            b.putLong(16 * i + 8, ranges[i][0]);
        }
        return Arrays.copyOf(b.array(), b.capacity());
    }
}
