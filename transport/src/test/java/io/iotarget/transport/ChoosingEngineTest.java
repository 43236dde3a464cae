package io.iotarget.transport;

import org.junit.jupiter.api.Test;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The first record's verdict: a ClientHello with pre_shared_key, or anything else — never an exception, whatever the bytes. */
class ChoosingEngineTest {
    /** A TLS 1.3 ClientHello from the JDK's client, as one record. */
    private static byte[] jdkClientHello() throws Exception {
        SSLEngine client = SSLContext.getDefault().createSSLEngine("localhost", 443);
        client.setUseClientMode(true);
        client.setEnabledProtocols(new String[]{"TLSv1.3"});
        ByteBuffer out = ByteBuffer.allocate(client.getSession().getPacketBufferSize());
        client.wrap(ByteBuffer.allocate(0), out);
        return Arrays.copyOf(out.array(), out.position());
    }

    /** {@code hello} with an extension of type {@code type} (4 bytes of body) appended, lengths fixed up. */
    private static byte[] withExtension(byte[] hello, int type) {
        byte[] extension = {(byte) (type >> 8), (byte) type, 0, 4, 1, 2, 3, 4};
        byte[] r = Arrays.copyOf(hello, hello.length + extension.length);
        System.arraycopy(extension, 0, r, hello.length, extension.length);
        ByteBuffer b = ByteBuffer.wrap(r);
        b.putShort(3, (short) (b.getShort(3) + extension.length));                       // record length
        int handshakeLength = ((r[6] & 0xff) << 16 | (r[7] & 0xff) << 8 | (r[8] & 0xff)) + extension.length;
        r[6] = (byte) (handshakeLength >> 16);
        r[7] = (byte) (handshakeLength >> 8);
        r[8] = (byte) handshakeLength;
        int q = 5 + 4 + 2 + 32;
        q += 1 + (r[q] & 0xff);
        q += 2 + (b.getShort(q) & 0xffff);
        q += 1 + (r[q] & 0xff);
        b.putShort(q, (short) (b.getShort(q) + extension.length));                       // extensions length
        return r;
    }

    @Test
    void shouldSeeAPreSharedKeyOfferAndNothingElse() throws Exception {
        byte[] hello = jdkClientHello();
        assertFalse(ChoosingEngine.offersPsk(ByteBuffer.wrap(hello)), "a certificate client's hello");
        assertTrue(ChoosingEngine.offersPsk(ByteBuffer.wrap(withExtension(hello, 41))), "with pre_shared_key last");
        assertFalse(ChoosingEngine.offersPsk(ByteBuffer.wrap(withExtension(hello, 42))), "another extension");
    }

    @Test
    void shouldNeverThrowOnTruncatedOrRandomBytes() throws Exception {
        byte[] hello = withExtension(jdkClientHello(), 41);
        for (int n = 0; n < hello.length; n++) ChoosingEngine.offersPsk(ByteBuffer.wrap(Arrays.copyOf(hello, n)));
        Random random = new Random(7);
        for (int i = 0; i < 10_000; i++) {
            byte[] mutated = hello.clone();
            for (int k = 0; k < 4; k++) mutated[random.nextInt(mutated.length)] = (byte) random.nextInt(256);
            ChoosingEngine.offersPsk(ByteBuffer.wrap(mutated));
        }
    }
}
