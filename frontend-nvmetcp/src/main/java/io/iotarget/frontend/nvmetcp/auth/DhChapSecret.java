package io.iotarget.frontend.nvmetcp.auth;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.zip.CRC32;

/**
 * A DH-HMAC-CHAP secret in the text form nvme-cli's {@code gen-dhchap-key} prints and Linux
 * takes ({@code dhchap_key}, {@code --dhchap-secret}):
 * <pre>
 *   DHHC-1:<hh>:<base64 of key || CRC-32(key) little-endian>:
 *          hh = 00 no transform, 01 SHA-256, 02 SHA-384, 03 SHA-512;  key = 32, 48 or 64 bytes
 * </pre>
 * The trailing colon is optional, as in the kernel's parser. A transformed key must be as long
 * as its hash (nvme-cli makes no other; Linux would read past a shorter transform). Before use
 * the key is transformed for the NQN it stands for:
 * {@code HMAC-hh(key, NQN || "NVMe-over-Fabrics")}, or used as it is for 00.
 *
 * <p>Immutable; any thread. {@link #toString} never shows the key.
 */
public final class DhChapSecret {
    private static final String PREFIX = "DHHC-1:";
    private static final byte[] TRANSFORM_SUFFIX = "NVMe-over-Fabrics".getBytes(StandardCharsets.US_ASCII);
    private static final int CRC_BYTES = 4;
    private static final String FORM = "DHHC-1:<00..03>:<base64 of the key and its CRC-32>:, as nvme gen-dhchap-key prints";

    private final String text;
    /** null: used as it is (hh = 00). */
    private final DhChapHash transform;
    private final byte[] key;

    private DhChapSecret(String text, DhChapHash transform, byte[] key) {
        this.text = text;
        this.transform = transform;
        this.key = key;
    }

    /**
     * Parses and checks a secret (surrounding white space ignored).
     *
     * @throws IllegalArgumentException saying what is wrong, never quoting the secret
     */
    public static DhChapSecret parse(String value) {
        String text = value.strip();
        if (!text.startsWith(PREFIX) || text.length() < PREFIX.length() + 3 || text.charAt(PREFIX.length() + 2) != ':') {
            throw new IllegalArgumentException("not a DH-HMAC-CHAP secret (expected: " + FORM + ")");
        }
        String hh = text.substring(PREFIX.length(), PREFIX.length() + 2);
        DhChapHash transform = switch (hh) {
            case "00" -> null;
            case "01" -> DhChapHash.SHA256;
            case "02" -> DhChapHash.SHA384;
            case "03" -> DhChapHash.SHA512;
            default -> throw new IllegalArgumentException("key transform '" + hh + "' is not 00 (none), 01 (SHA-256), 02 (SHA-384) or 03 (SHA-512)");
        };
        String encoded = text.substring(PREFIX.length() + 3);
        if (encoded.endsWith(":")) encoded = encoded.substring(0, encoded.length() - 1);
        byte[] decoded;
        try {
            decoded = Base64.getDecoder().decode(encoded);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the key is not valid base64 (expected: " + FORM + ")");
        }
        int keyBytes = decoded.length - CRC_BYTES;
        if (keyBytes != 32 && keyBytes != 48 && keyBytes != 64) {
            throw new IllegalArgumentException("the key has " + Math.max(keyBytes, 0) + " bytes (expected: 32, 48 or 64, and a 4-byte CRC-32)");
        }
        CRC32 crc = new CRC32();
        crc.update(decoded, 0, keyBytes);
        if ((int) crc.getValue() != ByteBuffer.wrap(decoded, keyBytes, CRC_BYTES).order(ByteOrder.LITTLE_ENDIAN).getInt()) {
            throw new IllegalArgumentException("the key's CRC-32 does not match it (a mistyped or truncated secret?)");
        }
        if (transform != null && keyBytes != transform.lengthBytes()) {
            throw new IllegalArgumentException("a key transformed with " + transform.configName() + " (" + hh + ") has "
                    + transform.lengthBytes() + " bytes, this one " + keyBytes);
        }
        byte[] key = new byte[keyBytes];
        System.arraycopy(decoded, 0, key, 0, keyBytes);
        DhChapHash.wipe(decoded);
        return new DhChapSecret(text, transform, key);
    }

    /** The secret as it was written (stripped), which configfs shows back. */
    public String text() {
        return text;
    }

    /** The key as the HMAC key of a response for {@code nqn}: transformed, or a copy of the key for 00. */
    public byte[] transformed(String nqn) {
        if (transform == null) return key.clone();
        return transform.hmac(key, nqn.getBytes(StandardCharsets.UTF_8), TRANSFORM_SUFFIX);
    }

    @Override
    public String toString() {
        return PREFIX + (transform == null ? "00" : "0" + transform.id()) + ":(" + key.length + "-byte key):";
    }
}
