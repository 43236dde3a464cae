package io.iotarget.frontend.nvmetcp.pdu;

import com.code_intelligence.jazzer.junit.FuzzTest;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Coverage-guided fuzz target for the NVMe/TCP PDU decoder: any byte stream, any digests
 * negotiated. However the stream is cut, the decoder delivers the same headers, data and fatal
 * errors (so it never consumes half a field nor stops while it could go on), it always consumes
 * everything it is given, and after a fatal error it delivers nothing more. A normal test run
 * replays src/test/resources/.../PduDecoderFuzzTestInputs/; {@code scripts/fuzz} fuzzes. The
 * committed seeds there (a digest byte, then PDUs) cover each host PDU type (ICReq, capsules
 * with and without in-capsule data, H2CData within and over the recorder's 64 KiB, H2CTermReq),
 * every digest combination, a whole session, and framing errors (hlen, pdo, type, header
 * digest) with PDUs after them; a bad data digest is reported with its PDU, and decoding goes on.
 */
class PduDecoderFuzzTest {
    /** Records everything; takes data up to 64 KiB into a buffer of its own, drops larger data. */
    private static final class Recorder implements PduHandler {
        final List<String> events = new ArrayList<>();
        ByteBuffer data;

        @Override
        public ByteBuffer onHeader(ByteBuffer header, int dataLength) {
            byte[] bytes = new byte[header.remaining()];
            header.duplicate().get(bytes);
            events.add("header " + HexFormat.of().formatHex(bytes) + " data " + dataLength);
            data = dataLength > 0 && dataLength <= 65536 ? ByteBuffer.allocate(dataLength) : null;
            return data;
        }

        @Override
        public void onPdu(ByteBuffer header, boolean dataDigestOk) {
            events.add("pdu type " + header.get(Pdu.TYPE) + " digest " + dataDigestOk
                       + (data == null ? "" : " " + HexFormat.of().formatHex(data.array())));
            data = null;
        }

        @Override
        public void onFatal(int fes, int fei) {
            events.add("fatal " + fes + " " + fei);
        }
    }

    @FuzzTest
    void decoderDeliversTheSameWhereverTheStreamIsCut(byte[] input) {
        if (input.length < 2) return;
        boolean headerDigest = (input[0] & 1) != 0, dataDigest = (input[0] & 2) != 0;
        byte[] stream = Arrays.copyOfRange(input, 1, input.length);
        Random random = new Random(input[0]);
        List<String> reference = null;
        for (int pass = 0; pass < 3; pass++) {
            Recorder recorder = new Recorder();
            PduDecoder decoder = new PduDecoder(recorder);
            decoder.digests(headerDigest, dataDigest);
            for (int at = 0; at < stream.length; ) {
                int n = switch (pass) {
                    case 0 -> stream.length;
                    case 1 -> 1;
                    default -> 1 + random.nextInt(64);
                };
                n = Math.min(n, stream.length - at);
                ByteBuffer in = ByteBuffer.wrap(stream, at, n);
                decoder.decode(in);
                assertEquals(0, in.remaining(), "the decoder consumes everything it is given");
                at += n;
            }
            if (reference == null) reference = recorder.events;
            else assertEquals(reference, recorder.events);
        }
        for (int i = 0; i < reference.size() - 1; i++) {
            if (reference.get(i).startsWith("fatal")) throw new AssertionError("events after a fatal error: " + reference);
        }
    }
}
