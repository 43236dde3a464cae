package io.iotarget.frontend.nbd;

import io.iotarget.model.Device;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.FuzzBudget;
import io.iotarget.testkit.Mutation;
import io.iotarget.testkit.ProcessResources;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Misbehaving NBD clients against a running server on loopback, thousands of them, one after
 * another: random and mutated handshakes, request streams with bad magics, unknown commands,
 * huge and out-of-range lengths, WRITEs cut short in their payload, DISC in the middle, and
 * endings by close, half-close or RST. The export is throttled, so requests are parked when
 * their client goes.
 *
 * <p>Checked per case: a well-formed stream gets exactly one reply per request (by cookie), and
 * nothing but replies, before the server closes. Checked afterwards: the server is back to its
 * baseline in threads, descriptors and memory (tolerances below), nothing failed unexpectedly,
 * a real client (nbdinfo) still works, and the export can be disabled and its device removed —
 * no connection kept a hold on it.
 *
 * <p>Budget: {@code -Diotarget.fuzz.cases} / {@code .seconds} / {@code .seed} (testkit's
 * {@link FuzzBudget}); {@code bench/fuzz} runs it for hours.
 */
class NbdSocketFuzzTest {
    /**
     * Tolerances over the baseline. Threads: virtual-thread carriers and JIT compiler threads the
     * JVM may start under load (at most one per core of each, 2 cores here). Descriptors: jar
     * files the class loader opens for classes first used during the run. Direct memory: the
     * transport's 64 KiB read buffers and NIO's per-thread temporaries (the export's own storage
     * is allocated before the baseline); one leaked connection holds at least a 32 MiB buffer. Heap: the JIT's and class loading's
     * data and the test's own bookkeeping. RSS: heap and allocator arenas growing on past what
     * the warm-up needed. One leaked WRITE buffer per cut connection (issue 9: up to 32 MiB each)
     * passes the direct bound at the first case and the RSS bound within ten.
     */
    private static final ProcessResources.Tolerance TOLERANCE = new ProcessResources.Tolerance(4, 4, 8 << 20, 64 << 20, 256L << 20);
    /**
     * Cases before the baseline is taken: the JVM and the allocator settle into what this load
     * needs (NIO's per-thread buffer caches, glibc arenas that keep freed direct memory, the JIT's
     * code), so that what the rest of the cases leave behind is what they leaked.
     */
    static final long WARM_UP_CASES = 300;
    /** Cases a run needs to pass: as many after the baseline as before it, so that what they leak can show. */
    static final long MIN_CASES = 2 * WARM_UP_CASES;
    private static final long EXPORT_BYTES = 16 << 20;
    /** The client's largest socket write or read (see {@link #skip}). */
    private static final int CLIENT_WRITE_CHUNK = 64 * 1024;

