package io.iotarget.model.tree;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
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
    void shouldSplitPathsOneWay() throws ControlException {
        assertEquals(List.of("a", "b"), TreePath.split("/a//./b/"));
        assertEquals(List.of(), TreePath.split("/"));
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> TreePath.split("a/../b")).errno());
    }
}
