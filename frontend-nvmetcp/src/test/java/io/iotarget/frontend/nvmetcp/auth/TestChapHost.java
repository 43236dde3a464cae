package io.iotarget.frontend.nvmetcp.auth;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.Base64;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * The host's side of DH-HMAC-CHAP for tests, written from the spec's rules (as Linux's host
 * driver applies them) with JDK primitives only: secret decoding, the key transform, HMACs
 * and DH by {@code BigInteger.modPow}. Of the production code it uses only the RFC 7919 primes
 * ({@link DhGroup#prime}), which {@code DhGroupTest} checks on their own. Not thread-safe.
 */
public final class TestChapHost {
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final String[] MAC = {null, "HmacSHA256", "HmacSHA384", "HmacSHA512"};
    private static final String[] DIGEST = {null, "SHA-256", "SHA-384", "SHA-512"};

    private final String hostNqn;
    private final String subsystemNqn;
    private final byte[] hostKey;
    private final byte[] controllerKey;
    /** What Negotiate offers; tests change them. */
    public int transactionId = 0x1234;
    public int[] hashes = {1, 2, 3};
    public int[] groups = {0, 1, 2, 3, 4, 5};

    // The exchange in progress.
    public int hashId;
    public int groupId;
    private int s1;
    private byte[] c1;
    private byte[] sessionKey;
    private int s2;
    private byte[] c2;

    /** @param controllerSecret null: unidirectional */
    public TestChapHost(String hostNqn, String subsystemNqn, String hostSecret, String controllerSecret) {
        this.hostNqn = hostNqn;
        this.subsystemNqn = subsystemNqn;
        this.hostKey = transformed(hostSecret, hostNqn);
        this.controllerKey = controllerSecret == null ? null : transformed(controllerSecret, subsystemNqn);
    }

    /** DHHC-1:hh:base64(key || crc): the key, HMAC-hh(key, nqn || "NVMe-over-Fabrics") when hh is not 00. */
    static byte[] transformed(String secret, String nqn) {
        int hh = Integer.parseInt(secret.substring(7, 9));
        String b64 = secret.substring(10, secret.endsWith(":") ? secret.length() - 1 : secret.length());
        byte[] decoded = Base64.getDecoder().decode(b64);
        byte[] key = Arrays.copyOf(decoded, decoded.length - 4);
        return hh == 0 ? key : hmac(hh, key, bytes(nqn), bytes("NVMe-over-Fabrics"));
    }

    public byte[] negotiate() {
        ByteBuffer b = le(72);
        b.put(0, (byte) 0x00).put(1, (byte) 0x00).putShort(4, (short) transactionId);
        b.put(7, (byte) 1).put(8, (byte) 1).put(10, (byte) hashes.length).put(11, (byte) groups.length);
        for (int i = 0; i < hashes.length; i++) b.put(12 + i, (byte) hashes[i]);
        for (int i = 0; i < groups.length; i++) b.put(42 + i, (byte) groups[i]);
        return b.array();
    }

    /** Takes a Challenge, answers with a Reply (asking for the controller's response when it has the controller key). */
    public byte[] reply(byte[] challengeBytes) {
        ByteBuffer c = ByteBuffer.wrap(challengeBytes).order(ByteOrder.LITTLE_ENDIAN);
        check(c.get(0) == 1 && c.get(1) == 1, "a Challenge");
        check((c.getShort(4) & 0xFFFF) == transactionId, "the transaction id");
        int hl = c.get(6) & 0xFF;
        hashId = c.get(8) & 0xFF;
        groupId = c.get(9) & 0xFF;
        int dhvlen = c.getShort(10) & 0xFFFF;
        check(hl == macFor(hashId).getMacLength(), "HL is the hash's length");
        s1 = c.getInt(12);
        c1 = Arrays.copyOfRange(challengeBytes, 16, 16 + hl);
        byte[] hostValue = new byte[0];
        sessionKey = null;
        if (groupId != 0) {
            BigInteger p = DhGroup.byId(groupId).prime();
            int len = (p.bitLength() + 7) / 8;
            check(dhvlen == len, "DHVLEN is the group's size");
            BigInteger x = new BigInteger(256, RANDOM).setBit(255);
            BigInteger gx = new BigInteger(1, Arrays.copyOfRange(challengeBytes, 16 + hl, 16 + hl + dhvlen));
            hostValue = pad(BigInteger.TWO.modPow(x, p), len);
            sessionKey = pad(gx.modPow(x, p), len);
        } else {
            check(dhvlen == 0, "no DH value with the null group");
        }
        byte[] r1 = response(hostKey, c1, s1, "HostHost", hostNqn, subsystemNqn);
        boolean bidirectional = controllerKey != null;
        c2 = new byte[hl];
        s2 = 0;
        if (bidirectional) {
            RANDOM.nextBytes(c2);
            s2 = 0x5EED;
        }
        ByteBuffer r = le(16 + 2 * hl + hostValue.length);
        r.put(0, (byte) 1).put(1, (byte) 2).putShort(4, (short) transactionId).put(6, (byte) hl);
        r.put(8, (byte) (bidirectional ? 1 : 0)).putShort(10, (short) hostValue.length).putInt(12, s2);
        r.put(16, r1).put(16 + hl, c2).put(16 + 2 * hl, hostValue);
        return r.array();
    }

    /** The Reply with its response corrupted, as from a host with the wrong key. */
    public byte[] wrongReply(byte[] challenge) {
        byte[] r = reply(challenge);
        r[16] ^= 1;
        return r;
    }

    /** Checks a Success1: the hash length, and the controller's response when one was asked for. */
    public void checkSuccess1(byte[] success1) {
        ByteBuffer s = ByteBuffer.wrap(success1).order(ByteOrder.LITTLE_ENDIAN);
        check(s.get(0) == 1 && s.get(1) == 3, "a Success1, got type " + s.get(0) + " id " + (s.get(1) & 0xFF));
        check((s.getShort(4) & 0xFFFF) == transactionId, "the transaction id");
        int hl = s.get(6) & 0xFF;
        check(hl == c1.length, "HL");
        if (controllerKey == null) {
            check(s.get(8) == 0, "no response without a challenge");
            return;
        }
        check(s.get(8) == 1, "RVALID");
        byte[] expected = response(controllerKey, c2, s2, "Controller", subsystemNqn, hostNqn);
        check(Arrays.equals(expected, Arrays.copyOfRange(success1, 16, 16 + hl)), "the controller's response");
    }

    public byte[] success2() {
        ByteBuffer b = le(16);
        b.put(0, (byte) 1).put(1, (byte) 4).putShort(4, (short) transactionId);
        return b.array();
    }

    public byte[] failure2(int reason) {
        ByteBuffer b = le(8);
        b.put(0, (byte) 0).put(1, (byte) 0xF0).putShort(4, (short) transactionId).put(6, (byte) 1).put(7, (byte) reason);
        return b.array();
    }

    /** RESCODE_EXP of a Failure1 message, or -1 when {@code message} is not one. */
    public static int failure1Reason(byte[] message) {
        return message[0] == 0 && (message[1] & 0xFF) == 0xF1 && message[6] == 1 ? message[7] & 0xFF : -1;
    }

    private byte[] response(byte[] key, byte[] challenge, int sequence, String label, String nqn1, String nqn2) {
        byte[] ca = challenge;
        if (sessionKey != null) {
            try {
                ca = hmac(hashId, MessageDigest.getInstance(DIGEST[hashId]).digest(sessionKey), challenge);
            } catch (java.security.NoSuchAlgorithmException e) {
                throw new AssertionError(e);
            }
        }
        byte[] numbers = le(7).putInt(0, sequence).putShort(4, (short) transactionId).array();
        return hmac(hashId, key, ca, numbers, bytes(label), bytes(nqn1), new byte[1], bytes(nqn2));
    }

    private static Mac macFor(int hashId) {
        try {
            return Mac.getInstance(MAC[hashId]);
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    static byte[] hmac(int hashId, byte[] key, byte[]... parts) {
        try {
            Mac mac = macFor(hashId);
            mac.init(new SecretKeySpec(key, MAC[hashId]));
            for (byte[] p : parts) mac.update(p);
            return mac.doFinal();
        } catch (java.security.InvalidKeyException e) {
            throw new AssertionError(e);
        }
    }

    private static byte[] pad(BigInteger v, int len) {
        byte[] raw = v.toByteArray();
        byte[] out = new byte[len];
        int n = Math.min(raw.length, len);
        System.arraycopy(raw, raw.length - n, out, len - n, n);
        return out;
    }

    private static ByteBuffer le(int n) {
        return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError("host check failed: " + what);
    }

    /** A fresh secret in nvme-cli's form: {@code hh} 0..3, {@code keyBytes} 32/48/64. */
    public static String newSecret(int hh, int keyBytes) {
        byte[] key = new byte[keyBytes + 4];
        RANDOM.nextBytes(key);
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(key, 0, keyBytes);
        ByteBuffer.wrap(key, keyBytes, 4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) crc.getValue());
        return "DHHC-1:0" + hh + ":" + Base64.getEncoder().encodeToString(key) + ":";
    }
}
