package io.iotarget.frontend.nbd;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.model.Clock;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Coverage-guided fuzz targets for what an NBD client controls before any IO: the option and
 * request decoders and the option haggling. A normal test run replays the kept inputs
 * (src/test/resources/.../NbdDecoderFuzzTestInputs/), {@code scripts/fuzz} fuzzes. The committed
 * seeds (a first byte, then a client's stream) cover every option the server knows and an
 * unknown one, option data too big and of bad lengths, unknown client flags and a bad magic;
 * and every command, a WRITE whose payload is skipped or cut short, a bad magic and a header of
 * all ones. The negotiation's seeds come in pairs, the server within and over its connection limit.
 *
 * <p>Invariants, not just "no exception": however the stream is cut, the decoders deliver the
 * same events (a decoder that consumed half a field, or stopped while it could go on, would
 * differ from the one fed whole); a decoder that asks for more has consumed everything it could;
 * every option gets well-formed replies, and transmission starts only on an export.
 */
class NbdDecoderFuzzTest {
    /** The first input byte picks the cuts; the rest is the stream. */
    private static List<int[]> cuts(byte[] input) {
        int length = input.length - 1;
        Random random = new Random(input[0]);
        int[] random1 = new int[length];
        for (int at = 0; at < length; ) {
            int step = 1 + random.nextInt(40);
            random1[at] = 1;
            at += step;
        }
        int[] bytewise = new int[length];
        Arrays.fill(bytewise, 1);
        return List.of(new int[length], bytewise, random1);   // whole, byte by byte, random pieces
    }

    /** Splits {@code stream} where {@code cut} marks, calling {@code feed} with everything received and not yet consumed. */
    private static void feedInPieces(byte[] stream, int[] cut, java.util.function.Predicate<ByteBuffer> feed) {
        ByteBuffer pending = ByteBuffer.allocate(stream.length).flip();
        int from = 0;
        for (int at = 1; at <= stream.length; at++) {
            if (at < stream.length && cut[at] == 0) continue;
            pending.compact().put(stream, from, at - from).flip();
            from = at;
            if (!feed.test(pending)) return;
        }
    }

    // ------------------------------------------------------------ option decoder

    @FuzzTest
    void optionDecoderDeliversTheSameEventsWhereverTheStreamIsCut(byte[] input) {
        if (input.length < 2) return;
        byte[] stream = Arrays.copyOfRange(input, 1, input.length);
        List<String> reference = null;
        for (int[] cut : cuts(input)) {
            OptionDecoder decoder = new OptionDecoder();
            List<String> events = new ArrayList<>();
            feedInPieces(stream, cut, pending -> {
                for (OptionDecoder.Event e; (e = decoder.decode(pending)) != null; ) {
                    events.add(describe(e));
                    if (e instanceof OptionDecoder.BadMagic) return false;
                }
                // Asking for more: nothing whole is left (a header needs 16 bytes, client flags 4).
                assertTrue(pending.remaining() < OptionDecoder.HEADER_BYTES, "decoder stopped with " + pending.remaining() + " bytes");
                return true;
            });
            if (reference == null) reference = events;
            else assertEquals(reference, events);
        }
    }

    private static String describe(OptionDecoder.Event e) {
        return switch (e) {
            case OptionDecoder.Option o -> "option " + o.code() + " " + HexFormat.of().formatHex(o.data());
            default -> e.toString();
        };
    }

    // ------------------------------------------------------------ request decoder

    /** Records headers and payloads; takes WRITE payloads up to 64 KiB, skips larger ones. */
    private static final class Recorder implements RequestDecoder.Handler {
        final List<String> events = new ArrayList<>();
        ByteBuffer payload;

        @Override
        public ByteBuffer request(int flags, int type, long cookie, long offset, long length) {
            events.add("request " + flags + " " + type + " " + cookie + " " + offset + " " + length);
            if (type != NbdWire.CMD_WRITE || length > 65536) return null;
            payload = ByteBuffer.allocate((int) length);
            return payload;
        }

        @Override
        public void payloadDone() {
            events.add(payload == null ? "skipped" : "payload " + HexFormat.of().formatHex(payload.array()));
            payload = null;
        }
    }

    @FuzzTest
    void requestDecoderDeliversTheSameRequestsWhereverTheStreamIsCut(byte[] input) {
        if (input.length < 2) return;
        byte[] stream = Arrays.copyOfRange(input, 1, input.length);
        List<String> reference = null;
        for (int[] cut : cuts(input)) {
            RequestDecoder decoder = new RequestDecoder();
            Recorder recorder = new Recorder();
            boolean[] badMagic = {false};
            feedInPieces(stream, cut, pending -> {
                while (true) {
                    // As the transport does: a payload target, when there is one, is filled straight from the socket.
                    ByteBuffer target = decoder.payloadTarget();
                    if (target != null && pending.hasRemaining()) {
                        int n = Math.min(target.remaining(), pending.remaining());
                        target.put(pending.slice(pending.position(), n));
                        pending.position(pending.position() + n);
                    }
                    RequestDecoder.Result r = decoder.decode(pending, recorder);
                    if (r == RequestDecoder.Result.BAD_MAGIC) {
                        badMagic[0] = true;
                        return false;
                    }
                    if (r == RequestDecoder.Result.NEED_MORE) break;
                }
                if (decoder.atHeader()) {
                    assertTrue(pending.remaining() < RequestDecoder.HEADER_BYTES, "decoder stopped with a whole header");
                } else {
                    assertEquals(0, pending.remaining(), "decoder stopped inside a payload with bytes left");
                }
                return true;
            });
            if (badMagic[0]) recorder.events.add("bad magic");
            if (reference == null) reference = recorder.events;
            else assertEquals(reference, recorder.events);
        }
    }

    // ------------------------------------------------------------ negotiation

    private static final Group ROOT = new IoController(Clock.SYSTEM, Engine.STANDARD_POLICIES).root();
    private static final Export DEFAULT = new Export("default", "the default export",
            new Device(0, new DeviceNumber(259, 0), "default", 1 << 20, 512, false, 1), ROOT, false, false, false, true, List.of());

    private static final Negotiation.Exports EXPORTS = new Negotiation.Exports() {
        @Override
        public Export find(String name) {
            return name.isEmpty() || name.equals("default") ? DEFAULT : null;
        }

        @Override
        public List<Export> enabled() {
            return List.of(DEFAULT);
        }

        @Override
        public String refusal(Export export) {
            return null;
        }

        @Override
        public TlsCredentials tls() {
            return null;
        }

        @Override
        public boolean shuttingDown() {
            return false;
        }

        @Override
        public int maxRequest() {
            return NbdWire.DEFAULT_MAX_REQUEST;
        }
    };

    /** The first input byte, when odd, has the server over its connection limit; the rest is the stream. */
    @FuzzTest
    void negotiationAnswersEveryOptionWithWellFormedReplies(byte[] input) {
        if (input.length < 2) return;
        OptionDecoder decoder = new OptionDecoder();
        Negotiation negotiation = new Negotiation(EXPORTS, (input[0] & 1) != 0 ? "over the limit" : null);
        ByteBuffer in = ByteBuffer.wrap(input, 1, input.length - 1).slice();
        List<ByteBuffer> replies = new ArrayList<>();
        for (OptionDecoder.Event event; (event = decoder.decode(in)) != null; ) {
            replies.clear();
            Negotiation.Next next = switch (event) {
                case OptionDecoder.ClientFlags f -> negotiation.clientFlags(f.flags());
                case OptionDecoder.Option o -> negotiation.option(o, replies::add);
                case OptionDecoder.TooBig t -> negotiation.tooBig(t, replies::add);
                case OptionDecoder.BadMagic b -> Negotiation.Next.CLOSE;
            };
            int code = switch (event) {
                case OptionDecoder.Option o -> o.code();
                case OptionDecoder.TooBig t -> t.code();
                default -> -1;
            };
            if (next == Negotiation.Next.TRANSMIT) {
                assertEquals(DEFAULT, negotiation.export(), "transmission starts only on an export");
                if (code == NbdWire.OPT_EXPORT_NAME) return;       // its reply has no option header
            }
            if (next == Negotiation.Next.CONTINUE && code >= 0 && replies.isEmpty()) fail("option " + code + " got no reply");
            for (ByteBuffer reply : replies) checkOptionReply(reply, code);
            if (next != Negotiation.Next.CONTINUE) return;
        }
    }

    /** The 20-byte option reply header names the option, and its length is what follows. */
    private static void checkOptionReply(ByteBuffer reply, int code) {
        ByteBuffer r = reply.duplicate();
        assertTrue(r.remaining() >= Negotiation.REPLY_HEADER_BYTES, "reply of " + r.remaining() + " bytes");
        assertEquals(NbdWire.OPTION_REPLY_MAGIC, r.getLong(r.position()));
        assertEquals(code, r.getInt(r.position() + 8));
        assertEquals(r.remaining() - Negotiation.REPLY_HEADER_BYTES, r.getInt(r.position() + 16));
    }
}
