package io.iotarget.transport;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * What the TLS servers read of a client's first record before a TLS implementation sees it: its
 * extensions (RFC 8446 §4.1.2) and the identities of a pre_shared_key offer (§4.2.11). Never
 * throws, whatever the bytes: a record that is not a whole ClientHello has no extensions.
 */
final class ClientHello {
    private static final int HANDSHAKE = 22;
    private static final int CLIENT_HELLO = 1;
    static final int PRE_SHARED_KEY = 41;

    private ClientHello() {}

    /** Where the body of extension {@code type} starts in the whole record at {@code src}'s position, or -1. */
    static int extension(ByteBuffer src, int type) {
        try {
            int p = src.position();
            if ((src.get(p) & 0xff) != HANDSHAKE) return -1;
            int end = p + 5 + u16(src, p + 3);
            int q = p + 5;
            if ((src.get(q) & 0xff) != CLIENT_HELLO) return -1;
            q += 4 + 2 + 32;                                // handshake header, legacy_version, random
            q += 1 + (src.get(q) & 0xff);                   // legacy_session_id
            q += 2 + u16(src, q);                           // cipher_suites
            q += 1 + (src.get(q) & 0xff);                   // legacy_compression_methods
            int extensionsEnd = Math.min(end, q + 2 + u16(src, q));
            for (q += 2; q + 4 <= extensionsEnd; q += 4 + u16(src, q + 2)) {
                if (u16(src, q) == type) return q + 4;
            }
            return -1;
        } catch (IndexOutOfBoundsException truncated) {
            return -1;
        }
    }

    /** The PSK identities offered, as UTF-8 text, in the client's order; none without a pre_shared_key extension. */
    static List<String> pskIdentities(ByteBuffer src) {
        List<String> identities = new ArrayList<>();
        int at = extension(src, PRE_SHARED_KEY);
        if (at < 0) return identities;
        try {
            int end = at + 2 + u16(src, at);
            for (int q = at + 2; q + 2 <= end; ) {
                int length = u16(src, q);
                byte[] identity = new byte[length];
                src.get(q + 2, identity);
                identities.add(new String(identity, StandardCharsets.UTF_8));
                q += 2 + length + 4;                        // identity, obfuscated_ticket_age
            }
        } catch (IndexOutOfBoundsException truncated) {
            // the handshake will fail on it; what was whole is enough to choose by
        }
        return identities;
    }

    static int u16(ByteBuffer b, int at) {
        return (b.get(at) & 0xff) << 8 | (b.get(at + 1) & 0xff);
    }
}
