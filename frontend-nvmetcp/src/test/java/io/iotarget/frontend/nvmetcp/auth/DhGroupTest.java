package io.iotarget.frontend.nvmetcp.auth;

import org.junit.jupiter.api.Test;

import java.math.BigInteger;
import java.security.SecureRandom;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The RFC 7919 groups built from the RFC's formula, and DH over them. */
class DhGroupTest {
    /** The last 12 bytes of each prime as RFC 7919 Appendix A prints them (all start FFFFFFFF FFFFFFFF ADF85458 A2BB4A9A). */
    private static final String[][] RFC_TAILS = {
            {"ffdhe2048", "61285c97ffffffffffffffff"},
            {"ffdhe3072", "66c62e37ffffffffffffffff"},
            {"ffdhe4096", "5e655f6affffffffffffffff"},
            {"ffdhe6144", "d0e40e65ffffffffffffffff"},
            {"ffdhe8192", "c5c6424cffffffffffffffff"}};

    @Test
    void shouldBuildTheRfc7919PrimesFromTheirDefinition() {
        for (String[] t : RFC_TAILS) {
            DhGroup g = DhGroup.byConfigName(t[0]);
            String hex = g.prime().toString(16);
            assertEquals(g.valueBytes() * 8, g.prime().bitLength(), t[0]);
            assertTrue(hex.startsWith("ffffffffffffffffadf85458a2bb4a9a"), t[0] + " starts as the RFC prints it");
            assertTrue(hex.endsWith(t[1]), t[0] + " ends as the RFC prints it: ..." + hex.substring(hex.length() - 24));
        }
    }

    @Test
    void shouldBeSafePrimes() {
        for (DhGroup g : new DhGroup[]{DhGroup.FFDHE2048, DhGroup.FFDHE3072, DhGroup.FFDHE4096}) {       // the larger ones take seconds
            BigInteger p = g.prime();
            assertTrue(p.isProbablePrime(8) && p.shiftRight(1).isProbablePrime(8), g + ": p and (p-1)/2 prime");
        }
    }

    @Test
    void shouldAgreeOnOneSessionKeyAsLongAsThePrime() {
        SecureRandom random = new SecureRandom();
        for (DhGroup g : new DhGroup[]{DhGroup.FFDHE2048, DhGroup.FFDHE8192}) {
            DhGroup.Ephemeral a = g.newKey(random), b = g.newKey(random);
            assertEquals(g.valueBytes(), a.publicValue().length);
            byte[] ab = a.sessionKey(b.publicValue()), ba = b.sessionKey(a.publicValue());
            assertNotNull(ab);
            assertArrayEquals(ab, ba, g.toString());
            assertEquals(g.valueBytes(), ab.length);
        }
    }

    @Test
    void shouldRefusePeerValuesThatAreNotGroupElements() {
        DhGroup g = DhGroup.FFDHE2048;
        DhGroup.Ephemeral a = g.newKey(new SecureRandom());
        byte[] one = new byte[g.valueBytes()];
        one[one.length - 1] = 1;
        assertNull(a.sessionKey(one), "1");
        assertNull(a.sessionKey(new byte[g.valueBytes()]), "0");
        assertNull(a.sessionKey(DhGroup.unsigned(g.prime().subtract(BigInteger.ONE), g.valueBytes())), "p - 1");
        assertNull(a.sessionKey(DhGroup.unsigned(g.prime(), g.valueBytes())), "p");
        assertNull(a.sessionKey(Arrays.copyOf(a.publicValue(), g.valueBytes() - 1)), "too short");
    }

    @Test
    void shouldNameGroupsAsNvmet() {
        assertEquals(DhGroup.NULL, DhGroup.byConfigName("null"));
        assertEquals(DhGroup.FFDHE6144, DhGroup.byId(4));
        assertNull(DhGroup.byConfigName("ffdhe1024"));
        assertEquals(0, DhGroup.NULL.valueBytes());
    }
}
