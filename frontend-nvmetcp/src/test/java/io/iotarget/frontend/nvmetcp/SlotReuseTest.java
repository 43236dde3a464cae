package io.iotarget.frontend.nvmetcp;

import io.iotarget.backend.ForwardingBackend;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.frontend.nvmetcp.TestHost.Completion;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A command slot is reused as soon as its response is out, while the thread that submitted its
 * requests may still be inside the engine, running other commands' requests for the device
 * (a dispatch queue's finishing thread runs the waiting ones). That thread must not look at
 * the slot again.
 */
class SlotReuseTest {
    private static final int LBA = 512;

    /** A memory device whose writes at gated offsets wait until the test opens the gate. */
    private static final class GatedBackend extends ForwardingBackend {
        final Map<Long, CountDownLatch> arrived = new ConcurrentHashMap<>();
        final Map<Long, CountDownLatch> open = new ConcurrentHashMap<>();

        GatedBackend() {
            super(new MemoryBackend(16 << 20, LBA, false));
        }

        void gate(long offset) {
            arrived.put(offset, new CountDownLatch(1));
            open.put(offset, new CountDownLatch(1));
        }

        @Override
        public boolean blocking() {
            return true;
        }

        @Override
        public void write(long offset, ByteBuffer src, boolean fua) throws IOException {
            CountDownLatch gate = open.get(offset);
            if (gate != null) {
                arrived.get(offset).countDown();
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
            }
            inner.write(offset, src, fua);
        }
    }

    @Test
    void aSubmittingThreadStillInTheEngineDoesNotSubmitTheSlotsNextCommand() throws Exception {
        try (TargetFixture f = new TargetFixture(); ExecutorService pool = Executors.newFixedThreadPool(2)) {
            GatedBackend gated = new GatedBackend();
            f.engine.addDevice("gated", gated, null, 1);                     // one request at a time
            var cg = f.engine.controller();
            cg.write("cgroup.subtree_control", "+io");
            cg.mkdir("dsm");
            String s = "subsystems/" + TargetFixture.NQN;
            f.tree.write(s + "/namespaces/1/enable", "0");
            f.tree.write(s + "/namespaces/1/cgroup", "dsm");
            f.tree.write(s + "/namespaces/1/enable", "1");
            f.tree.mkdir(s + "/namespaces/2");
            f.tree.write(s + "/namespaces/2/device_path", "gated");
            f.tree.write(s + "/namespaces/2/enable", "1");
            long a = 0, b = 64 * LBA;
            gated.gate(a);
            gated.gate(b);
            try (TestHost admin = f.admin(false, false)) {
                int cntlid = le(admin.identify(1, 0).data()).getShort(78) & 0xFFFF;
                try (TestHost y = f.ioQueue(cntlid, 1, false, false, false); TestHost x = f.ioQueue(cntlid, 2, false, false, false)) {
                    // io.stat shows discards once the group has read or written on the device.
                    assertEquals(0, y.execute(y.lbaCommand(0x02, 1, 0, 1, 0), null, LBA, false).status());
                    // Y's write holds the device; X's write waits behind it.
                    Future<Completion> writeY = pool.submit(() -> y.execute(y.lbaCommand(0x01, 2, a / LBA, 1, 0), new byte[LBA], 0, true));
                    assertTrue(gated.arrived.get(a).await(5, TimeUnit.SECONDS));
                    Future<Completion> writeX = pool.submit(() -> x.execute(x.lbaCommand(0x01, 2, b / LBA, 1, 0), new byte[LBA], 0, true));
                    while (le(admin.getLogPage(0x02, 512, 0, false).data()).getLong(80) < 2) Thread.sleep(10);
                    Thread.sleep(50);
                    // Y's write completes; the thread that submitted it goes on to run X's write and waits there.
                    gated.open.get(a).countDown();
                    assertEquals(0, writeY.get(5, TimeUnit.SECONDS).status());
                    assertTrue(gated.arrived.get(b).await(5, TimeUnit.SECONDS));
                    // Meanwhile Y's slots are reused for deallocations of two ranges each, on namespace 1.
                    Map<String, Long> before = stat(f);
                    for (int i = 0; i < 4; i++) {
                        ByteBuffer dsm = y.sqe(0x09, 1);
                        dsm.putInt(40, 1);
                        dsm.putInt(44, 0b100);
                        ByteBuffer ranges = ByteBuffer.allocate(32).order(ByteOrder.LITTLE_ENDIAN);
                        ranges.putInt(4, 8).putLong(8, 1000 + 100L * i).putInt(16 + 4, 8).putLong(16 + 8, 2000 + 100L * i);
                        assertEquals(0, y.execute(dsm, ranges.array(), 0, true).status());
                    }
                    gated.open.get(b).countDown();
                    assertEquals(0, writeX.get(5, TimeUnit.SECONDS).status());
                    Thread.sleep(100);
                    Map<String, Long> after = stat(f);
                    assertEquals(8, after.get("dios") - before.get("dios"), "8 ranges deallocated, each submitted once");
                    assertEquals(0, y.execute(y.lbaCommand(0x02, 1, 0, 1, 0), null, LBA, false).status(), "queue Y still works");
                }
            }
        }
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static Map<String, Long> stat(TargetFixture f) throws Exception {
        Map<String, Long> m = new HashMap<>(Map.of("dios", 0L));
        for (String line : f.engine.controller().read("dsm/io.stat").split("\n")) {
            for (String kv : line.split(" ")) {
                String[] p = kv.split("=");
                if (p.length == 2 && m.containsKey(p[0])) m.merge(p[0], Long.parseLong(p[1]), Long::sum);
            }
        }
        return m;
    }
}
