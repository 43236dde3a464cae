package io.iotarget.frontend.nvmetcp;

import io.iotarget.buffer.BufferAccount;
import io.iotarget.frontend.nvmetcp.pdu.HostPdus;
import io.iotarget.frontend.nvmetcp.pdu.Pdu;
import io.iotarget.model.IoGroup;
import io.iotarget.testkit.Await;
import org.junit.jupiter.api.Test;

import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A write whose data comes through R2T is admitted by io.max first: it gets its buffer and its
 * R2T only when it may run, so writes io.max holds back hold no data buffer; and a host that
 * goes away with admitted writes whose data never came leaves nothing behind.
 */
class R2tAfterAdmissionTest {
    private static final int WRITE = 0x01, BYTES = 64 << 10;

    @Test
    void throttledWritesGetTheirR2tOnlyWhenTheyMayRunAndHoldNoBufferMeanwhile() throws Exception {
        try (TargetFixture f = new TargetFixture()) {
            String ns = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
            f.engine.controller().mkdir("a");
            f.tree.write(ns + "/enable", "0");
            f.tree.write(ns + "/cgroup", "a");
            f.tree.write(ns + "/enable", "1");
            f.engine.controller().write("a/io.max", f.engine.device("default").number() + " wiops=4");
            IoGroup a = f.engine.controller().group("a");
            BufferAccount buffers = f.engine.buffers().account(a);
            try (TestHost admin = new TestHost(f.port, false, false)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 0);
                try (TestHost host = f.ioQueue(cntlid, 1, false, false, false)) {
                    int n = 8;
                    for (int i = 0; i < n; i++) {
                        ByteBuffer sqe = host.lbaCommand(WRITE, 1, (long) i * 128, 128, 0);
                        sqe.putShort(2, (short) (100 + i));
                        sqe.putInt(32, BYTES);
                        sqe.put(39, (byte) 0x5A);
                        host.sendRaw(HostPdus.capsule(sqe.array(), null, false, false));
                    }
                    // wiops=4: about one R2T per 250 ms; answer each at once and watch the buffers meanwhile.
                    host.timeout(3_000);
                    List<Long> r2tAtMs = new ArrayList<>();
                    long peak = 0;
                    long t0 = System.nanoTime();
                    int responses = 0;
                    while (responses < n) {
                        ByteBuffer h = host.readPdu();
                        peak = Math.max(peak, buffers.inUseBytes());
                        if (h.get(Pdu.TYPE) == Pdu.TYPE_R2T) {
                            r2tAtMs.add((System.nanoTime() - t0) / 1_000_000);
                            int cid = h.getShort(Pdu.DATA_CCCID) & 0xFFFF;
                            int tag = h.getShort(Pdu.DATA_TTAG) & 0xFFFF;
                            host.sendRaw(HostPdus.h2cData(cid, tag, 0, new byte[BYTES], true, false, false));
                        } else {
                            assertEquals(0, (h.getShort(8 + 14) & 0xFFFF) >>> 1, "write succeeded");
                            responses++;
                        }
                    }
                    assertEquals(n, r2tAtMs.size());
                    assertTrue(r2tAtMs.getLast() - r2tAtMs.getFirst() >= 1_000, "R2Ts spaced by io.max: " + r2tAtMs);
                    assertTrue(peak <= 2L * BYTES, "writes held back by io.max hold no buffer: peak " + peak);

                    // Admitted writes whose data never comes: the host goes away.
                    f.engine.controller().write("a/io.max", f.engine.device("default").number() + " wiops=max");
                    for (int i = 0; i < 4; i++) {
                        ByteBuffer sqe = host.lbaCommand(WRITE, 1, (long) i * 128, 128, 0);
                        sqe.putShort(2, (short) (200 + i));
                        sqe.putInt(32, BYTES);
                        sqe.put(39, (byte) 0x5A);
                        host.sendRaw(HostPdus.capsule(sqe.array(), null, false, false));
                    }
                    int r2ts = 0;
                    host.timeout(500);
                    try {
                        while (true) if (host.readPdu().get(Pdu.TYPE) == Pdu.TYPE_R2T) r2ts++;
                    } catch (SocketTimeoutException e) {
                        // all R2Ts are out
                    }
                    assertEquals(4, r2ts);
                }
            }
            Await.until(Duration.ofSeconds(2), () -> buffers.inUseBytes() == 0, () -> "the abandoned writes' buffers went back: " + buffers.inUseBytes());
            f.tree.write("subsystems/" + TargetFixture.NQN + "/namespaces/1/enable", "0");
            assertEquals(0, f.engine.users(f.engine.device("default")), "the namespace let go of its device");
            assertTrue(f.engine.controller().read("a/io.stat").contains("wios=12"), f.engine.controller().read("a/io.stat"));
        }
    }
}
