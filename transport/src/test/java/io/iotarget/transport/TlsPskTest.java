package io.iotarget.transport;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Reading a psktool file: what is refused, with its line. */
class TlsPskTest {
    private static final String KEY_16 = "000102030405060708090a0b0c0d0e0f";

    @TempDir
    Path dir;

    @Test
    void shouldRefuseAKeyShorterThan128BitsNamingItsLine() throws Exception {
        for (String shortKey : new String[]{"ab", KEY_16.substring(2)}) {
            Path file = Files.writeString(dir.resolve("keys.psk"), "# made by hand\nalice:" + KEY_16 + "\n\nbob:" + shortKey + "\n");
            var e = assertThrows(Pem.PemException.class, () -> TlsPsk.read(file), shortKey);
            int bytes = shortKey.length() / 2;
            assertEquals("line 4: the key of bob is " + bytes + " byte(s), " + 8 * bytes + " bits (expected: at least 16 bytes, 128 bits;"
                         + " psktool makes 32)", e.problem());
            assertEquals(file, e.file());
        }
    }

    @Test
    void shouldTakeA128BitKey() throws Exception {
        Path file = Files.writeString(dir.resolve("keys.psk"), "alice:" + KEY_16 + "\n");
        assertArrayEquals(java.util.HexFormat.of().parseHex(KEY_16), TlsPsk.read(file).find("alice").key());
    }
}
