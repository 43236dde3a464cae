package io.iotarget.frontend.nbd;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.engine.Engine;
import io.iotarget.model.ManualClock;
import io.iotarget.transport.EventLoop;
import io.iotarget.transport.Transport;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Option haggling over a real socket: every error is a reply, never a disconnect, except where the spec says so. */
class HandshakeTest {
    private static TestTarget target;

    @BeforeAll
    static void start() throws Exception {
        target = new TestTarget();
        target.memoryExport("default", 1 << 20);
        target.memoryExport("other", 2 << 20);
        target.server.tree().write("exports/other/description", "the other one");
    }

    @AfterAll
    static void stop() {
        target.close();
    }

    private static RawClient fixed() throws Exception {
        return new RawClient(target.port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES);
    }

    @Test
    void shouldCloseOnUnknownClientFlags() throws Exception {
        try (RawClient c = new RawClient(target.port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE | 4)) {
            assertTrue(c.closedByServer());
        }
    }

    @Test
    void shouldAnswerUnknownAndUnsupportedOptionsAndCarryOn() throws Exception {
        try (RawClient c = fixed()) {
            for (int code : new int[]{0, 4, NbdWire.OPT_STARTTLS, 11, 12345}) {
                c.option(code, new byte[]{1, 2, 3});
                RawClient.OptionReply r = c.optionReply();
                assertEquals(code, r.option());
                assertEquals(NbdWire.REP_ERR_UNSUP, r.type(), "option " + code);
            }
            c.go("default", true);                       // still usable after the errors
            c.request(0, NbdWire.CMD_READ, 1, 0, 512);
            assertEquals(0, c.reply(512).error());
        }
    }

    @Test
    void shouldRefuseDataOnDatalessOptions() throws Exception {
        try (RawClient c = fixed()) {
            c.option(NbdWire.OPT_LIST, new byte[]{0});
            assertEquals(NbdWire.REP_ERR_INVALID, c.optionReply().type());
            c.option(NbdWire.OPT_STRUCTURED_REPLY, new byte[]{0});
            assertEquals(NbdWire.REP_ERR_INVALID, c.optionReply().type());
        }
    }

    @Test
    void shouldListEnabledExportsWithDescriptions() throws Exception {
        try (RawClient c = fixed()) {
            c.option(NbdWire.OPT_LIST, new byte[0]);
            RawClient.OptionReply first = c.optionReply();
            RawClient.OptionReply second = c.optionReply();
            assertEquals(NbdWire.REP_ACK, c.optionReply().type());
            assertEquals(NbdWire.REP_SERVER, first.type());
            ByteBuffer b = ByteBuffer.wrap(second.data());
            int nameLength = b.getInt();
            assertEquals("other", new String(second.data(), 4, nameLength, StandardCharsets.UTF_8));
            assertEquals("the other one", new String(second.data(), 4 + nameLength, second.data().length - 4 - nameLength, StandardCharsets.UTF_8));
        }
    }

    @Test
    void shouldRefuseMalformedInfoAndGo() throws Exception {
        try (RawClient c = fixed()) {
            c.option(NbdWire.OPT_GO, new byte[]{0, 0, 0, 9, 'a', 0, 0});   // name length overruns
            assertEquals(NbdWire.REP_ERR_INVALID, c.optionReply().type());
            c.option(NbdWire.OPT_INFO, new byte[]{0, 0, 0, 0, 0, 2, 0, 3}); // 2 requests, 1 present
            assertEquals(NbdWire.REP_ERR_INVALID, c.optionReply().type());
            c.option(NbdWire.OPT_INFO, new byte[]{0, 0});                   // shorter than 6
            assertEquals(NbdWire.REP_ERR_INVALID, c.optionReply().type());
            c.option(NbdWire.OPT_GO, RawClient.goData("nope"));
            assertEquals(NbdWire.REP_ERR_UNKNOWN, c.optionReply().type());
            c.go("other", false);
        }
    }

