package io.iotarget.frontend.nvmetcp;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.api.BugDetectors;
import com.code_intelligence.jazzer.api.SilentCloseable;
import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.AfterAll;

import java.io.EOFException;
import java.io.IOException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Coverage-guided fuzz target for the NVMe/TCP command handlers (fabrics, admin, IO) of a
 * running target on loopback: each input is a sequence of arbitrary 64-byte SQEs with arbitrary
 * data (in the capsule or through R2T, in the direction the SQE names), on an enabled admin
 * queue and, for half the inputs, an IO queue of the same controller.
 *
 * <p>Invariants: every command gets exactly one response with its command id and no more data
 * than its SGL asked for, or the target terminates the connection (C2HTermReq or a close); no
 * handler throws (the transport counts those as unexpected failures) and no timer fails.
 * Asynchronous Event Requests are left out: they are answered only when an event happens.
 *
 * <p>A normal test run replays src/test/resources/.../CommandFuzzTestInputs/, {@code
 * scripts/fuzz} fuzzes. The committed seeds are laid out for the order in which this target
 * consumes its input (FuzzedDataProvider takes the SQEs and data from the front, the booleans and
 * lengths from the back, the last byte first): admin commands (Identify, Get Log Page, Get/Set
 * Features, Property Get, Keep Alive), IO with digests (writes through R2T and in the capsule,
 * reads, Compare, Flush, Write Zeroes, Deallocate), and commands the target refuses. A change to
 * that order calls for new seeds.
 */
class CommandFuzzTest {
    private static final int AER = 0x0C;
    private static TargetFixture fixture;

    private static synchronized TargetFixture fixture() throws Exception {
        if (fixture == null) fixture = new TargetFixture();
        return fixture;
    }

    @AfterAll
    static void stop() {
        if (fixture != null) fixture.close();
        fixture = null;
    }

    @FuzzTest
    @SuppressWarnings("try")      // the detector's scope is the try block
    void everyCommandIsAnsweredOnceOrTheQueueIsTerminated(FuzzedDataProvider data) throws Exception {
        // Loopback only: the SSRF detector would report the test's own connections to its server.
        try (SilentCloseable loopback = BugDetectors.allowNetworkConnections((host, port) -> host.contains("127.0.0.1") || host.equals("localhost"))) {
            TargetFixture f = fixture();
            boolean digests = data.consumeBoolean();
            boolean ioQueue = data.consumeBoolean();
            try (TestHost admin = new TestHost(f.port, digests, digests)) {
                int cntlid = admin.bringUp(TargetFixture.NQN, TestHost.HOST_NQN, 5000);
                TestHost host = ioQueue ? f.ioQueue(cntlid, 1, digests, digests, data.consumeBoolean()) : admin;
                try {
                    host.timeout(5000);
                    for (int commands = 0; commands < 8 && data.remainingBytes() >= 64; commands++) {
                        if (!runOne(host, ioQueue, data)) break;
                    }
                } finally {
                    if (host != admin) host.close();
                }
            }
            assertEquals(0, f.target.transport().unexpectedFailures(), "no handler threw");
            assertEquals(0, f.target.unexpectedErrors(), "no timer threw");
            assertEquals(0, f.engine.unexpectedErrors(), "no completion threw");
        }
    }

    /** One fuzzed command; false once the target ended the connection. */
    private static boolean runOne(TestHost host, boolean ioQueue, FuzzedDataProvider data) throws IOException {
        ByteBuffer sqe = ByteBuffer.wrap(data.consumeBytes(64)).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer mine = host.sqe(0, 0);                        // a fresh command id
        sqe.putShort(2, mine.getShort(2));
        if (!ioQueue && (sqe.get(0) & 0xFF) == AER) sqe.put(0, (byte) 0x18);   // Keep Alive instead
        // The host moves data the way the SQE's direction bits say, as a real host would (the
        // target's checks of lengths and SGLs are fuzzed all the same; the direction is the host's).
        int opcode = sqe.get(0) & 0xFF;
        int direction = (opcode == 0x7F ? sqe.get(4) : opcode) & 0b11;
        byte[] dataOut = direction == 0b01 ? data.consumeBytes(data.consumeInt(0, 9000)) : null;
        if (dataOut != null && dataOut.length == 0) dataOut = null;
        int dataIn = direction == 0b10 ? data.consumeInt(0, 70_000) : 0;
        try {
            host.execute(sqe, dataOut, dataIn, data.consumeBoolean());
            return true;
        } catch (EOFException e) {
            return false;                                        // terminated (C2HTermReq) or closed: allowed
        } catch (SocketTimeoutException e) {
            throw new AssertionError("no response within 5 s to " + java.util.HexFormat.of().formatHex(sqe.array()), e);
        } catch (IOException e) {
            if (e.getMessage() != null && e.getMessage().startsWith("protocol check failed")) throw new AssertionError(e.getMessage(), e);
            return false;                                        // reset by the target
        }
    }
}
