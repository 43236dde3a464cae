package io.iotarget.frontend.nvmetcp.pdu;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PduDecoderTest {
    /** Records what the decoder delivers, as text, and captures data into fresh buffers. */
    private static final class Recorder implements PduHandler {
        final List<String> events = new ArrayList<>();
        final boolean dropData;
        ByteBuffer data;

        Recorder(boolean dropData) {
            this.dropData = dropData;
        }

        @Override
        public ByteBuffer onHeader(ByteBuffer header, int dataLength) {
            events.add("header type=" + header.get(Pdu.TYPE) + " hlen=" + header.remaining() + " data=" + dataLength
                       + " b8=" + header.get(8));
            data = dropData ? null : ByteBuffer.allocate(dataLength);
            return data;
        }

        @Override
        public void onPdu(ByteBuffer header, boolean dataDigestOk) {
            String bytes = data == null ? "-" : Arrays.toString(Arrays.copyOf(data.array(), Math.min(8, data.capacity())))
                                                + "/" + data.position();
            events.add("pdu type=" + header.get(Pdu.TYPE) + " digestOk=" + dataDigestOk + " data=" + bytes);
        }

        @Override
        public void onFatal(int fes, int fei) {
            events.add("fatal fes=" + fes + " fei=" + fei);
        }
    }

    private static byte[] sqe(int opcode) {
        byte[] sqe = new byte[64];
        sqe[0] = (byte) opcode;
        sqe[2] = 7;                  // command id
        for (int i = 4; i < 64; i++) sqe[i] = (byte) i;
        return sqe;
    }

    private static byte[] data(int n) {
        byte[] d = new byte[n];
        for (int i = 0; i < n; i++) d[i] = (byte) (i * 31 + 1);
        return d;
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (byte[] p : parts) out.writeBytes(p);
        return out.toByteArray();
    }

    /** The stream the tests feed: a capsule with in-capsule data, one without, and two H2CData PDUs. */
    private static byte[] stream(boolean hd, boolean dd) {
        return concat(
                HostPdus.capsule(sqe(0x01), data(40), hd, dd),
                HostPdus.capsule(sqe(0x02), null, hd, dd),
                HostPdus.h2cData(7, 3, 0, data(17), false, hd, dd),
                HostPdus.h2cData(7, 3, 17, data(5), true, hd, dd));
    }

    private static List<String> decodeWhole(byte[] stream, boolean hd, boolean dd) {
        Recorder r = new Recorder(false);
        PduDecoder d = new PduDecoder(r);
        d.digests(hd, dd);
        d.decode(ByteBuffer.wrap(stream));
        return r.events;
    }

    @Test
    void shouldDeliverTheSamePdusWhereverTheStreamIsSplit() {
        for (boolean hd : new boolean[]{false, true}) {
            for (boolean dd : new boolean[]{false, true}) {
                byte[] stream = stream(hd, dd);
                List<String> expected = decodeWhole(stream, hd, dd);
                assertEquals(8, expected.size(), "4 headers and 4 PDUs: " + expected);
                for (int split = 1; split < stream.length; split++) {
                    Recorder r = new Recorder(false);
                    PduDecoder d = new PduDecoder(r);
                    d.digests(hd, dd);
                    d.decode(ByteBuffer.wrap(stream, 0, split));
                    d.decode(ByteBuffer.wrap(stream, split, stream.length - split));
                    assertEquals(expected, r.events, "hd=" + hd + " dd=" + dd + " split at " + split);
                }
            }
        }
    }

    @Test
    void shouldDeliverTheSamePdusFedOneByteAtATime() {
        byte[] stream = stream(true, true);
        Recorder r = new Recorder(false);
        PduDecoder d = new PduDecoder(r);
        d.digests(true, true);
        for (int i = 0; i < stream.length; i++) d.decode(ByteBuffer.wrap(stream, i, 1));
        assertEquals(decodeWhole(stream, true, true), r.events);
        assertTrue(r.events.getLast().startsWith("pdu type=6 digestOk=true"));
    }

    @Test
    void shouldCopyInCapsuleDataIntoTheHandlersBuffer() {
        Recorder r = new Recorder(false);
        PduDecoder d = new PduDecoder(r);
        d.decode(ByteBuffer.wrap(HostPdus.capsule(sqe(0x01), data(40), false, false)));
        assertEquals("header type=4 hlen=72 data=40 b8=1", r.events.get(0));
        assertEquals(ByteBuffer.wrap(data(40)), r.data.flip());
    }

    @Test
    void shouldConsumeDroppedDataAndStayInStep() {
        byte[] stream = stream(true, true);
        Recorder r = new Recorder(true);
        PduDecoder d = new PduDecoder(r);
        d.digests(true, true);
        d.decode(ByteBuffer.wrap(stream));
        assertEquals(8, r.events.size());
        assertTrue(r.events.stream().filter(e -> e.startsWith("pdu")).allMatch(e -> e.contains("digestOk=true data=-")));
    }

    @Test
    void shouldReportADataDigestMismatchWithoutLosingStep() {
        byte[] first = HostPdus.h2cData(7, 3, 0, data(17), false, false, true);
        first[first.length - 1] ^= 1;                         // corrupt the data digest
        byte[] stream = concat(first, HostPdus.h2cData(7, 3, 17, data(5), true, false, true));
        Recorder r = new Recorder(false);
        PduDecoder d = new PduDecoder(r);
        d.digests(false, true);
        d.decode(ByteBuffer.wrap(stream));
        assertEquals(4, r.events.size());
        assertTrue(r.events.get(1).contains("digestOk=false"), r.events.get(1));
        assertTrue(r.events.get(3).contains("digestOk=true"), r.events.get(3));
    }

    @Test
    void shouldFailOnAHeaderDigestMismatch() {
        byte[] pdu = HostPdus.capsule(sqe(0x02), null, true, false);
        pdu[Pdu.CAPSULE_CMD_HLEN] ^= 1;
        assertFatal(pdu, true, false, Pdu.FES_HEADER_DIGEST_ERROR, 0);
    }

    @Test
    void shouldFailWhenTheHeaderDigestFlagDisagreesWithTheNegotiation() {
        assertFatal(HostPdus.capsule(sqe(0x02), null, false, false), true, false, Pdu.FES_INVALID_HEADER_FIELD, Pdu.FLAGS);
        assertFatal(HostPdus.capsule(sqe(0x02), null, true, false), false, false, Pdu.FES_INVALID_HEADER_FIELD, Pdu.FLAGS);
    }

    @Test
    void shouldFailWhenTheDataDigestFlagDisagreesWithTheNegotiation() {
        assertFatal(HostPdus.capsule(sqe(0x01), data(8), false, false), false, true, Pdu.FES_INVALID_HEADER_FIELD, Pdu.FLAGS);
    }

    @Test
    void shouldFailOnTypesAHostNeverSendsAndOnWrongHeaderLengths() {
        byte[] pdu = HostPdus.capsule(sqe(0x02), null, false, false);
        pdu[Pdu.TYPE] = Pdu.TYPE_C2H_DATA;
        assertFatal(pdu, false, false, Pdu.FES_INVALID_HEADER_FIELD, Pdu.TYPE);
        pdu = HostPdus.capsule(sqe(0x02), null, false, false);
        pdu[Pdu.HLEN] = 24;
        assertFatal(pdu, false, false, Pdu.FES_INVALID_HEADER_FIELD, Pdu.HLEN);
    }

    @Test
    void shouldFailWhenPlenOrPdoCannotHold() {
        byte[] pdu = HostPdus.capsule(sqe(0x02), null, false, false);
        pdu[Pdu.PLEN] = 10;
        assertFatal(pdu, false, false, Pdu.FES_INVALID_HEADER_FIELD, Pdu.PLEN);
        pdu = HostPdus.capsule(sqe(0x01), data(8), false, false);
        pdu[Pdu.PDO] = 20;                                    // data would start inside the header
        assertFatal(pdu, false, false, Pdu.FES_INVALID_HEADER_FIELD, Pdu.PDO);
        byte[] ic = HostPdus.icRequest(0);
        ic[Pdu.PLEN] = (byte) 129;
        assertFatal(ic, false, false, Pdu.FES_INVALID_HEADER_FIELD, Pdu.PLEN);
    }

    @Test
    void shouldSkipPaddingBeforeTheData() {
        byte[] plain = HostPdus.capsule(sqe(0x01), data(16), false, false);
        int pad = 8;
        byte[] padded = new byte[plain.length + pad];
        System.arraycopy(plain, 0, padded, 0, Pdu.CAPSULE_CMD_HLEN);
        System.arraycopy(plain, Pdu.CAPSULE_CMD_HLEN, padded, Pdu.CAPSULE_CMD_HLEN + pad, 16);
        padded[Pdu.PDO] = (byte) (Pdu.CAPSULE_CMD_HLEN + pad);
        ByteBuffer.wrap(padded).order(java.nio.ByteOrder.LITTLE_ENDIAN).putInt(Pdu.PLEN, padded.length);
        for (int split = 1; split < padded.length; split++) {
            Recorder r = new Recorder(false);
            PduDecoder d = new PduDecoder(r);
            d.decode(ByteBuffer.wrap(padded, 0, split));
            d.decode(ByteBuffer.wrap(padded, split, padded.length - split));
            assertEquals(ByteBuffer.wrap(data(16)), r.data.flip(), "split " + split);
        }
    }

    @Test
    void shouldIgnoreEverythingAfterAFatalError() {
        byte[] bad = HostPdus.capsule(sqe(0x02), null, false, false);
        bad[Pdu.HLEN] = 1;
        Recorder r = new Recorder(false);
        PduDecoder d = new PduDecoder(r);
        d.decode(ByteBuffer.wrap(concat(bad, HostPdus.capsule(sqe(0x02), null, false, false))));
        assertEquals(List.of("fatal fes=1 fei=2"), r.events);
        assertTrue(d.halted());
        d.decode(ByteBuffer.wrap(HostPdus.capsule(sqe(0x02), null, false, false)));
        assertEquals(1, r.events.size());
    }

    @Test
    void shouldAcceptAnIcRequestAtAnySplit() {
        byte[] ic = HostPdus.icRequest(Pdu.IC_DIGEST_HEADER | Pdu.IC_DIGEST_DATA);
        for (int split = 1; split < ic.length; split++) {
            Recorder r = new Recorder(false);
            PduDecoder d = new PduDecoder(r);
            d.decode(ByteBuffer.wrap(ic, 0, split));
            assertFalse(r.events.stream().anyMatch(e -> e.startsWith("pdu")), "not complete before the last byte");
            d.decode(ByteBuffer.wrap(ic, split, ic.length - split));
            assertEquals(List.of("header type=0 hlen=128 data=0 b8=0", "pdu type=0 digestOk=true data=[]/0"), r.events);
        }
    }

    private static void assertFatal(byte[] pdu, boolean hd, boolean dd, int fes, int fei) {
        Recorder r = new Recorder(false);
        PduDecoder d = new PduDecoder(r);
        d.digests(hd, dd);
        d.decode(ByteBuffer.wrap(pdu));
        assertEquals(List.of("fatal fes=" + fes + " fei=" + fei), r.events);
    }
}