    @Test
    void shouldAnswerInfoWithSizeFlagsBlockSizesAndNameForTheDefaultExport() throws Exception {
        try (RawClient c = fixed()) {
            // name "" with requests NAME and BLOCK_SIZE
            c.option(NbdWire.OPT_INFO, new byte[]{0, 0, 0, 0, 0, 2, 0, (byte) NbdWire.INFO_NAME, 0, (byte) NbdWire.INFO_BLOCK_SIZE});
            boolean sawExport = false, sawName = false, sawBlockSize = false;
            while (true) {
                RawClient.OptionReply r = c.optionReply();
                if (r.type() == NbdWire.REP_ACK) break;
                assertEquals(NbdWire.REP_INFO, r.type());
                ByteBuffer b = ByteBuffer.wrap(r.data());
                switch (b.getShort()) {
                    case NbdWire.INFO_EXPORT -> {
                        sawExport = true;
                        assertEquals(1 << 20, b.getLong());
                        int flags = b.getShort() & 0xffff;
                        assertEquals(0, flags & NbdWire.TFLAG_READ_ONLY);
                        assertEquals(0, flags & NbdWire.TFLAG_SEND_DF, "no DF without structured replies");
                        assertTrue((flags & NbdWire.TFLAG_CAN_MULTI_CONN) != 0);
                    }
                    case NbdWire.INFO_NAME -> {
                        sawName = true;
                        assertEquals("default", new String(r.data(), 2, r.data().length - 2, StandardCharsets.UTF_8));
                    }
                    case NbdWire.INFO_BLOCK_SIZE -> {
                        sawBlockSize = true;
                        assertEquals(1, b.getInt());
                        assertEquals(4096, b.getInt());
                        assertEquals(NbdWire.DEFAULT_MAX_REQUEST, b.getInt());
                    }
                    default -> {
                    }
                }
            }
            assertTrue(sawExport && sawName && sawBlockSize);
        }
    }

    @Test
    void shouldNegotiateMetaContextsOnlyAfterStructuredReplies() throws Exception {
        try (RawClient c = fixed()) {
            c.option(NbdWire.OPT_SET_META_CONTEXT, RawClient.metaContextData("default", NbdWire.BASE_ALLOCATION));
            assertEquals(NbdWire.REP_ERR_INVALID, c.optionReply().type());
            c.option(NbdWire.OPT_STRUCTURED_REPLY, new byte[0]);
            assertEquals(NbdWire.REP_ACK, c.optionReply().type());
            byte[] overrun = RawClient.metaContextData("default", NbdWire.BASE_ALLOCATION);
            overrun[overrun.length - NbdWire.BASE_ALLOCATION.length() - 1] = 100;   // query length 100 past the end
            c.option(NbdWire.OPT_LIST_META_CONTEXT, overrun);
            assertEquals(NbdWire.REP_ERR_INVALID, c.optionReply().type());
            c.option(NbdWire.OPT_LIST_META_CONTEXT, RawClient.metaContextData("default"));
            RawClient.OptionReply listed = c.optionReply();
            assertEquals(NbdWire.REP_META_CONTEXT, listed.type());
            assertEquals(NbdWire.BASE_ALLOCATION, new String(listed.data(), 4, listed.data().length - 4, StandardCharsets.US_ASCII));
            assertEquals(NbdWire.REP_ACK, c.optionReply().type());
            c.option(NbdWire.OPT_SET_META_CONTEXT, RawClient.metaContextData("default", "qemu:dirty-bitmap:x", "base:"));
            assertEquals(NbdWire.REP_ACK, c.optionReply().type(), "unknown namespaces and 'base:' select nothing in SET");
            c.option(NbdWire.OPT_SET_META_CONTEXT, RawClient.metaContextData("nope", NbdWire.BASE_ALLOCATION));
            assertEquals(NbdWire.REP_ERR_UNKNOWN, c.optionReply().type());
        }
    }

    @Test
    void shouldSkipOversizedOptionsWithTooBig() throws Exception {
        try (RawClient c = fixed()) {
            c.option(NbdWire.OPT_INFO, new byte[OptionDecoder.MAX_OPTION_DATA + 10]);
            assertEquals(NbdWire.REP_ERR_TOO_BIG, c.optionReply().type());
            c.go("default", false);
        }
    }

    @Test
    void shouldAckAbort() throws Exception {
        try (RawClient c = fixed()) {
            c.option(NbdWire.OPT_ABORT, new byte[0]);
            assertEquals(NbdWire.REP_ACK, c.optionReply().type());
            assertTrue(c.closedByServer());
        }
    }

    @Test
    void shouldServeTheDefaultExportForAnEmptyExportNameWithZeroPadding() throws Exception {
        try (RawClient c = new RawClient(target.port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE)) {
            c.option(NbdWire.OPT_EXPORT_NAME, new byte[0]);
            assertEquals(1 << 20, c.in.readLong());
            c.in.readUnsignedShort();
            c.in.readFully(new byte[124]);
            c.request(0, NbdWire.CMD_READ, 5, 0, 4096);
            RawClient.Reply r = c.reply(4096);
            assertEquals(5, r.cookie());
            assertEquals(0, r.error());
        }
    }

    @Test
    void shouldHangUpOnExportNameForAnUnknownExport() throws Exception {
        try (RawClient c = fixed()) {
            c.option(NbdWire.OPT_EXPORT_NAME, "nope".getBytes(StandardCharsets.UTF_8));
            assertTrue(c.closedByServer());
        }
    }

    @Test
    void shouldHangUpOnAnythingButExportNameInNonFixedNewstyle() throws Exception {
        try (RawClient c = new RawClient(target.port).hello(0)) {
            c.option(NbdWire.OPT_LIST, new byte[0]);
            assertTrue(c.closedByServer());
        }
    }

