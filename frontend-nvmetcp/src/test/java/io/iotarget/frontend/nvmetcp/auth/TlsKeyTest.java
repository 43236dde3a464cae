package io.iotarget.frontend.nvmetcp.auth;

import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
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
 * print identities). The final TLS PSK — HKDF-Expand-Label from the retained PSK with the
 * digest — is checked twice more by code nobody here wrote: the Linux kernel's vectors
 * (drivers/nvme/common/tests/auth_kunit.c, 2026, for the same derivation after secure channel
 * concatenation), and OpenSSL's own HKDF and TLS 1.3 Expand-Label (its TLS13-KDF) run as
 * {@code openssl kdf} over every step from a configured key.
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

    /**
     * The kernel's KUnit vectors: its PSK (the retained PSK here: an hh 00 key is taken as it is),
     * host "hostnqn", subsystem "subsysnqn"; the digest, then the TLS PSK of context "hh digest".
     */
    @Test
    void tlsPsksAreTheLinuxKernels() {
        TlsKey sha256 = TlsKey.parse(interchange("00", "1733c59fa7f48fcf37f5f26fc4ff0268ad4f78e030f4f3b0bfd1d47e7bb1447a"));
        String identity = sha256.identity(1, "hostnqn", "subsysnqn");
        assertEquals("NVMe1R01 hostnqn subsysnqn OldoKuTfKddMuyCznAZojkWD7P4D9/AtzDzLimtOxqI=", identity);
        assertEquals("3c17da628474a04d2247c4cab47968c915388193f7c071bd9489cc3666cd7cc8", HexFormat.of().formatHex(sha256.tlsPsk(identity, "hostnqn")));
        TlsKey sha384 = TlsKey.parse(interchange("00", "f14b2dd3234c459694d3bc63f8968bd6b37c2c6de849e22e118749001ce4bbe8"
                                                      + "640b9e3a748cb11ce4b1d71d359cce39"));
        identity = sha384.identity(1, "hostnqn", "subsysnqn");
        assertEquals("NVMe1R02 hostnqn subsysnqn cffMWk8TSS7HOQebjgYEIkrPrjWPV4JE5cdPB8WhEvY4JBW5YynKyv66XscN4A9n", identity);
        assertEquals("2774753233537b3fa50eb7d16a8e43457d85f4906c005b2236616c5d80939d0898fff15bb8b77119d2be0aac423e7590",
                HexFormat.of().formatHex(sha384.tlsPsk(identity, "hostnqn")));
    }

    /**
     * Every step from a configured key, computed again by OpenSSL: HKDF-Extract (salt: a hash
     * length of zeros), TLS 1.3's HKDF-Expand-Label (TLS13-KDF with prefix "tls13 ": OpenSSL
     * builds the HkdfLabel) with the retained-PSK label "HostNQN" and the host NQN as context,
     * HMAC for the identity's digest, and Expand-Label "nvme-tls-psk" with the context of each
     * identity version — for random SHA-256 and SHA-384 keys, and an hh 00 key.
     */
    @Test
    void everyStepAgreesWithOpenSsl() throws Exception {
        Tools.require("openssl", "/usr/bin/openssl");
        SecureRandom random = new SecureRandom();
        for (String hh : new String[]{"01", "02", "00"}) {
            byte[] configured = new byte[hh.equals("02") ? 48 : 32];
            random.nextBytes(configured);
            TlsKey key = TlsKey.parse(interchange(hh, HexFormat.of().formatHex(configured)));
            String digest = key.sha384() ? "SHA2-384" : "SHA2-256";
            String idHash = key.sha384() ? "02" : "01";
            byte[] retained = hh.equals("00") ? configured : expandLabel(digest, extract(digest, configured), "HostNQN", HOST, configured.length);
            assertEquals(HexFormat.of().formatHex(retained), HexFormat.of().formatHex(key.retainedKey(HOST)), hh + ": the retained PSK");
            Path message = Files.writeString(Files.createTempFile("tls-key-digest", ".txt"), HOST + " " + SUBSYSTEM + " NVMe-over-Fabrics");
            String identityDigest;
            try {
                identityDigest = Base64.getEncoder().encodeToString(hex(Tools.ok(30, "openssl", "mac", "-digest", digest,
                        "-macopt", "hexkey:" + HexFormat.of().formatHex(retained), "-in", message.toString(), "HMAC")));
            } finally {
                Files.delete(message);
            }
            String identity1 = "NVMe1R" + idHash + " " + HOST + " " + SUBSYSTEM + " " + identityDigest;
            String identity0 = "NVMe0R" + idHash + " " + HOST + " " + SUBSYSTEM;
            assertEquals(identity1, key.identity(1, HOST, SUBSYSTEM), hh);
            assertEquals(identity0, key.identity(0, HOST, SUBSYSTEM), hh);
            byte[] prk = extract(digest, retained);
            assertEquals(HexFormat.of().formatHex(expandLabel(digest, prk, "nvme-tls-psk", idHash + " " + identityDigest, configured.length)),
                         HexFormat.of().formatHex(key.tlsPsk(identity1, HOST)), hh + ": version 1's TLS PSK");
            assertEquals(HexFormat.of().formatHex(expandLabel(digest, prk, "nvme-tls-psk", identity0, configured.length)),
                         HexFormat.of().formatHex(key.tlsPsk(identity0, HOST)), hh + ": version 0's TLS PSK");
        }
    }

    /** OpenSSL's HKDF-Extract(salt = zeros, ikm). */
    private static byte[] extract(String digest, byte[] ikm) throws Exception {
        int hashBytes = digest.equals("SHA2-384") ? 48 : 32;
        return hex(Tools.ok(30, "openssl", "kdf", "-keylen", String.valueOf(hashBytes), "-kdfopt", "digest:" + digest, "-kdfopt", "mode:EXTRACT_ONLY",
                "-kdfopt", "hexkey:" + HexFormat.of().formatHex(ikm), "-kdfopt", "hexsalt:" + "00".repeat(hashBytes), "HKDF"));
    }

    /** OpenSSL's HKDF-Expand-Label(prk, label, context, length) of TLS 1.3. */
    private static byte[] expandLabel(String digest, byte[] prk, String label, String context, int length) throws Exception {
        return hex(Tools.ok(30, "openssl", "kdf", "-keylen", String.valueOf(length), "-kdfopt", "digest:" + digest, "-kdfopt", "mode:EXPAND_ONLY",
                "-kdfopt", "hexkey:" + HexFormat.of().formatHex(prk), "-kdfopt", "prefix:tls13 ", "-kdfopt", "label:" + label,
                "-kdfopt", "data:" + context, "TLS13-KDF"));
    }

    /** The bytes of openssl's hex output ("AB:CD:..." or "ABCD..."). */
    private static byte[] hex(String out) {
        return HexFormat.of().parseHex(out.strip().replace(":", "").toLowerCase(java.util.Locale.ROOT));
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

    /** The spec's lengths only: a well-formed key with a good CRC but of 16, 31, 33 or 64 bytes is refused, whatever its hh. */
    @Test
    void keysOfOtherLengthsThan32Or48AreRefused() {
        for (int bytes : new int[]{1, 16, 31, 33, 64}) {
            for (String hh : new String[]{"00", "01", "02"}) {
                String bad = interchange(hh, "ab".repeat(bytes));
                var e = assertThrows(IllegalArgumentException.class, () -> TlsKey.parse(bad), bad);
                assertEquals("a key of " + bytes + " bytes (expected: 32 or 48)", e.getMessage());
            }
        }
    }
}
