package io.iotarget.frontend.nbd;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static io.iotarget.frontend.nbd.TestTarget.delta;
import static io.iotarget.frontend.nbd.TestTarget.stat;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Requests over a real socket: results, protocol errors, and exactly what each one charges. */
class TransmissionTest {
    private static final int SIZE = 1 << 20;
    private TestTarget target;
    private Device disk;

    @BeforeEach
    void start() throws Exception {
        target = new TestTarget();
        disk = target.memoryExport("disk", SIZE);
    }

    @AfterEach
    void stop() {
        assertEquals(0, target.server.unexpectedErrors());
        target.close();
    }

    private Map<String, Long> diskStat() throws Exception {
        return target.ioStat("tenants/disk", disk);
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    @Test
    void shouldChargeEveryDataMovingCommandExactlyAndBlockStatusNot() throws Exception {
        for (boolean structured : new boolean[]{false, true}) {
            try (RawClient c = RawClient.connect(target.port, "disk", structured)) {
                byte[] data = random(8192, 1);
                Map<String, Long> before = diskStat();
                c.write(0, 1, 4096, data);
                assertEquals(0, c.reply(0).error());
                assertEquals(stat(0, 8192, 0, 1, 0, 0), delta(before, diskStat()));

                before = diskStat();
                c.request(0, NbdWire.CMD_READ, 2, 4096, 8192);
                RawClient.Reply read = c.reply(8192);
                assertEquals(0, read.error());
                byte[] got = structured ? java.util.Arrays.copyOfRange(read.payload(), 8, read.payload().length) : read.payload();
                if (structured) {
                    assertEquals(NbdWire.REPLY_TYPE_OFFSET_DATA, read.chunkType());
                    assertEquals(NbdWire.REPLY_FLAG_DONE, read.chunkFlags());
                    assertEquals(4096, ByteBuffer.wrap(read.payload()).getLong());
                }
                assertArrayEquals(data, got);
                assertEquals(stat(8192, 0, 1, 0, 0, 0), delta(before, diskStat()));

                before = diskStat();
                c.request(NbdWire.CMD_FLAG_FUA, NbdWire.CMD_FLUSH, 3, 0, 0);
                assertEquals(0, c.reply(0).error());
                assertEquals(stat(0, 0, 0, 1, 0, 0), delta(before, diskStat()), "flush = one write IO of 0 bytes");

                before = diskStat();
                c.request(0, NbdWire.CMD_TRIM, 4, 0, 65536);
                assertEquals(0, c.reply(0).error());
                assertEquals(stat(0, 0, 0, 0, 65536, 1), delta(before, diskStat()));

                before = diskStat();
                c.request(NbdWire.CMD_FLAG_NO_HOLE | NbdWire.CMD_FLAG_FAST_ZERO, NbdWire.CMD_WRITE_ZEROES, 5, 4096, 4096);
                assertEquals(0, c.reply(0).error());
                assertEquals(stat(0, 4096, 0, 1, 0, 0), delta(before, diskStat()));

                before = diskStat();
                c.request(0, NbdWire.CMD_CACHE, 6, 0, 131072);
                assertEquals(0, c.reply(0).error());
                assertEquals(stat(131072, 0, 1, 0, 0, 0), delta(before, diskStat()), "CACHE is charged as a read");

                if (structured) {
                    before = diskStat();
                    c.request(0, NbdWire.CMD_BLOCK_STATUS, 7, 0, SIZE);
                    RawClient.Reply status = c.reply(0);
                    assertEquals(NbdWire.REPLY_TYPE_BLOCK_STATUS, status.chunkType());
                    ByteBuffer b = ByteBuffer.wrap(status.payload());
                    assertEquals(NbdWire.BASE_ALLOCATION_ID, b.getInt());
                    long covered = 0;
                    while (b.hasRemaining()) {
                        covered += Integer.toUnsignedLong(b.getInt());
                        b.getInt();
                    }
                    assertEquals(SIZE, covered);
                    c.request(NbdWire.CMD_FLAG_REQ_ONE, NbdWire.CMD_BLOCK_STATUS, 8, 0, SIZE);
                    assertEquals(12, c.reply(0).payload().length, "REQ_ONE: one extent");
                    assertEquals(stat(0, 0, 0, 0, 0, 0), delta(before, diskStat()), "BLOCK_STATUS is not charged");
                }
                c.request(0, NbdWire.CMD_DISC, 9, 0, 0);
                assertTrue(c.closedByServer());
            }
        }
    }

    /** Sends one request and returns the errno it got. */
    private static int errorOf(RawClient c, int flags, int type, long offset, long length) throws Exception {
        c.request(flags, type, 77, offset, length);
        RawClient.Reply r = c.reply(0);
        assertEquals(77, r.cookie());
        return r.error();
    }

    @Test
    void shouldRefuseMalformedRequestsWithTheProtocolsErrorsUncharged() throws Exception {
        try (RawClient c = RawClient.connect(target.port, "disk", true)) {
            Map<String, Long> before = diskStat();
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, NbdWire.CMD_READ, SIZE - 512, 1024), "read past the end");
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, NbdWire.CMD_READ, -512, 512), "offset above 2^63");
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, NbdWire.CMD_TRIM, SIZE, 512), "trim past the end");
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, NbdWire.CMD_CACHE, SIZE, 512), "cache past the end");
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, NbdWire.CMD_BLOCK_STATUS, SIZE, 512), "block status past the end");
            assertEquals(NbdWire.ENOSPC, errorOf(c, 0, NbdWire.CMD_WRITE_ZEROES, SIZE - 512, 1024), "write-zeroes past the end");
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, 42, 0, 512), "unknown command");
            assertEquals(NbdWire.EINVAL, errorOf(c, 1 << 9, NbdWire.CMD_READ, 0, 512), "unknown flag");
            assertEquals(NbdWire.EINVAL, errorOf(c, NbdWire.CMD_FLAG_NO_HOLE, NbdWire.CMD_READ, 0, 512), "flag of another command");
            assertEquals(NbdWire.EINVAL, errorOf(c, NbdWire.CMD_FLAG_REQ_ONE, NbdWire.CMD_TRIM, 0, 512), "flag of another command");
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, NbdWire.CMD_FLUSH, 0, 512), "flush with a length");
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, NbdWire.CMD_READ, 0, 0), "zero length");
            int max = target.server.exports().maxRequest();
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, NbdWire.CMD_READ, 0, max + 1), "read above the maximum payload");
            assertEquals(NbdWire.EOVERFLOW, errorOf(c, NbdWire.CMD_FLAG_DF, NbdWire.CMD_READ, 0, max + 1), "DF read above the maximum");
            c.write(0, 78, SIZE - 512, new byte[1024]);
            RawClient.Reply r = c.reply(0);
            assertEquals(NbdWire.ENOSPC, r.error(), "write past the end");
            assertEquals(NbdWire.REPLY_TYPE_ERROR, r.chunkType(), "structured error chunk with a message");
            c.write(NbdWire.CMD_FLAG_DF, 79, 0, new byte[512]);
            assertEquals(NbdWire.EINVAL, c.reply(0).error(), "DF on a write; the payload was skipped");
            assertEquals(stat(0, 0, 0, 0, 0, 0), delta(before, diskStat()), "refused requests are not charged");
            // The stream is still in step.
            c.request(0, NbdWire.CMD_READ, 80, 0, 512);
            assertEquals(0, c.reply(512).error());
        }
    }

    @Test
    void shouldRefuseDfAndBlockStatusWithoutStructuredReplies() throws Exception {
        try (RawClient c = RawClient.connect(target.port, "disk", false)) {
            assertEquals(NbdWire.EINVAL, errorOf(c, NbdWire.CMD_FLAG_DF, NbdWire.CMD_READ, 0, 512));
            assertEquals(NbdWire.EINVAL, errorOf(c, 0, NbdWire.CMD_BLOCK_STATUS, 0, 512));
        }
    }

    @Test
    void shouldRefuseWritesToReadOnlyExportsWithEperm() throws Exception {
        Device ro = target.export("ro", new MemoryBackend(SIZE, 512, false), true);
        try (RawClient c = RawClient.connect(target.port, "ro", false)) {
            Map<String, Long> before = target.ioStat("tenants/ro", ro);
            c.write(0, 1, 0, new byte[4096]);
            assertEquals(NbdWire.EPERM, c.reply(0).error());
            assertEquals(NbdWire.EPERM, errorOf(c, 0, NbdWire.CMD_TRIM, 0, 4096));
            assertEquals(NbdWire.EPERM, errorOf(c, 0, NbdWire.CMD_WRITE_ZEROES, 0, 4096));
            assertEquals(stat(0, 0, 0, 0, 0, 0), delta(before, target.ioStat("tenants/ro", ro)));
            assertEquals(0, errorOf(c, 0, NbdWire.CMD_FLUSH, 0, 0));
        }
    }

    @Test
    void shouldDrainAWriteLargerThanTheMaximumAndStayInStep() throws Exception {
        try (RawClient c = RawClient.connect(target.port, "disk", false)) {
            c.write(0, 1, 0, new byte[target.server.exports().maxRequest() + 512]);
            assertEquals(NbdWire.EINVAL, c.reply(0).error());
            assertEquals(0, errorOf(c, 0, NbdWire.CMD_FLUSH, 0, 0));
        }
    }

    @Test
    void shouldDisconnectABadClientWithoutDisturbingAnother() throws Exception {
        try (RawClient good = RawClient.connect(target.port, "disk", false);
             RawClient bad = RawClient.connect(target.port, "disk", false)) {
            good.write(0, 1, 0, random(4096, 2));
            assertEquals(0, good.reply(0).error());
            bad.out.writeInt(0xdeadbeef);                // not a request magic
            bad.out.write(new byte[24]);
            bad.out.flush();
            assertTrue(bad.closedByServer());
            good.request(0, NbdWire.CMD_READ, 2, 0, 4096);
            RawClient.Reply r = good.reply(4096);
            assertArrayEquals(random(4096, 2), r.payload(), "acknowledged data is intact");
            assertEquals(1, target.server.counters().counter(NbdCounter.PROTOCOL_ERRORS), "the bad magic is counted");
        }
    }

    @Test
    void shouldPipelineAndAnswerAThrottledExportWithoutStallingAnotherConnection() throws Exception {
        Device slow = target.memoryExport("slow", SIZE);
        target.engine.controller().write("tenants/slow/io.max", slow.number() + " riops=20");
        try (RawClient throttled = RawClient.connect(target.port, "slow", false);
             RawClient fast = RawClient.connect(target.port, "disk", false)) {
            int n = 60;                                   // one goes at once, the rest wait
            for (int i = 0; i < n; i++) throttled.request(0, NbdWire.CMD_READ, 1000 + i, (long) i * 512, 512);
            long t0 = System.nanoTime();
            for (int i = 0; i < 200; i++) {
                fast.request(0, NbdWire.CMD_READ, i, 0, 512);
                assertEquals(i, fast.reply(512).cookie());
            }
            long fastMs = (System.nanoTime() - t0) / 1_000_000;
            Map<Long, Integer> seen = new HashMap<>();
            for (int i = 0; i < n; i++) seen.merge(throttled.reply(512).cookie(), 1, Integer::sum);
            long throttledMs = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(n, seen.size(), "every pipelined request answered once");
            assertTrue(throttledMs >= 1500, "60 reads at riops=20 take about 3 s; took " + throttledMs + " ms");
            assertTrue(fastMs < throttledMs, "the other connection was served meanwhile (" + fastMs + " ms)");
            assertEquals(n, target.ioStat("tenants/slow", slow).get("rios"));
        }
    }

    @Test
    void shouldAnswerAcceptedRequestsThenCloseWhenTheExportIsDisabled() throws Exception {
        Device slow = target.memoryExport("slow", SIZE);
        target.engine.controller().write("tenants/slow/io.max", slow.number() + " wiops=10");
        try (RawClient c = RawClient.connect(target.port, "slow", false)) {
            for (int i = 0; i < 12; i++) c.write(0, i, (long) i * 4096, random(4096, i));
            c.request(0, NbdWire.CMD_FLUSH, 100, 0, 0);
            Thread.sleep(200);                            // let the server take them all in
            target.server.tree().write("exports/slow/enable", "0");
            // Requests still wait in io.max: the device and group stay held until they are done.
            assertEquals(1, target.engine.users(slow), "requests in flight keep the device");
            assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> target.engine.controller().rmdir("tenants/slow")).errno());
            for (int i = 0; i < 13; i++) assertEquals(0, c.reply(0).error());
            assertTrue(c.closedByServer());
        }
        assertEquals(0, target.engine.users(slow), "disable released the device");
        target.engine.controller().rmdir("tenants/slow");  // and unbound the group
    }
}
