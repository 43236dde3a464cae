package io.iotarget.frontend.nbd;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

class OptionDecoderTest {
    /** Client flags, a GO with data, a STRUCTURED_REPLY without, an oversized option, an ABORT. */
    private static byte[] stream() {
        byte[] go = RawClient.goData("default");
        ByteBuffer b = ByteBuffer.allocate(4 + 16 + go.length + 16 + 16 + OptionDecoder.MAX_OPTION_DATA + 1 + 16);
        b.putInt(3);
        b.putLong(NbdWire.IHAVEOPT).putInt(NbdWire.OPT_GO).putInt(go.length).put(go);
        b.putLong(NbdWire.IHAVEOPT).putInt(NbdWire.OPT_STRUCTURED_REPLY).putInt(0);
        b.putLong(NbdWire.IHAVEOPT).putInt(99).putInt(OptionDecoder.MAX_OPTION_DATA + 1).position(b.position() + OptionDecoder.MAX_OPTION_DATA + 1);
        b.putLong(NbdWire.IHAVEOPT).putInt(NbdWire.OPT_ABORT).putInt(0);
        return b.array();
    }

    private static void check(List<OptionDecoder.Event> events) {
        assertEquals(5, events.size(), events.toString());
        assertEquals(new OptionDecoder.ClientFlags(3), events.get(0));
        OptionDecoder.Option go = assertInstanceOf(OptionDecoder.Option.class, events.get(1));
        assertEquals(NbdWire.OPT_GO, go.code());
        assertArrayEquals(RawClient.goData("default"), go.data());
        OptionDecoder.Option structured = assertInstanceOf(OptionDecoder.Option.class, events.get(2));
        assertEquals(NbdWire.OPT_STRUCTURED_REPLY, structured.code());
        assertEquals(0, structured.data().length);
        assertEquals(new OptionDecoder.TooBig(99, OptionDecoder.MAX_OPTION_DATA + 1), events.get(3));
        assertEquals(NbdWire.OPT_ABORT, assertInstanceOf(OptionDecoder.Option.class, events.get(4)).code());
    }

    private static void feed(OptionDecoder decoder, ByteBuffer pending, byte[] bytes, int from, int to, List<OptionDecoder.Event> out) {
        pending.compact().put(bytes, from, to - from).flip();
        OptionDecoder.Event e;
        while ((e = decoder.decode(pending)) != null) out.add(e);
    }

    @Test
    void shouldDecodeTheSameEventsWhateverTheSplitPoint() {
        byte[] bytes = stream();
        for (int split = 1; split < bytes.length; split += split < 200 ? 1 : 997) {
            OptionDecoder decoder = new OptionDecoder();
            ByteBuffer pending = ByteBuffer.allocate(bytes.length).flip();
            List<OptionDecoder.Event> events = new ArrayList<>();
            feed(decoder, pending, bytes, 0, split, events);
            feed(decoder, pending, bytes, split, bytes.length, events);
            check(events);
            assertEquals(0, pending.remaining(), "nothing left over at split " + split);
        }
    }

    @Test
    void shouldDecodeByteByByte() {
        byte[] bytes = stream();
        OptionDecoder decoder = new OptionDecoder();
        ByteBuffer pending = ByteBuffer.allocate(bytes.length).flip();
        List<OptionDecoder.Event> events = new ArrayList<>();
        for (int i = 0; i < bytes.length; i++) feed(decoder, pending, bytes, i, i + 1, events);
        check(events);
    }

    @Test
    void shouldReportBadMagicWithoutConsumingTheHeader() {
        ByteBuffer b = ByteBuffer.allocate(20).putInt(1).putLong(0x1234).putInt(1).putInt(0).flip();
        OptionDecoder decoder = new OptionDecoder();
        assertEquals(new OptionDecoder.ClientFlags(1), decoder.decode(b));
        assertEquals(new OptionDecoder.BadMagic(0x1234), decoder.decode(b));
    }
}
