package io.iotarget.model.tree;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KernelParseTest {
    @Test
    void shouldReadBooleansAsKstrtobool() throws ControlException {
        for (String on : List.of("1", "y", "Y", "t", "T", "on", "ON", "oN", "yes", "10", " 1\n")) assertTrue(KernelParse.kstrtobool("enable", on), on);
        for (String off : List.of("0", "n", "N", "f", "F", "off", "OFF", "no", "0x1", "false")) assertFalse(KernelParse.kstrtobool("enable", off), off);
        for (String bad : List.of("", " ", "o", "ox", "2", "-1", "maybe", "+1")) {
            ControlException e = assertThrows(ControlException.class, () -> KernelParse.kstrtobool("enable", bad), bad);
            assertEquals(Errno.EINVAL, e.errno());
            assertEquals("enable=" + bad + " (expected: " + KernelParse.BOOLEAN + ")", e.detail());
        }
    }

    @Test
    void shouldReadNumbersAsKstrtou64WithBaseZero() throws ControlException {
        assertEquals(8, KernelParse.kstrtou64("n", "010"));
        assertEquals(16, KernelParse.kstrtou64("n", "0x10"));
        assertEquals(5, KernelParse.kstrtou64("n", "+5"));
        assertEquals(0, KernelParse.kstrtou64("n", "0"));
        assertEquals(-1L, KernelParse.kstrtou64("n", "18446744073709551615"));
        assertEquals(7, KernelParse.kstrtou64("n", " 7\n"));
        for (String bad : List.of("", "-1", "+-1", "++1", "08", "1x", "0x", "1 2")) {
            ControlException e = assertThrows(ControlException.class, () -> KernelParse.kstrtou64("n", bad), bad);
            assertEquals(Errno.EINVAL, e.errno(), bad);
            assertEquals("n=" + bad + " (expected: an unsigned number (0x.. hex, 0.. octal))", e.detail());
        }
        assertEquals(Errno.ERANGE, assertThrows(ControlException.class, () -> KernelParse.kstrtou64("n", "18446744073709551616")).errno());
    }

    @Test
    void shouldTakeTheKernelsWhitespaceAndNoOther() {
        for (char c : " \t\n\u000b\f\r".toCharArray()) assertTrue(KernelParse.isSpace(c), Integer.toString(c));
        for (char c : "\u0000\u001c\u00a0\u2003x".toCharArray()) assertFalse(KernelParse.isSpace(c), Integer.toString(c));
        assertEquals("a b", KernelParse.strip("\u000b\f a b \r\n"));
        assertEquals("\u00a0a", KernelParse.strip("\u00a0a "), "a no-break space is not the kernel's whitespace");
        assertEquals("", KernelParse.strip(" \t\n"));
        assertEquals(3, KernelParse.skipSpaces("  \ta", 0));
        assertEquals(3, KernelParse.skipSpaces("a  ", 1), "stops at the end");
    }

    @Test
    void shouldSplitTokensAsSscanfAndStrsep() {
        assertEquals(List.of("259:0", "rbps=1", "wbps=max"), KernelParse.tokens("\t259:0  rbps=1\nwbps=max \n"));
        assertEquals(List.of(), KernelParse.tokens(" \n"));
        assertEquals(List.of("a", "b=1", "c"), KernelParse.tokens("a \t\nb=1  c", " \t\n"), "empty tokens dropped");
        assertEquals(List.of("a\u000bb"), KernelParse.tokens("a\u000bb", " \t\n"), "only the separators given");
        assertEquals(List.of(), KernelParse.tokens("", " "));
    }

    @Test
    void shouldScanNumbersWhereTheyStart() {
        assertEquals(new KernelParse.Scanned(42, 4, false), KernelParse.scanDecimal("  42k", 0), "whitespace skipped, stops at the first non-digit");
        assertNull(KernelParse.scanDecimal("  -1", 0), "no sign");
        assertNull(KernelParse.scanDecimal("x", 0));
        assertEquals(new KernelParse.Scanned(0x1f, 4, false), KernelParse.scanBase0("0x1fg", 0));
        assertEquals(new KernelParse.Scanned(0, 1, false), KernelParse.scanBase0("0xg", 0), "0x without a hex digit is the octal 0 and an x");
        assertEquals(new KernelParse.Scanned(7, 2, false), KernelParse.scanBase0("078", 0), "octal stops at 8");
        assertEquals(new KernelParse.Scanned(-1L, 20, false), KernelParse.scanDecimal("18446744073709551615", 0));
        KernelParse.Scanned wrapped = KernelParse.scanDecimal("18446744073709551616", 0);
        assertTrue(wrapped.overflow());
        assertEquals(0, wrapped.value(), "kept modulo 2^64, as the kernel would");
        assertNull(KernelParse.scanBase0(" 1", 0), "base 0 skips no whitespace");
    }

    @Test
    void shouldTakeExactlyOneNumberInParseU64AndParseInt() throws ControlException {
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> KernelParse.parseU64("n", " 7")).errno(), "not stripped");
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> KernelParse.parseU64("n", "+7")).errno(), "no sign");
        assertEquals(0xffff_ffffL, KernelParse.parseU64("n", "0xFFFFFFFF"));
        assertEquals(Integer.MAX_VALUE, KernelParse.parseInt("n", "2147483647"));
        assertEquals(Integer.MIN_VALUE, KernelParse.parseInt("n", "-2147483648"));
        assertEquals(-16, KernelParse.parseInt("n", "-0x10"));
        assertEquals(8, KernelParse.parseInt("n", "+010"));
        for (String out : List.of("2147483648", "-2147483649", "18446744073709551615")) {
            ControlException e = assertThrows(ControlException.class, () -> KernelParse.parseInt("n", out), out);
            assertEquals(Errno.ERANGE, e.errno(), out);
            assertEquals("n=" + out + " (expected: an int)", e.detail());
        }
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> KernelParse.parseInt("n", "--1")).errno());
    }

    @Test
    void shouldReadDecimalsAsCgroupParseFloatWithoutItsAccidents() throws ControlException {
        assertEquals(9550, KernelParse.parseDecimal("p", "95.5", 2));
        assertEquals(9501, KernelParse.parseDecimal("p", "95.005", 2), "halves round up (DIV_ROUND_CLOSEST)");
        assertEquals(9500, KernelParse.parseDecimal("p", "95.0049", 2));
        assertEquals(100, KernelParse.parseDecimal("p", "1.", 2), "a dot without digits");
        assertEquals(-50, KernelParse.parseDecimal("p", "-0.5", 2), "the sign is the whole value's (the kernel reads +0.5)");
        assertEquals(-150, KernelParse.parseDecimal("p", "-1.5", 2), "(the kernel reads -0.5)");
        assertEquals(1, KernelParse.parseDecimal("p", "0.00500000000", 2), "eleven places: decimals + 9 are taken");
        assertEquals(7, KernelParse.parseDecimal("p", "7", 0));
        for (String bad : List.of("", ".5", "-", "1.5x", "1.2.3", "+1", "0.000000000001", "92233720368547758.08", "99999999999999999999")) {
            ControlException e = assertThrows(ControlException.class, () -> KernelParse.parseDecimal("p", bad, 2), bad);
            assertEquals(Errno.EINVAL, e.errno(), bad);
            assertTrue(e.detail().startsWith("p=" + bad + " (expected: a decimal number such as 95.5"), e.detail());
        }
    }
}