    @Test
    void misbehavingClientsLeaveNothingBehindAndAGoodClientStillWorks() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        try (TestTarget t = new TestTarget()) {
            Device device = t.memoryExport("fuzz", EXPORT_BYTES);
            t.engine.controller().write("tenants/fuzz/io.max", device.number() + " riops=20000 wiops=20000");
            fill(t.port);                                        // the export's storage exists before the baseline
            goodClient(t.port);                                  // warm-up: classes, loops, pools
            FuzzBudget budget = new FuzzBudget("NbdSocketFuzzTest", 3000);
            Map<String, Integer> endings = new HashMap<>();
            ProcessResources baseline = null;
            while (budget.another()) {
                long n = budget.done();
                try {
                    String ending = oneCase(t.port, budget.random(n));
                    endings.merge(ending, 1, Integer::sum);
                } catch (AssertionError | IOException e) {
                    throw new AssertionError("case " + n + " (seed " + budget.seed() + "): " + e.getMessage(), e);
                }
                if (n == WARM_UP_CASES) baseline = awaitQuiet(t);
            }
            budget.assertRan(MIN_CASES);
            System.out.println("NbdSocketFuzzTest: " + budget.done() + " cases " + endings);
            ProcessResources quiet = awaitQuiet(t);
            String excess = ProcessResources.awaitNear(baseline, TOLERANCE, 20_000);
            assertNull(excess, "back to the baseline " + baseline + " (now " + quiet + ")");
            assertEquals(0, t.server.unexpectedErrors(), "no handler failed unexpectedly");
            assertEquals(0, t.engine.unexpectedErrors(), "the engine's releaser met no failure");
            goodClient(t.port);
            assertEquals(Long.toString(EXPORT_BYTES), Tools.ok(60, "nbdinfo", "--size", t.uri("fuzz")).strip(), "nbdinfo still gets the export");
            t.server.tree().write("exports/fuzz/enable", "0");
            Await.until(Duration.ofSeconds(10), () -> t.engine.users(device) == 0,
                    () -> "no connection holds the disabled export's device: " + t.engine.users(device) + " users");
            t.engine.removeDevice(device);                       // EBUSY here would mean a leaked hold
        }
    }

    /**
     * Requests answered at once, then a bad magic in the same read: the server hangs up, and the
     * replies it had not queued yet must still give their commands back, or the connection stays
     * "in flight" for ever, holding the export's device and its buffers (found by the fuzz run).
     */
    @Test
    void aBadMagicAfterAnsweredRequestsLeavesNoCommandInFlight() throws Exception {
        try (TestTarget t = new TestTarget()) {
            Device device = t.memoryExport("fuzz", EXPORT_BYTES);
            try (RawClient c = RawClient.connect(t.port, "fuzz", false)) {
                ByteBuffer burst = ByteBuffer.allocate(3 * 28);
                for (int i = 0; i < 2; i++) {
                    burst.putInt(NbdWire.REQUEST_MAGIC).putShort((short) 0).putShort((short) NbdWire.CMD_READ).putLong(i).putLong(0).putInt(4096);
                }
                burst.putInt(0xBAD0BAD0).put(new byte[24]);
                c.out.write(burst.array());
                c.out.flush();
                assertTrue(c.closedByServer());
            }
            t.server.tree().write("exports/fuzz/enable", "0");
            Await.until(Duration.ofSeconds(5), () -> t.engine.users(device) == 0,
                    () -> "the closed connection let go of the export's device: " + t.engine.users(device) + " users");
        }
    }

    /**
     * A READ or WRITE past the end is refused before its data buffer is allocated: otherwise
     * each costs the server a 64 MiB allocation to refuse it, 256 at a time per connection.
     */
    @Test
    void requestsPastTheEndAreRefusedWithoutADataBuffer() throws Exception {
        try (TestTarget t = new TestTarget()) {
            t.memoryExport("fuzz", EXPORT_BYTES);
            try (RawClient c = RawClient.connect(t.port, "fuzz", false)) {
                long before = ProcessResources.now().directBytes();
                for (int i = 0; i < 8; i++) c.request(0, NbdWire.CMD_READ, i, EXPORT_BYTES, NbdWire.DEFAULT_MAX_REQUEST);
                for (int i = 0; i < 8; i++) assertEquals(NbdWire.EINVAL, c.reply(0).error());
                assertTrue(ProcessResources.now().directBytes() - before < 1 << 20,
                        "no 64 MiB buffers for refused reads: " + (ProcessResources.now().directBytes() - before) + " bytes");
                c.write(0, 9, EXPORT_BYTES - 512, new byte[4096]);
                assertEquals(NbdWire.ENOSPC, c.reply(0).error(), "a write past the end is out of space, its payload skipped");
                c.request(0, NbdWire.CMD_FLUSH, 10, 0, 0);
                assertEquals(0, c.reply(0).error(), "and the stream stays in step");
            }
        }
    }

    /** Connections gone, then a snapshot. */
    private static ProcessResources awaitQuiet(TestTarget t) throws InterruptedException {
        Await.until(Duration.ofSeconds(20), () -> t.server.connectionCount() == 0, () -> "every connection ended: " + t.server.connectionCount() + " left");
        ProcessResources.awaitNear(ProcessResources.now(), TOLERANCE, 0);
        return ProcessResources.now();
    }

    /** Writes the whole export once, so that the memory backend has allocated all its chunks. */
    private static void fill(int port) throws IOException {
        try (RawClient c = RawClient.connect(port, "fuzz", false)) {
            byte[] chunk = new byte[1 << 20];
            for (long at = 0; at < EXPORT_BYTES; at += chunk.length) {
                c.write(0, at, at, chunk);
                assertEquals(0, c.reply(0).error());
            }
        }
    }

    /** A well-behaved session: write, read back, flush, disconnect. */
    private static void goodClient(int port) throws IOException {
        try (RawClient c = RawClient.connect(port, "fuzz", true)) {
            byte[] data = new byte[4096];
            new Random(7).nextBytes(data);
            c.write(0, 1, 4096, data);
            assertEquals(0, c.reply(0).error());
            c.request(0, NbdWire.CMD_READ, 2, 4096, 4096);
            RawClient.Reply r = c.reply(4096);
            assertEquals(0, r.error());
            ByteBuffer payload = ByteBuffer.wrap(r.payload());
            assertEquals(4096, payload.getLong());
            assertTrue(java.util.Arrays.equals(data, 0, 4096, r.payload(), 8, r.payload().length), "the data written reads back");
            c.request(0, NbdWire.CMD_FLUSH, 3, 0, 0);
            assertEquals(0, c.reply(0).error());
            c.request(0, NbdWire.CMD_DISC, 4, 0, 0);
            assertTrue(c.closedByServer());
        }
    }

    // ------------------------------------------------------------ one case

    /** One misbehaving client; returns how it ended, for the tally. */
    private static String oneCase(int port, Random random) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            socket.setTcpNoDelay(true);
            DataInputStream in = new DataInputStream(socket.getInputStream());
            OutputStream out = socket.getOutputStream();
            in.readFully(new byte[18]);                          // greeting
            int kind = random.nextInt(10);
            if (kind == 0) {
                send(out, randomBytes(random, random.nextInt(300)));
                return end(socket, random, "garbage handshake");
            }
            byte[] handshake = handshake(random.nextBoolean());
            if (kind == 1) {
                send(out, Mutation.mutate(handshake, random));
                return end(socket, random, "mutated handshake");
            }
            boolean structured = handshake.length > 4 + 16 + goData().length;
            send(out, handshake);
            skipOptionReplies(in);
            Stream stream = requests(random, structured);
            if (kind == 2 || !stream.wellFormed) {
                send(out, stream.bytes, random.nextInt(stream.bytes.length + 1));     // cut anywhere
                return end(socket, random, stream.wellFormed ? "cut stream" : "bad stream");
            }
            send(out, stream.bytes);
            checkReplies(in, stream);
            return "answered " + stream.cookies.size();
        }
    }

    /** Ends a connection the way a client might: close, half-close, RST, or just going. */
    private static String end(Socket socket, Random random, String what) throws IOException {
        switch (random.nextInt(3)) {
            case 0 -> socket.setSoLinger(true, 0);               // RST on close
            case 1 -> socket.shutdownOutput();                   // half-close; we still close below
            default -> {
            }
        }
        return what;
    }

    private static void send(OutputStream out, byte[] bytes) throws IOException {
        send(out, bytes, bytes.length);
    }

    /** Writes the first {@code length} bytes in chunks (NIO caches a direct buffer as large as each write). */
    private static void send(OutputStream out, byte[] bytes, int length) throws IOException {
        try {
            for (int at = 0; at < length; at += CLIENT_WRITE_CHUNK) out.write(bytes, at, Math.min(CLIENT_WRITE_CHUNK, length - at));
            out.flush();
        } catch (SocketException e) {
            // the server hung up first: allowed for anything malformed
        }
    }

    /** Client flags, optionally structured replies and base:allocation, then GO on the fuzz export. */
    private static byte[] handshake(boolean structured) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        ByteBuffer flags = ByteBuffer.allocate(4).putInt(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES);
        b.writeBytes(flags.array());
        if (structured) {
            b.writeBytes(option(NbdWire.OPT_STRUCTURED_REPLY, new byte[0]));
            b.writeBytes(option(NbdWire.OPT_SET_META_CONTEXT, RawClient.metaContextData("fuzz", NbdWire.BASE_ALLOCATION)));
        }
        b.writeBytes(option(NbdWire.OPT_GO, goData()));
        return b.toByteArray();
    }

    private static byte[] goData() {
        return RawClient.goData("fuzz");
    }

    private static byte[] option(int code, byte[] data) {
        return ByteBuffer.allocate(16 + data.length).putLong(NbdWire.IHAVEOPT).putInt(code).putInt(data.length).put(data).array();
    }

    /** Reads option replies up to and including GO's ACK. */
    private static void skipOptionReplies(DataInputStream in) throws IOException {
        while (true) {
            assertEquals(NbdWire.OPTION_REPLY_MAGIC, in.readLong());
            int option = in.readInt();
            int type = in.readInt();
            in.readFully(new byte[in.readInt()]);
            if (option == NbdWire.OPT_GO) {
                if (type == NbdWire.REP_ACK) return;
                assertEquals(NbdWire.REP_INFO, type, "GO on the fuzz export succeeds");
            }
        }
    }


    private static byte[] randomBytes(Random random, int n) {
        byte[] b = new byte[n];
        random.nextBytes(b);
        return b;
    }

    // ------------------------------------------------------------ request streams

    /** A transmission stream and what it asks: cookie → (type, length) of each request that needs a reply. */
    private record Stream(byte[] bytes, Map<Long, long[]> cookies, boolean wellFormed) {
    }

    private static Stream requests(Random random, boolean structured) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        Map<Long, long[]> cookies = new HashMap<>();
        boolean wellFormed = true;
        int count = 1 + random.nextInt(24);
        for (int i = 0; i < count; i++) {
            long cookie = random.nextLong();
            int type = switch (random.nextInt(12)) {
                case 0, 1, 2 -> NbdWire.CMD_READ;
                case 3, 4, 5 -> NbdWire.CMD_WRITE;
                case 6 -> NbdWire.CMD_FLUSH;
                case 7 -> NbdWire.CMD_TRIM;
                case 8 -> NbdWire.CMD_WRITE_ZEROES;
                case 9 -> NbdWire.CMD_BLOCK_STATUS;
                case 10 -> NbdWire.CMD_CACHE;
                default -> random.nextInt(1 << 16);              // mostly unknown commands
            };
            if (type == NbdWire.CMD_DISC) type = NbdWire.CMD_FLUSH;
            int flags = random.nextInt(4) == 0 ? random.nextInt(1 << 16) : random.nextInt(2);
            long offset = switch (random.nextInt(5)) {
                case 0 -> random.nextLong();
                case 1 -> EXPORT_BYTES - random.nextInt(8192);
                default -> (long) random.nextInt((int) EXPORT_BYTES / 512) * 512;
            };
            long length = switch (random.nextInt(8)) {
                case 0 -> 0;
                case 1 -> random.nextInt() & 0xFFFFFFFFL;        // up to 4 GiB: refused, a WRITE's payload is then skipped
                case 2 -> NbdWire.DEFAULT_MAX_REQUEST + 1 - random.nextInt(2);
                default -> 1 + random.nextInt(16384);
            };
            if (type == NbdWire.CMD_WRITE && length > 16384) {
                // The payload is sent whatever the length: up to 1 MiB, and now and then one just over the limit (skipped).
                length = random.nextInt(50) == 0 ? NbdWire.DEFAULT_MAX_REQUEST + 1 : 1 + random.nextInt(1 << 20);
            }
            ByteBuffer header = ByteBuffer.allocate(28).putInt(NbdWire.REQUEST_MAGIC).putShort((short) flags).putShort((short) type)
                    .putLong(cookie).putLong(offset).putInt((int) length);
            if (random.nextInt(40) == 0) {
                header.putInt(0, random.nextInt());              // bad magic: the server hangs up
                wellFormed = false;
            }
            b.writeBytes(header.array());
            if (type == NbdWire.CMD_WRITE) b.writeBytes(new byte[(int) length]);
            cookies.put(cookie, new long[]{type, length, flags});
            if (!wellFormed) break;
        }
        if (random.nextInt(3) == 0) {                            // DISC in the middle or at the end
            b.writeBytes(ByteBuffer.allocate(28).putInt(NbdWire.REQUEST_MAGIC).putShort((short) 0).putShort((short) NbdWire.CMD_DISC)
                    .putLong(random.nextLong()).putLong(0).putInt(0).array());
        }
        return new Stream(b.toByteArray(), cookies, wellFormed);
    }

    /** Every request is answered exactly once, then (after DISC, or our half-close) the server closes. */
    private static void checkReplies(DataInputStream in, Stream stream) throws IOException {
        Map<Long, long[]> open = new HashMap<>(stream.cookies);
        boolean disc = stream.bytes.length >= 28 && ByteBuffer.wrap(stream.bytes, stream.bytes.length - 28, 28).getShort(6) == NbdWire.CMD_DISC;
        try {
            while (!open.isEmpty()) {
                int magic = in.readInt();
                if (magic == NbdWire.SIMPLE_REPLY_MAGIC) {
                    int error = in.readInt();
                    long cookie = in.readLong();
                    long[] request = answered(open, cookie);
                    if (error == 0 && request[0] == NbdWire.CMD_READ) skip(in, request[1]);
                } else if (magic == NbdWire.STRUCTURED_REPLY_MAGIC) {
                    int flags = in.readUnsignedShort();
                    in.readUnsignedShort();
                    long cookie = in.readLong();
                    skip(in, Integer.toUnsignedLong(in.readInt()));
                    if (!stream.cookies.containsKey(cookie) || !open.containsKey(cookie)) fail("chunk for unknown or finished cookie " + cookie);
                    if ((flags & NbdWire.REPLY_FLAG_DONE) != 0) open.remove(cookie);
                } else {
                    fail("not a reply: magic 0x" + Integer.toHexString(magic));
                }
            }
        } catch (EOFException | SocketTimeoutException e) {
            fail(open.size() + " of " + stream.cookies.size() + " requests got no reply (" + e + ")");
        }
        if (disc) assertTrue(in.read() < 0, "the server closes after DISC and the replies");
    }

    /**
     * Reads and drops {@code n} bytes in pieces: NIO caches, per thread, a direct buffer as large
     * as each read, and 32 MiB ones would count against the server's direct memory here.
     */
    private static void skip(DataInputStream in, long n) throws IOException {
        byte[] piece = new byte[CLIENT_WRITE_CHUNK];
        for (long left = n; left > 0; left -= Math.min(left, piece.length)) in.readFully(piece, 0, (int) Math.min(left, piece.length));
    }

    private static long[] answered(Map<Long, long[]> open, long cookie) {
        long[] request = open.remove(cookie);
        if (request == null) fail("reply for cookie " + cookie + ", which was not asked or was answered already");
        return request;
    }
}
