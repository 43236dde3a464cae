package io.iotarget.frontend.nvmetcp.auth;

import java.math.BigInteger;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import javax.crypto.KeyAgreement;
import javax.crypto.interfaces.DHPublicKey;
import javax.crypto.spec.DHParameterSpec;
import javax.crypto.spec.DHPublicKeySpec;

/**
 * The Diffie-Hellman groups of DH-HMAC-CHAP ({@code NVME_AUTH_DHGROUP_*}): none, or one of the
 * RFC 7919 finite-field groups. The JDK has the DH arithmetic but not these groups (its named
 * groups are TLS internals), so the primes are built here from RFC 7919's own definition,
 * Appendix A:
 * <pre>
 *   p = 2^b - 2^(b-64) + ( floor(2^(b-130) * e) + X ) * 2^64 - 1,   g = 2
 *   b      2048    3072     4096     6144      8192
 *   X    560316 2625351  5736041 15705020  10965728
 * </pre>
 * where e is Euler's number, summed as Σ 1/n! in integers with 64 guard bits (the sum's
 * truncation error stays below 2^11 of those bits). Private exponents are as long as RFC 7919
 * §5.2 asks for each group (225 .. 400 bits), so a key pair costs one short modular
 * exponentiation; the group of p is built once, on first use.
 *
 * <p>Any thread.
 */
public enum DhGroup {
    NULL(0x00, "null", 0, 0, 0),
    FFDHE2048(0x01, "ffdhe2048", 2048, 560316, 225),
    FFDHE3072(0x02, "ffdhe3072", 3072, 2625351, 275),
    FFDHE4096(0x03, "ffdhe4096", 4096, 5736041, 325),
    FFDHE6144(0x04, "ffdhe6144", 6144, 15705020, 375),
    FFDHE8192(0x05, "ffdhe8192", 8192, 10965728, 400);

    /** Guard bits below the binary point while summing e (see the class doc). */
    private static final int E_GUARD_BITS = 64;
    private static final BigInteger GENERATOR = BigInteger.TWO;

    private final int id;
    private final String configName;
    private final int primeBits;
    private final long rfcX;
    private final int exponentBits;
    private volatile DHParameterSpec parameters;

    DhGroup(int id, String configName, int primeBits, long rfcX, int exponentBits) {
        this.id = id;
        this.configName = configName;
        this.primeBits = primeBits;
        this.rfcX = rfcX;
        this.exponentBits = exponentBits;
    }

    /** DH Group ID on the wire (Negotiate's list, Challenge's DHGID). */
    public int id() {
        return id;
    }

    /** As nvmet's configfs shows and takes it: {@code null}, {@code ffdhe2048}, ... */
    public String configName() {
        return configName;
    }

    /** Length of a DH value (public value, session key): the prime's bytes; 0 for no DH. */
    public int valueBytes() {
        return primeBits / 8;
    }

    public static DhGroup byId(int id) {
        for (DhGroup g : values()) if (g.id == id) return g;
        return null;
    }

    public static DhGroup byConfigName(String name) {
        for (DhGroup g : values()) if (g.configName.equals(name)) return g;
        return null;
    }

    /** The prime p. Not for {@link #NULL}. */
    public BigInteger prime() {
        return parameters().getP();
    }

    private DHParameterSpec parameters() {
        if (this == NULL) throw new IllegalStateException("the null DH group has no parameters");
        DHParameterSpec p = parameters;
        if (p == null) {
            p = new DHParameterSpec(rfc7919Prime(primeBits, rfcX), GENERATOR, exponentBits);
            parameters = p;
        }
        return p;
    }

    /** RFC 7919 Appendix A's formula for the prime of {@code bits} bits. */
    static BigInteger rfc7919Prime(int bits, long x) {
        BigInteger scaledE = BigInteger.ZERO;
        BigInteger term = BigInteger.ONE.shiftLeft(bits - 130 + E_GUARD_BITS);     // 2^(b-130) / 0!
        for (int n = 1; term.signum() > 0; n++) {
            scaledE = scaledE.add(term);
            term = term.divide(BigInteger.valueOf(n));
        }
        BigInteger floor = scaledE.shiftRight(E_GUARD_BITS);
        return BigInteger.ONE.shiftLeft(bits)
                .subtract(BigInteger.ONE.shiftLeft(bits - 64))
                .add(floor.add(BigInteger.valueOf(x)).shiftLeft(64))
                .subtract(BigInteger.ONE);
    }

    /** A fresh key pair of this group (~8 ms of CPU for ffdhe8192). Not for {@link #NULL}. */
    public Ephemeral newKey(SecureRandom random) {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("DH");
            generator.initialize(parameters(), random);
            return new Ephemeral(this, generator.generateKeyPair());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("DH key generation for " + configName, e);
        }
    }

    /** One side's key pair for one exchange. Confined to the exchange that made it. */
    public static final class Ephemeral {
        private final DhGroup group;
        private final KeyPair keys;

        private Ephemeral(DhGroup group, KeyPair keys) {
            this.group = group;
            this.keys = keys;
        }

        /** g^x mod p, big-endian, as long as p. */
        public byte[] publicValue() {
            return unsigned(((DHPublicKey) keys.getPublic()).getY(), group.valueBytes());
        }

        /**
         * The session key g^xy mod p (big-endian, as long as p) from the peer's public value,
         * or null when that value is not one: the wrong length, or outside 2..p-2 (which for a
         * safe prime also rules out the small subgroups {1} and {1, p-1}).
         */
        public byte[] sessionKey(byte[] peerValue) {
            if (peerValue.length != group.valueBytes()) return null;
            BigInteger y = new BigInteger(1, peerValue);
            BigInteger p = group.prime();
            if (y.compareTo(BigInteger.TWO) < 0 || y.compareTo(p.subtract(BigInteger.TWO)) > 0) return null;
            try {
                KeyAgreement agreement = KeyAgreement.getInstance("DH");
                agreement.init(keys.getPrivate());
                agreement.doPhase(KeyFactory.getInstance("DH").generatePublic(new DHPublicKeySpec(y, p, GENERATOR)), true);
                return unsigned(new BigInteger(1, agreement.generateSecret()), group.valueBytes());
            } catch (GeneralSecurityException e) {
                return null;
            }
        }
    }

    /** {@code v} as exactly {@code length} big-endian bytes (v < 2^(8·length)). */
    static byte[] unsigned(BigInteger v, int length) {
        byte[] raw = v.toByteArray();
        byte[] out = new byte[length];
        int copy = Math.min(raw.length, length);
        System.arraycopy(raw, raw.length - copy, out, length - copy, copy);
        return out;
    }
}
