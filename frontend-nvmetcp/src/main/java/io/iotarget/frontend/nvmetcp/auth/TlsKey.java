package io.iotarget.frontend.nvmetcp.auth;

import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.util.Arrays;
import java.util.Base64;
import java.util.zip.CRC32;

/**
 * A configured NVMe/TCP TLS pre-shared key in the PSK interchange format that nvme-cli's
 * {@code gen-tls-key} prints and {@code check-tls-key} validates, and the keys the NVMe/TCP
 * transport specification derives from it for one host and subsystem:
 * <pre>
 *   NVMeTLSkey-1:<hh>:<base64 of key || CRC-32(key) little-endian>:
 *        hh = 01 HMAC-SHA-256 (32-byte key), 02 HMAC-SHA-384 (48-byte key), 00 none (hash by length)
 *   retained PSK = HKDF-Expand-Label(HKDF-Extract(0, key), "HostNQN", hostNQN, L)   (hh 00: the key)
 *   digest       = base64(HMAC(retained, hostNQN " " subNQN " NVMe-over-Fabrics"))
 *   identity     = "NVMe0R<hh> hostNQN subNQN"  or  "NVMe1R<hh> hostNQN subNQN digest"
 *   TLS PSK      = HKDF-Expand-Label(HKDF-Extract(0, retained), "nvme-tls-psk", context, L)
 *        context = the identity (version 0), "<hh> digest" (version 1)
 * </pre>
 * Expand-Label is TLS 1.3's (RFC 8446 §7.1: "tls13 " before the label, lengths before label and
 * context); the hash is the key's, L its length. The {@code hh} in an identity names the hash:
 * 01 SHA-256, 02 SHA-384, also for an hh 00 key. Immutable; {@link #toString} never shows the key.
 */
public final class TlsKey {
    private static final String PREFIX = "NVMeTLSkey-1:";
    private static final String FORM = "NVMeTLSkey-1:<01|02>:<base64 of the key and its CRC-32>:, as nvme gen-tls-key prints";
    private static final int CRC_BYTES = 4;

    private final String text;
    private final boolean sha384;
    /** Whether the key is the retained PSK as it is (hh 00). */
    private final boolean retained;
    private final byte[] key;

    private TlsKey(String text, boolean sha384, boolean retained, byte[] key) {
        this.text = text;
        this.sha384 = sha384;
        this.retained = retained;
        this.key = key;
    }

    /**
     * Parses and checks a key (surrounding white space ignored), as libnvme's import does: version
     * 1, hh 00..02, a 32- or 48-byte key that fits hh, the CRC.
     *
     * @throws IllegalArgumentException saying what is wrong, never quoting the key
     */
    public static TlsKey parse(String value) {
        String text = value.strip();
        if (!text.startsWith(PREFIX) || text.length() < PREFIX.length() + 4 || text.charAt(PREFIX.length() + 2) != ':' || !text.endsWith(":")) {
            throw new IllegalArgumentException("not an NVMe TLS PSK (expected: " + FORM + ")");
        }
        String hh = text.substring(PREFIX.length(), PREFIX.length() + 2);
        byte[] decoded;
        try {
            decoded = Base64.getDecoder().decode(text.substring(PREFIX.length() + 3, text.length() - 1));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the key is not base64 (expected: " + FORM + ")");
        }
        int length = decoded.length - CRC_BYTES;
        if (length != 32 && length != 48) throw new IllegalArgumentException("a key of " + Math.max(0, length) + " bytes (expected: 32 or 48)");
        boolean sha384 = switch (hh) {
            case "00" -> length == 48;
            case "01" -> checkLength(length, 32, hh);
            case "02" -> checkLength(length, 48, hh);
            default -> throw new IllegalArgumentException("hash '" + hh + "' is not 01 (SHA-256), 02 (SHA-384) or 00 (none)");
        };
        byte[] key = Arrays.copyOf(decoded, length);
        CRC32 crc = new CRC32();
        crc.update(key);
        if ((int) crc.getValue() != ByteBuffer.wrap(decoded, length, CRC_BYTES).order(ByteOrder.LITTLE_ENDIAN).getInt()) {
            throw new IllegalArgumentException("the key's CRC-32 does not match (a mistyped key?)");
        }
        return new TlsKey(text, sha384, hh.equals("00"), key);
    }

    private static boolean checkLength(int length, int expected, String hh) {
        if (length != expected) throw new IllegalArgumentException("hash " + hh + " takes a " + expected + "-byte key, not " + length);
        return expected == 48;
    }

    /** The text as configured (what the attribute reads back). */
    public String text() {
        return text;
    }

    /** Whether the key's hash is SHA-384 (else SHA-256): the TLS suite is then TLS_AES_256_GCM_SHA384. */
    public boolean sha384() {
        return sha384;
    }

    /** The identity's hh: 01 SHA-256, 02 SHA-384. */
    private String hh() {
        return sha384 ? "02" : "01";
    }

    /** The retained PSK for {@code hostNqn}. */
    byte[] retainedKey(String hostNqn) {
        return retained ? key.clone() : expandLabel(extract(key), "HostNQN", bytes(hostNqn));
    }

    /** The PSK identity of {@code version} (0 or 1) for this key between {@code hostNqn} and {@code subNqn}. */
    public String identity(int version, String hostNqn, String subNqn) {
        String base = "NVMe" + version + "R" + hh() + " " + hostNqn + " " + subNqn;
        return version == 0 ? base : base + " " + digest(retainedKey(hostNqn), hostNqn, subNqn);
    }

    /** The TLS PSK for {@code identity}, which {@link #identity} made. */
    public byte[] tlsPsk(String identity, String hostNqn) {
        String context = identity.startsWith("NVMe0") ? identity : hh() + " " + identity.substring(identity.lastIndexOf(' ') + 1);
        return expandLabel(extract(retainedKey(hostNqn)), "nvme-tls-psk", bytes(context));
    }

    private String digest(byte[] retainedKey, String hostNqn, String subNqn) {
        return Base64.getEncoder().encodeToString(hmac(retainedKey, bytes(hostNqn + " " + subNqn + " NVMe-over-Fabrics")));
    }

    private byte[] extract(byte[] ikm) {
        return hmac(new byte[key.length], ikm);
    }

    /** HKDF-Expand-Label(prk, label, context, L) with L = the key length, at most one hash block. */
    private byte[] expandLabel(byte[] prk, String label, byte[] context) {
        byte[] fullLabel = bytes("tls13 " + label);
        if (context.length > 255) throw new IllegalArgumentException("an HKDF context of " + context.length + " bytes (at most 255)");
        ByteArrayOutputStream info = new ByteArrayOutputStream();
        info.write(key.length >> 8);
        info.write(key.length);
        info.write(fullLabel.length);
        info.writeBytes(fullLabel);
        info.write(context.length);
        info.writeBytes(context);
        info.write(1);                                      // HKDF-Expand's block counter: L fits one block
        return Arrays.copyOf(hmac(prk, info.toByteArray()), key.length);
    }

    private byte[] hmac(byte[] secret, byte[] message) {
        String algorithm = sha384 ? "HmacSHA384" : "HmacSHA256";
        try {
            Mac mac = Mac.getInstance(algorithm);
            mac.init(new SecretKeySpec(secret, algorithm));
            return mac.doFinal(message);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(algorithm + " is part of every JDK", e);
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public String toString() {
        return "NVMe TLS PSK (" + (sha384 ? "SHA-384" : "SHA-256") + ")";
    }
}
