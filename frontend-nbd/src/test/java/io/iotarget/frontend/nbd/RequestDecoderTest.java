package io.iotarget.frontend.nbd;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

class RequestDecoderTest {
    /** What the handler saw, as text, plus the WRITE payloads it stored. */
    private static final class Recorder implements RequestDecoder.Handler {
        final List<String> seen = new ArrayList<>();
        final List<ByteBuffer> payloads = new ArrayList<>();
        private final boolean refuseWrites;

        Recorder(boolean refuseWrites) {
            this.refuseWrites = refuseWrites;
        }

        @Override
        public ByteBuffer request(int flags, int type, long cookie, long offset, long length) {
            seen.add("req type=" + type + " flags=" + flags + " cookie=" + cookie + " off=" + offset + " len=" + length);
            if (type != NbdWire.CMD_WRITE || refuseWrites) return null;
            ByteBuffer target = ByteBuffer.allocate((int) length);
            payloads.add(target);
            return target;
        }

        @Override
        public void payloadDone() {
            seen.add("payload");
        }
    }

    /** READ, WRITE of 300 bytes, FLUSH with FUA, a WRITE of 5 bytes, BLOCK_STATUS with an offset above 2^63. */
    private static byte[] stream() {
        ByteBuffer b = ByteBuffer.allocate(28 * 5 + 305);
        header(b, 0, NbdWire.CMD_READ, 1, 4096, 512);
        header(b, 0, NbdWire.CMD_WRITE, 2, 8192, 300);
        for (int i = 0; i < 300; i++) b.put((byte) i);
        header(b, NbdWire.CMD_FLAG_FUA, NbdWire.CMD_FLUSH, 3, 0, 0);
        header(b, 0, NbdWire.CMD_WRITE, 4, 0, 5);
        b.put(new byte[]{9, 8, 7, 6, 5});
        header(b, NbdWire.CMD_FLAG_REQ_ONE, NbdWire.CMD_BLOCK_STATUS, -1L, 0x8000_0000_0000_0000L, 0xffff_ffffL);
        return b.array();
    }

    private static void header(ByteBuffer b, int flags, int type, long cookie, long offset, long length) {
        b.putInt(NbdWire.REQUEST_MAGIC).putShort((short) flags).putShort((short) type).putLong(cookie).putLong(offset).putInt((int) length);
    }

    private static final List<String> EXPECTED = List.of(
            "req type=0 flags=0 cookie=1 off=4096 len=512",
            "req type=1 flags=0 cookie=2 off=8192 len=300", "payload",
            "req type=3 flags=1 cookie=3 off=0 len=0",
            "req type=1 flags=0 cookie=4 off=0 len=5", "payload",
            "req type=7 flags=8 cookie=-1 off=-9223372036854775808 len=4294967295");

    private static void feed(RequestDecoder decoder, Recorder handler, ByteBuffer pending, byte[] bytes, int from, int to) {
        pending.compact().put(bytes, from, to - from).flip();
        RequestDecoder.Result r;
        while ((r = decoder.decode(pending, handler)) == RequestDecoder.Result.EVENT) {
            // keep going
        }
        assertEquals(RequestDecoder.Result.NEED_MORE, r);
    }

    @Test
    void shouldDeliverTheSameRequestsAndPayloadsWhateverTheSplitPoint() {
        byte[] bytes = stream();
        for (boolean refuse : new boolean[]{false, true}) {
            for (int split = 1; split < bytes.length; split++) {
                RequestDecoder decoder = new RequestDecoder();
                Recorder handler = new Recorder(refuse);
                ByteBuffer pending = ByteBuffer.allocate(bytes.length).flip();
                feed(decoder, handler, pending, bytes, 0, split);
                feed(decoder, handler, pending, bytes, split, bytes.length);
                assertEquals(EXPECTED, handler.seen, "split " + split);
                assertEquals(0, pending.remaining());
                assertNull(decoder.payloadTarget(), "nothing pending after the last request");
                if (!refuse) {
                    for (int i = 0; i < 300; i++) assertEquals((byte) i, handler.payloads.get(0).get(i));
                    assertEquals(ByteBuffer.wrap(new byte[]{9, 8, 7, 6, 5}), handler.payloads.get(1).flip());
                }
            }
        }
    }

    @Test
    void shouldExposeThePayloadTargetForDirectReads() {
        ByteBuffer b = ByteBuffer.allocate(28);
        header(b, 0, NbdWire.CMD_WRITE, 7, 0, 100);
        RequestDecoder decoder = new RequestDecoder();
        Recorder handler = new Recorder(false);
        assertEquals(RequestDecoder.Result.EVENT, decoder.decode(b.flip(), handler));
        assertEquals(RequestDecoder.Result.NEED_MORE, decoder.decode(b, handler));
        ByteBuffer target = decoder.payloadTarget();
        target.put(new byte[100]);                       // as a socket read straight into it would
        assertEquals(RequestDecoder.Result.EVENT, decoder.decode(b, handler));
        assertEquals(List.of("req type=1 flags=0 cookie=7 off=0 len=100", "payload"), handler.seen);
    }

    @Test
    void shouldRefuseBadMagicWithoutConsumingIt() {
        ByteBuffer b = ByteBuffer.allocate(28).putInt(0x12345678).flip().limit(28);
        RequestDecoder decoder = new RequestDecoder();
        assertEquals(RequestDecoder.Result.BAD_MAGIC, decoder.decode(b, new Recorder(false)));
        assertEquals(0, b.position());
    }
}
