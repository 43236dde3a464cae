package io.iotarget.frontend.nvmetcp.auth;

import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Base64;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.zip.CRC32;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The interchange format and derivations against libnvme's own vectors (its test/psk.c), and
 * the format against nvme-cli itself (Debian 12's 2.3: its check-tls-key validates but does not
 * print identities, so the derivations are checked by the vectors alone).
 */
class TlsKeyTest {
    private static final String KEY_32 = "5512DBB6737D0106F65975B773DFB011FFC344BCF442E2DD6D8BC4870B5D5B03";
    private static final String KEY_48 = KEY_32 + "FFC344BCF442E2DD6D8BC4870B5D5B03";
    private static final String HOST = "nqn.psk-test-host";
    private static final String SUBSYSTEM = "nqn.psk-test-subsys";

    static String interchange(String hh, String hexKey) {
        byte[] key = HexFormat.of().parseHex(hexKey);
        CRC32 crc = new CRC32();
        crc.update(key);
        ByteBuffer b = ByteBuffer.allocate(key.length + 4).order(ByteOrder.LITTLE_ENDIAN).put(key).putInt((int) crc.getValue());
        return "NVMeTLSkey-1:" + hh + ":" + Base64.getEncoder().encodeToString(b.array()) + ":";
    }

    @Test
    void interchangeFormatIsLibnvmes() {
        assertEquals("NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:", interchange("01", KEY_32));
        TlsKey key = TlsKey.parse(" NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:\n");
        assertFalse(key.sha384());
        assertTrue(TlsKey.parse(interchange("02", KEY_48)).sha384());
    }

    @Test
    void identityDigestsAreLibnvmes() {
        assertEquals("NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys iSbjiStwJ/1TrTvDlt2fjFmzvsytOJelidNnA+X5lEU=",
                TlsKey.parse(interchange("01", KEY_32)).identity(1, HOST, SUBSYSTEM));
        assertEquals("NVMe1R02 nqn.psk-test-host nqn.psk-test-subsys QhW2+Rp6RzHlNtCslyRxMnwJ11tKKhz8JCAQpQ+XUD8f9td1VeH5h53yz2wKJG1a",
                TlsKey.parse(interchange("02", KEY_48)).identity(1, HOST, SUBSYSTEM));
        assertEquals("NVMe0R01 nqn.psk-test-host nqn.psk-test-subsys", TlsKey.parse(interchange("01", KEY_32)).identity(0, HOST, SUBSYSTEM));
    }

    @Test
    void tlsPsks() {
        TlsKey key = TlsKey.parse(interchange("01", KEY_32));
        assertEquals("05c6503551ad136e6ee32e6eeb3f6d500b69701d84ec71e328f65c7f51566f68",
                HexFormat.of().formatHex(key.tlsPsk(key.identity(0, HOST, SUBSYSTEM), HOST)));
        assertEquals("8fc3c0badfd4c0c66fa3ca33aadd0314f85536cc9bc47338b60f3e6e563786ca",
                HexFormat.of().formatHex(key.tlsPsk(key.identity(1, HOST, SUBSYSTEM), HOST)));
    }

    @Test
    void nvmeCliTakesOurKeysAndWeTakeItsKeys() throws Exception {
        Tools.require("nvme (nvme-cli)", "/usr/sbin/nvme");
        for (int hmac : new int[]{1, 2}) {
            String generated = Tools.ok(30, "nvme", "gen-tls-key", "--hmac=" + hmac).strip();
            assertEquals(hmac == 2, TlsKey.parse(generated).sha384(), generated.substring(0, 16));
        }
        SecureRandom random = new SecureRandom();
        for (int bytes : new int[]{32, 48}) {
            byte[] key = new byte[bytes];
            random.nextBytes(key);
            String ours = interchange(bytes == 48 ? "02" : "01", HexFormat.of().formatHex(key));
            TlsKey.parse(ours);
            String out = Tools.ok(30, "nvme", "check-tls-key", "--key=" + ours);
            assertTrue(out.contains("Key is valid (HMAC " + (bytes == 48 ? 2 : 1) + ", length " + bytes), out);
            String corrupted = ours.substring(0, 20) + (ours.charAt(20) == 'A' ? 'B' : 'A') + ours.substring(21);
            assertThrows(IllegalArgumentException.class, () -> TlsKey.parse(corrupted));
            assertNotEquals(0, Tools.run(30, List.of("nvme", "check-tls-key", "--key=" + corrupted)).exit(), "nvme-cli refuses it too");
        }
    }

    @Test
    void badKeysAreNamedNeverQuoted() {
        String good = interchange("01", KEY_32);
        String badCrc = good.substring(0, good.length() - 3) + (good.charAt(good.length() - 3) == 'A' ? "B" : "A") + good.substring(good.length() - 2);
        for (String bad : new String[]{"", "DHHC-1:01:abc:", "NVMeTLSkey-1:03:" + good.substring(16), "NVMeTLSkey-1:02:" + good.substring(16),
                "NVMeTLSkey-1:01:!!!!:", badCrc, good.substring(0, good.length() - 1)}) {
            var e = assertThrows(IllegalArgumentException.class, () -> TlsKey.parse(bad), bad);
            assertFalse(e.getMessage().contains(good.substring(16, 40)), e.getMessage());
        }
    }
}
