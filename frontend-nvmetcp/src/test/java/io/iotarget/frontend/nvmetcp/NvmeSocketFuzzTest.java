package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.pdu.HostPdus;
import io.iotarget.frontend.nvmetcp.pdu.Pdu;
import io.iotarget.model.Device;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.FuzzBudget;
import io.iotarget.testkit.Mutation;
import io.iotarget.testkit.ProcessResources;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Misbehaving NVMe/TCP hosts against a running target on loopback, thousands of them: random
 * bytes instead of ICReq, mutated ICReqs, garbage and mutated PDUs after a good Connect,
 * writes whose H2CData carries bad tags, offsets or lengths or stops half way, wrong digests,
 * H2CTermReqs, and endings by close, half-close or RST, on admin and IO queues.
 *
 * <p>Afterwards: every connection is gone, threads, descriptors and memory are back near their
 * baseline (tolerances as in the NBD test, for the same reasons), nothing failed unexpectedly, a
 * good host still connects and moves data, and the namespace can be disabled and its device
 * removed (no command kept it in use). Budget: {@code -Diotarget.fuzz.cases} / {@code .seconds}
 * / {@code .seed}; {@code bench/fuzz} runs it for hours.
 */
class NvmeSocketFuzzTest {
    private static final ProcessResources.Tolerance TOLERANCE = new ProcessResources.Tolerance(4, 4, 8 << 20, 64 << 20, 256L << 20);
    /** Cases before the baseline, as in the NBD test: the JVM and the allocator settle into this load first. */
    static final long WARM_UP_CASES = 300;
    /** Cases a run needs to pass, as in the NBD test: as many after the baseline as before it. */
    static final long MIN_CASES = 2 * WARM_UP_CASES;
    private static final int WRITE = 0x01, READ = 0x02, IDENTIFY = 0x06;

    @Test
    void misbehavingHostsLeaveNothingBehindAndAGoodHostStillWorks() throws Exception {
        try (TargetFixture f = new TargetFixture()) {
            goodHost(f, true);                                   // fills the namespace (its storage exists before the baseline)
            FuzzBudget budget = new FuzzBudget("NvmeSocketFuzzTest", 5000);
            Map<String, Integer> kinds = new HashMap<>();
            ProcessResources baseline = null;
            while (budget.another()) {
                long n = budget.done();
                try {
                    kinds.merge(oneCase(f, budget.random(n)), 1, Integer::sum);
                } catch (AssertionError | IOException e) {
                    throw new AssertionError("case " + n + " (seed " + budget.seed() + "): " + e.getMessage(), e);
                }
                if (n == WARM_UP_CASES) baseline = awaitQuiet(f);
            }
            budget.assertRan(MIN_CASES);
            System.out.println("NvmeSocketFuzzTest: " + budget.done() + " cases " + kinds);
            ProcessResources quiet = awaitQuiet(f);
            assertNull(ProcessResources.awaitNear(baseline, TOLERANCE, 20_000), "back to the baseline " + baseline + " (now " + quiet + ")");
            assertEquals(0, f.target.transport().unexpectedFailures(), "no handler failed unexpectedly");
            assertEquals(0, f.target.unexpectedErrors(), "no timer failed");
            assertEquals(0, f.engine.unexpectedErrors(), "the releaser met no failure");
            goodHost(f, false);
            Device device = f.engine.device("default");
            f.tree.write("subsystems/" + TargetFixture.NQN + "/namespaces/1/enable", "0");
            assertEquals(0, f.engine.users(device), "no command keeps the disabled namespace's device in use");
            f.engine.removeDevice(device);
        }
    }

    private static ProcessResources awaitQuiet(TargetFixture f) throws InterruptedException {
        Await.until(Duration.ofSeconds(20), () -> f.target.transport().connectionCount() == 0,
                () -> "every connection ended: " + f.target.transport().connectionCount() + " left");
        return ProcessResources.now();
    }

    /** Admin queue, IO queue, a 64 KiB write through R2T and the read that brings it back; first, maybe, a write of everything. */
    private static void goodHost(TargetFixture f, boolean fill) throws Exception {
        try (TestHost admin = new TestHost(f.port, true, true)) {
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            try (TestHost io = f.ioQueue(cntlid, 1, true, true, false)) {
                byte[] mib = new byte[1 << 20];
                for (long lba = 0; fill && lba < TargetFixture.DEVICE_BYTES / 512; lba += mib.length / 512) {
                    assertEquals(0, io.execute(io.lbaCommand(WRITE, 1, lba, mib.length / 512, 0), mib, 0, false).status());
                }
                byte[] data = new byte[65536];
                new Random(5).nextBytes(data);
                assertEquals(0, io.execute(io.lbaCommand(WRITE, 1, 128, 128, 0), data, 0, false).status());
                TestHost.Completion read = io.execute(io.lbaCommand(READ, 1, 128, 128, 0), null, 65536, false);
                assertEquals(0, read.status());
                assertArrayEquals(data, read.data());
            }
        }
    }

    private static ByteBuffer identifySqe(TestHost host) {
        ByteBuffer sqe = host.sqe(IDENTIFY, 0);
        sqe.putInt(40, 1);
        return sqe;
    }

    // ------------------------------------------------------------ one case

