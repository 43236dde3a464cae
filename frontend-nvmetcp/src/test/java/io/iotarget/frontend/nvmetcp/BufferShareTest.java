package io.iotarget.frontend.nvmetcp;

import io.iotarget.buffer.BufferAccount;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.pdu.HostPdus;
import io.iotarget.testkit.Await;
import org.junit.jupiter.api.Test;

import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A host that asks for far more write buffers than its group's share and never sends the data
 * holds that share and nothing more: R2Ts stop at the share, the queue still answers, and once
 * the host is gone every buffer is back and others write at full size again. Reads from a
 * backend that shares its memory take no buffer, so the used-up share does not stop them.
 */
class BufferShareTest {
    private static final int WRITE = 0x01, READ = 0x02, R2T = 0x09, MIB = 1 << 20;
    private static final long SHARE = 16L << 20;

    @Test
    void aHostThatNeverSendsItsDataHoldsOnlyItsGroupsShare() throws Exception {
        try (TargetFixture f = new TargetFixture(new Engine.Settings(64L << 20, SHARE, io.iotarget.backend.file.IoEngine.Kind.AUTO))) {
            BufferAccount root = f.engine.buffers().account(f.engine.controller().root());
            try (TestHost admin = new TestHost(f.port, false, false)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 0);
                try (TestHost hog = f.ioQueue(cntlid, 1, false, false, false)) {
                    // 100 writes of 1 MiB through R2T whose data never comes: 100 MiB wanted, 16 MiB of share.
                    for (int i = 0; i < 100; i++) {
                        ByteBuffer sqe = hog.lbaCommand(WRITE, 1, (long) i * 2048, 2048, 0);
                        sqe.putInt(32, MIB);
                        sqe.put(39, (byte) 0x5A);
                        hog.sendRaw(HostPdus.capsule(sqe.array(), null, false, false));
                    }
                    hog.timeout(1_000);
                    int r2ts = 0;
                    try {
                        while (true) if (hog.readPdu().get(0) == R2T) r2ts++;
                    } catch (SocketTimeoutException e) {
                        // no more R2Ts come
                    }
                    assertEquals(SHARE / MIB, r2ts, "R2Ts only for the buffers the share holds");
                    assertEquals(SHARE, root.inUseBytes());
                    // The memory backend shares its reads: a read needs no buffer, so the used-up share does not hold it.
                    try (TestHost reader = f.ioQueue(cntlid, 2, false, false, false)) {
                        reader.timeout(5_000);
                        TestHost.Completion read = reader.execute(reader.lbaCommand(READ, 1, 0, 2048, 0), null, MIB, false);
                        assertEquals(0, read.status());
                        assertEquals(SHARE, root.inUseBytes(), "no buffer taken for the read");
                    }
                }
                Await.until(Duration.ofSeconds(2), () -> root.inUseBytes() == 0, () -> "the hog's buffers went back with its queue: " + root.inUseBytes());
            }
            try (TestHost admin = new TestHost(f.port, true, true)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
                try (TestHost io = f.ioQueue(cntlid, 1, true, true, false)) {
                    byte[] data = new byte[MIB];
                    new Random(3).nextBytes(data);
                    for (int i = 0; i < 40; i++) {
                        assertEquals(0, io.execute(io.lbaCommand(WRITE, 1, (long) i * 2048, 2048, 0), data, 0, false).status());
                    }
                    TestHost.Completion read = io.execute(io.lbaCommand(READ, 1, 2048, 2048, 0), null, MIB, false);
                    assertEquals(0, read.status());
                }
            }
            // A buffer goes back once its response is on the wire, which the host may see first.
            Await.until(Duration.ofSeconds(2), () -> root.inUseBytes() == 0, () -> root.inUseBytes() + " bytes still in use");
            f.tree.write("subsystems/" + TargetFixture.NQN + "/namespaces/1/enable", "0");
            assertEquals(0, f.engine.users(f.engine.device("default")), "the disabled namespace let go of its device");
            assertEquals(0, f.target.unexpectedErrors());
        }
    }
}
