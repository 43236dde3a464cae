package io.iotarget.frontend.nvmetcp.auth;

import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.Arrays;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The hash functions of DH-HMAC-CHAP (NVMe Base spec, Authentication; {@code NVME_AUTH_HASH_*}
 * in Linux): the HashID on the wire, the name configfs shows ({@code dhchap_hash}) and the JDK
 * algorithms behind it. Immutable; any thread.
 */
public enum DhChapHash {
    SHA256(0x01, 32, "hmac(sha256)", "HmacSHA256", "SHA-256"),
    SHA384(0x02, 48, "hmac(sha384)", "HmacSHA384", "SHA-384"),
    SHA512(0x03, 64, "hmac(sha512)", "HmacSHA512", "SHA-512");

    private final int id;
    private final int lengthBytes;
    private final String configName;
    private final String macAlgorithm;
    private final String digestAlgorithm;

    DhChapHash(int id, int lengthBytes, String configName, String macAlgorithm, String digestAlgorithm) {
        this.id = id;
        this.lengthBytes = lengthBytes;
        this.configName = configName;
        this.macAlgorithm = macAlgorithm;
        this.digestAlgorithm = digestAlgorithm;
    }

    /** HashID on the wire (Negotiate's list, Challenge's HASHID). */
    public int id() {
        return id;
    }

    /** Digest length: the HL of Challenge, Reply and Success1. */
    public int lengthBytes() {
        return lengthBytes;
    }

    /** As nvmet's configfs shows and takes it: {@code hmac(sha256)}. */
    public String configName() {
        return configName;
    }

    /** The hash of this id, or null. */
    public static DhChapHash byId(int id) {
        for (DhChapHash h : values()) if (h.id == id) return h;
        return null;
    }

    /** The hash of this configfs name, or null. */
    public static DhChapHash byConfigName(String name) {
        for (DhChapHash h : values()) if (h.configName.equals(name)) return h;
        return null;
    }

    /** HMAC over the concatenation of {@code parts}, keyed with {@code key}. */
    public byte[] hmac(byte[] key, byte[]... parts) {
        try {
            Mac mac = Mac.getInstance(macAlgorithm);
            mac.init(new SecretKeySpec(key, macAlgorithm));
            for (byte[] p : parts) mac.update(p);
            return mac.doFinal();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(macAlgorithm + " is part of every JDK", e);
        }
    }

    /** The plain digest. */
    public byte[] digest(byte[] data) {
        try {
            return MessageDigest.getInstance(digestAlgorithm).digest(data);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(digestAlgorithm + " is part of every JDK", e);
        }
    }

    /** Constant-time comparison, for responses. */
    static boolean same(byte[] a, byte[] b) {
        return MessageDigest.isEqual(a, b);
    }

    /** Overwrites key material that is no longer needed. */
    static void wipe(byte[] b) {
        if (b != null) Arrays.fill(b, (byte) 0);
    }
}
