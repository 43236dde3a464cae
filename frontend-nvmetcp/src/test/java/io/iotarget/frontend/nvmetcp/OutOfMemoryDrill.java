package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.pdu.HostPdus;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Random;

/**
 * The NVMe/TCP out-of-memory drill, run by {@link OutOfMemoryDrillTest} in a JVM with 72 MiB of
 * direct memory: a host queues 1 MiB writes and never sends their data, so each holds its
 * command's 1 MiB buffer, until memory runs out. The commands that find none must fail with
 * Internal Error, the queue must go on, and once the host is gone memory must come back, the
 * accept must still work and the namespace must let go of its device.
 */
final class OutOfMemoryDrill {
    private static final int WRITE = 0x01, READ = 0x02, MIB = 1 << 20;

    public static void main(String[] args) throws Exception {
        try (TargetFixture f = new TargetFixture()) {
            int internalErrors = 0;
            try (TestHost admin = new TestHost(f.port, false, false)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 0);   // no keep-alive: the admin queue idles
                try (TestHost hog = f.ioQueue(cntlid, 1, false, false, false)) {
                    hog.timeout(20_000);
                    // 100 writes of 1 MiB through R2T, whose data never comes: 100 MiB of buffers wanted, 72 MiB there.
                    for (int i = 0; i < 100; i++) {
                        ByteBuffer sqe = hog.lbaCommand(WRITE, 1, (long) i * 2048, 2048, 0);
                        sqe.putInt(32, MIB);
                        sqe.put(39, (byte) 0x5A);
                        hog.sendRaw(HostPdus.capsule(sqe.array(), null, false, false));
                    }
                    for (int answers = 0; answers < 100; answers++) {
                        ByteBuffer pdu = hog.readPdu();
                        if (pdu.get(0) == 0x05) {                     // a response: only a refusal comes before the data
                            int status = (pdu.getShort(8 + 14) & 0xFFFF) >>> 1;
                            check((status & 0x7FF) == Status.INTERNAL, "a command without memory fails with Internal Error: " + Integer.toHexString(status));
                            internalErrors++;
                        }
                    }
                    check(internalErrors > 0, "some writes found no memory");
                    step(internalErrors + " of 100 writes found no memory and failed with Internal Error");
                    TestHost.Completion read = hog.execute(hog.lbaCommand(READ, 1, 0, 8, 0), null, 4096, false);
                    check(read.status() == 0 || (read.status() & 0xFF) == Status.INTERNAL, "the queue goes on answering");
                }
                check(admin.propertyGet(0x1C, false).status() == 0, "the admin queue still answers");
            }
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (f.target.transport().connectionCount() != 0 && System.nanoTime() < deadline) Thread.sleep(10);
            check(f.target.transport().connectionCount() == 0, "every connection ended");
            System.gc();
            try (TestHost admin = new TestHost(f.port, true, true)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
                try (TestHost io = f.ioQueue(cntlid, 1, true, true, false)) {
                    byte[] data = new byte[MIB];
                    new Random(3).nextBytes(data);
                    for (int i = 0; i < 40; i++) {
                        check(io.execute(io.lbaCommand(WRITE, 1, (long) i * 2048, 2048, 0), data, 0, false).status() == 0, "1 MiB writes work again");
                    }
                }
            }
            step("with memory back, a new host connects and writes 40 MiB");
            f.tree.write("subsystems/" + TargetFixture.NQN + "/namespaces/1/enable", "0");
            check(f.engine.users(f.engine.device("default")) == 0, "the disabled namespace let go of its device");
            check(f.target.outOfMemoryRefusals() == internalErrors, "each refusal was counted: " + f.target.outOfMemoryRefusals());
            step("the namespace was disabled and its device released");
        } catch (IOException | RuntimeException | Error e) {
            e.printStackTrace(System.out);
            System.out.println("DRILL FAILED: " + e);
            System.exit(1);
        }
        System.out.println("DRILL PASSED");
        System.exit(0);
    }

    private static void step(String what) {
        System.out.println("drill: " + what);
    }

    private static void check(boolean ok, String what) {
        if (!ok) throw new IllegalStateException(what);
    }
}