    @Test
    void shouldCloseOnBadOptionMagic() throws Exception {
        try (RawClient c = fixed()) {
            c.out.writeLong(42);
            c.out.writeInt(NbdWire.OPT_LIST);
            c.out.writeInt(0);
            c.out.flush();
            assertTrue(c.closedByServer());
        }
    }
    @Test
    void shouldDisconnectAClientThatDoesNotFinishNegotiatingInTime() throws Exception {
        try (Engine engine = new Engine(); NbdServer server = new NbdServer(engine, Duration.ofMillis(300))) {
            engine.addDevice("d", new MemoryBackend(1 << 20, 512, false), null, Engine.DEFAULT_QUEUE_DEPTH);
            server.tree().mkdir("exports/d");
            server.tree().write("exports/d/backend", "d");
            server.tree().write("exports/d/enable", "1");
            server.listen(new InetSocketAddress("127.0.0.1", 0));
            int port = server.localAddresses().getFirst().getPort();
            try (RawClient quick = RawClient.connect(port, "d", false);
                 RawClient silent = new RawClient(port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES)) {
                long start = System.nanoTime();
                assertTrue(silent.closedByServer(), "a client that never sends an option is cut off");
                long ms = (System.nanoTime() - start) / 1_000_000;
                assertTrue(ms >= 250 && ms < 5_000, "after the limit, not before: " + ms + " ms");
                quick.request(0, NbdWire.CMD_READ, 7, 0, 4096);
                RawClient.Reply reply = quick.reply(4096);
                assertEquals(0, reply.error(), "a client that negotiated in time keeps its connection past the limit");
                assertEquals(7, reply.cookie());
            }
        }
    }

    /**
     * Closing the server ends a client that is still negotiating at once, as NBD_CMD_DISC would
     * (it has no requests to answer). It used to be left to the handshake limit, so close waited
     * up to its 10 s grace for it: also for a client that had just hung up, its end not read yet.
     */
    @Test
    void shouldDisconnectAClientStillNegotiatingAtOnceWhenTheServerCloses() throws Exception {
        try (Engine engine = new Engine()) {
            NbdServer server = new NbdServer(engine, Duration.ofSeconds(60));
            boolean closed = false;
            try {
                server.listen(new InetSocketAddress("127.0.0.1", 0));
                int port = server.localAddresses().getFirst().getPort();
                try (RawClient silent = new RawClient(port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES)) {
                    assertEquals(1, server.connections().size(), "the client is negotiating");
                    long start = System.nanoTime();
                    server.close();
                    closed = true;
                    long ms = (System.nanoTime() - start) / 1_000_000;
                    assertTrue(ms < 5_000, "close waited for the negotiating client instead of ending it: " + ms + " ms");
                    assertTrue(silent.closedByServer(), "the client was disconnected");
                }
            } finally {
                if (!closed) server.close();
            }
        }
    }

    @Test
    void shouldDisconnectAtTheHandshakeLimitOnTheTransportClockAndNotANanosecondBefore() throws Exception {
        ManualClock clock = new ManualClock(1_000_000_000L);
        try (Engine engine = new Engine();
             Transport transport = new Transport(new Transport.Settings(1, Duration.ofSeconds(30), 100, 100, Transport.Settings.DEFAULT_SEND_BUFFER,
                                                                        Duration.ZERO), clock);
             NbdServer server = new NbdServer(engine, transport)) {
            server.listen(new InetSocketAddress("127.0.0.1", 0));
            int port = server.localAddresses().getFirst().getPort();
            try (RawClient silent = new RawClient(port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES)) {
                long limitNs = clock.nanoTime() + NbdServer.HANDSHAKE_LIMIT.toNanos();      // the greeting went out: the limit runs from now
                passAt(clock, transport.loop(), limitNs - 1);
                assertEquals(0, server.counters().counter(NbdCounter.HANDSHAKE_TIMEOUTS), "a nanosecond before the limit");
                assertEquals(1, transport.connectionCount());
                passAt(clock, transport.loop(), limitNs + 1);
                assertEquals(1, server.counters().counter(NbdCounter.HANDSHAKE_TIMEOUTS), "a nanosecond after it");
                assertTrue(silent.closedByServer());
            }
        }
    }

    /** Moves {@code clock} to {@code nowNs} and waits for {@code loop} to run what is due by then. */
    private static void passAt(ManualClock clock, EventLoop loop, long nowNs) throws Exception {
        clock.set(nowNs);
        CompletableFuture<Void> done = new CompletableFuture<>();
        loop.execute(() -> loop.schedule(nowNs - loop.nowNs(), () -> done.complete(null)));
        done.get(10, TimeUnit.SECONDS);
    }
}