    private static String oneCase(TargetFixture f, Random random) throws Exception {
        int kind = random.nextInt(7);
        if (kind <= 1) {
            try (Socket s = new Socket("127.0.0.1", f.port)) {
                byte[] first = kind == 0 ? bytes(random, random.nextInt(200)) : Mutation.mutate(HostPdus.icRequest(random.nextInt(4)), random);
                s.getOutputStream().write(first);
                end(s, random);
            } catch (IOException e) {
                // the target hung up first
            }
            return kind == 0 ? "random bytes" : "mutated ICReq";
        }
        boolean digests = random.nextBoolean();
        TestHost admin;
        try {
            admin = new TestHost(f.port, digests, digests);
        } catch (IOException e) {
            throw new AssertionError("a well-formed ICReq is answered", e);
        }
        try (admin) {
            if (kind == 2) {
                send(admin, Mutation.mutate(capsule(admin, random, digests), random));
                end(admin.socket(), random);
                return "mutated capsule before Connect";
            }
            int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
            TestHost target = admin;
            TestHost io = null;
            if (random.nextBoolean()) {
                io = f.ioQueue(cntlid & 0xFFFF, 1, digests, digests, random.nextBoolean());
                target = io;
            }
            try {
                String what = switch (kind) {
                    case 3 -> {
                        send(target, Mutation.mutate(capsule(target, random, digests), random));
                        yield "mutated capsule";
                    }
                    case 4 -> {
                        writeWithBadData(target, random, digests);
                        yield "bad H2CData";
                    }
                    case 5 -> {
                        send(target, term(random));
                        yield "H2CTermReq";
                    }
                    default -> {
                        send(target, bytes(random, random.nextInt(600)));
                        yield "garbage PDUs";
                    }
                };
                end(target.socket(), random);
                return what + (io == null ? " (admin)" : " (IO)");
            } finally {
                if (io != null) io.close();
            }
        }
    }

    private static void send(TestHost host, byte[] bytes) {
        try {
            host.sendRaw(bytes);
        } catch (IOException e) {
            // the target hung up first
        }
    }

    /** Close, half-close, RST, or an orderly close after a moment for the target to act. */
    private static void end(Socket s, Random random) throws IOException {
        switch (random.nextInt(3)) {
            case 0 -> s.setSoLinger(true, 0);
            case 1 -> {
                try {
                    s.shutdownOutput();
                } catch (IOException e) {
                    // already reset
                }
            }
            default -> {
            }
        }
        s.close();
    }

    /** A valid-looking command capsule: Identify, or a Write with data in the capsule or through R2T, or a Read. */
    private static byte[] capsule(TestHost host, Random random, boolean digests) {
        ByteBuffer sqe;
        byte[] data = null;
        switch (random.nextInt(3)) {
            case 0 -> {
                sqe = identifySqe(host);
                sqe.putInt(32, 4096);
                sqe.put(39, (byte) 0x5A);
            }
            case 1 -> {
                sqe = host.lbaCommand(WRITE, 1, random.nextInt(1 << 16), 8, 0);
                data = bytes(random, 4096);
                sqe.putInt(32, 4096);
                sqe.put(39, (byte) 0x01);
            }
            default -> {
                sqe = host.lbaCommand(READ, 1, random.nextInt(1 << 17), 1 + random.nextInt(256), 0);
                sqe.putInt(32, random.nextInt(1 << 21));
                sqe.put(39, (byte) 0x5A);
            }
        }
        return HostPdus.capsule(sqe.array(), data, digests, digests);
    }

    /** A Write through R2T whose H2CData has a wrong tag, offset or length, a bad digest, or stops half way. */
    private static void writeWithBadData(TestHost host, Random random, boolean digests) {
        int length = 4096 * (1 + random.nextInt(64));
        ByteBuffer sqe = host.lbaCommand(WRITE, 1, 0, length / 512, 0);
        sqe.putInt(32, length);
        sqe.put(39, (byte) 0x5A);
        int commandId = sqe.getShort(2) & 0xFFFF;
        send(host, HostPdus.capsule(sqe.array(), null, digests, digests));
        int tag = random.nextInt(4) == 0 ? random.nextInt(1 << 16) : random.nextInt(2);
        int cid = random.nextInt(4) == 0 ? random.nextInt(1 << 16) : commandId;
        int offset = random.nextInt(4) == 0 ? random.nextInt() : 0;
        int pieceLength = random.nextInt(4) == 0 ? 1 + random.nextInt(length * 2) : Math.min(length, 65536);
        byte[] pdu = HostPdus.h2cData(cid, tag, offset, bytes(random, pieceLength), pieceLength >= length, digests, digests);
        if (random.nextInt(3) == 0) pdu[random.nextInt(pdu.length)] ^= 1;                // a digest or field goes wrong
        send(host, random.nextBoolean() ? pdu : Arrays.copyOf(pdu, random.nextInt(pdu.length)));   // or it stops half way
    }

    private static byte[] term(Random random) {
        ByteBuffer b = ByteBuffer.allocate(Pdu.TERM_HLEN + random.nextInt(200)).order(ByteOrder.LITTLE_ENDIAN);
        b.put(Pdu.TYPE, (byte) Pdu.TYPE_H2C_TERM).put(Pdu.HLEN, (byte) Pdu.TERM_HLEN).putInt(Pdu.PLEN, b.capacity());
        b.putShort(Pdu.TERM_FES, (short) random.nextInt(8));
        return b.array();
    }


    private static byte[] bytes(Random random, int n) {
        byte[] b = new byte[n];
        random.nextBytes(b);
        return b;
    }
}
