package io.iotarget.frontend.nvmetcp.auth;

import io.iotarget.frontend.nvmetcp.command.Fabrics;
import org.junit.jupiter.api.Test;

import java.util.Base64;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Secrets in nvme-cli's DHHC-1 form: what is taken, what is refused and why, and the key transform. */
class DhChapSecretTest {
    /** Printed by nvme-cli 2.3's gen-dhchap-key in the guest (--hmac 0, 1, 2, 3). */
    static final String CLI_00 = "DHHC-1:00:MnBoSvHUz4hzN33W+3RcyZpvT1N6wqTqbHCF3voDojtNN4vK:";
    static final String CLI_01 = "DHHC-1:01:FZutw06N2trA/TvbhG4i6jXua32pSJce08/ZmPlk0jMEPvkB:";
    static final String CLI_02 = "DHHC-1:02:rcFcsQu/R/cnMAzhfBuoP3k9DZWmHLU3w7GJsAg2/eb0dQoOJ0FilH0iuJgbhReKzshE1A==:";
    static final String CLI_03 = "DHHC-1:03:H0ems8bcXxnRR6MrNIQFD9cR8CVfmY5g9At8HxToTr2CgxCI9birI5bLGikezP9wYtX6TwGHi7EBUaoDRXOlP7AmDJc=:";
    private static final String NQN = "nqn.2014-08.org.nvmexpress:uuid:host1";

    @Test
    void shouldTakeWhatNvmeCliGenerates() {
        for (String s : new String[]{CLI_00, CLI_01, CLI_02, CLI_03}) {
            DhChapSecret secret = DhChapSecret.parse(s + "\n");
            assertEquals(s, secret.text(), "shown back as written, stripped");
            assertArrayEquals(TestChapHost.transformed(s, NQN), secret.transformed(NQN), s.substring(0, 9));
        }
    }

    @Test
    void shouldUseAnUntransformedKeyAsItIs() {
        byte[] decoded = Base64.getDecoder().decode(CLI_00.substring(10, CLI_00.length() - 1));
        assertArrayEquals(java.util.Arrays.copyOf(decoded, 32), DhChapSecret.parse(CLI_00).transformed("any nqn"));
    }

    @Test
    void shouldTransformWithTheNqnAndTheFabricsLabel() {
        DhChapSecret s = DhChapSecret.parse(CLI_01);
        byte[] key = java.util.Arrays.copyOf(Base64.getDecoder().decode(CLI_01.substring(10, CLI_01.length() - 1)), 32);
        byte[] expected = TestChapHost.hmac(1, key, (NQN + "NVMe-over-Fabrics").getBytes());
        assertArrayEquals(expected, s.transformed(NQN));
        assertFalse(java.util.Arrays.equals(expected, s.transformed(NQN + "x")), "another NQN, another key");
    }

    @Test
    void shouldTakeTheTrailingColonAsOptional() {
        assertEquals(32, DhChapSecret.parse(CLI_00.substring(0, CLI_00.length() - 1)).transformed(NQN).length);
    }

    @Test
    void shouldRefuseWhatIsNotASecretWithoutQuotingIt() {
        String flipped = CLI_01.substring(0, 20) + (CLI_01.charAt(20) == 'A' ? 'B' : 'A') + CLI_01.substring(21);
        String[][] cases = {
                {"secret", "not a DH-HMAC-CHAP secret"},
                {"DHHC-2:00:" + CLI_00.substring(10), "not a DH-HMAC-CHAP secret"},
                {"DHHC-1:0:" + CLI_00.substring(10), "not a DH-HMAC-CHAP secret"},
                {"DHHC-1:04:" + CLI_00.substring(10), "key transform '04'"},
                {"DHHC-1:00:not*base64!:", "not valid base64"},
                {"DHHC-1:00:" + Base64.getEncoder().encodeToString(new byte[20]) + ":", "has 16 bytes"},
                {flipped, "CRC-32 does not match"},
                {"DHHC-1:01:" + CLI_02.substring(10), "has 32 bytes, this one 48"},
                {"DHHC-1:03:" + CLI_00.substring(10), "has 64 bytes, this one 32"}};
        for (String[] c : cases) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> DhChapSecret.parse(c[0]), c[0]);
            assertTrue(e.getMessage().contains(c[1]), c[0] + ": " + e.getMessage());
            String body = c[0].length() > 14 ? c[0].substring(10, 14) : "\u0000";
            assertFalse(e.getMessage().contains(body), "the message quotes the secret: " + e.getMessage());
        }
    }

    @Test
    void shouldNeverShowTheKeyInToString() {
        String text = DhChapSecret.parse(CLI_02).toString();
        assertEquals("DHHC-1:02:(48-byte key):", text);
    }
}
