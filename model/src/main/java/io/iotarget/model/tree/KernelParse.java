package io.iotarget.model.tree;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

import java.util.ArrayList;
import java.util.List;

/**
 * The kernel's text parsing, read from Linux 6.1, shared by the cgroup files and every
 * configuration tree: vsscanf's {@code %s} and {@code %u} (decimal, whitespace skipped),
 * strsep, {@code kstrtobool}, {@code kstrtoull} / {@code kstrtoint} with base 0 (so {@code 010}
 * is 8 and {@code 0x10} is 16), match_token's {@code %u} and {@code cgroup_parse_float}; and
 * the one form of a refusal, {@link #invalid}: {@code "what=value (expected: ...)"}.
 *
 * <p>Where the kernel accepts something only by accident — a number that wraps past its type,
 * trailing characters after a number ({@code 10k} read as 10), a fraction too long for its
 * 32-bit divisor — the callers refuse it instead, with the errno the kernel uses for its own
 * refusals there (docs/decisions.md lists each case). Whitespace is the kernel's
 * {@code isspace} on ASCII: space and {@code \t \n \v \f \r}. Any thread; no state.
 */
public final class KernelParse {
    /** u64 max: the kernel's "max" for byte limits. */
    public static final long U64_MAX = -1L;
    public static final long U32_MAX = 0xffff_ffffL;
    /** What {@link #kstrtobool} takes, for refusals. */
    public static final String BOOLEAN = "1, y, t or on; 0, n, f or off";

    private KernelParse() {
    }

    public static boolean isSpace(char c) {
        return c == ' ' || (c >= '\t' && c <= '\r');
    }

    public static int skipSpaces(String s, int i) {
        while (i < s.length() && isSpace(s.charAt(i))) i++;
        return i;
    }

    /** strstrip: the text without leading and trailing whitespace. */
    public static String strip(String s) {
        int end = s.length();
        while (end > 0 && isSpace(s.charAt(end - 1))) end--;
        return s.substring(skipSpaces(s.substring(0, end), 0), end);
    }

    /** Tokens separated by runs of whitespace, as repeated sscanf {@code "%s"} reads them. */
    public static List<String> tokens(String body) {
        List<String> out = new ArrayList<>();
        int i = skipSpaces(body, 0);
        while (i < body.length()) {
            int end = i;
            while (end < body.length() && !isSpace(body.charAt(end))) end++;
            out.add(body.substring(i, end));
            i = skipSpaces(body, end);
        }
        return out;
    }

    /** strsep over {@code separators}, empty tokens dropped (io.cost.qos and io.cost.model use " \t\n"). */
    public static List<String> tokens(String body, String separators) {
        List<String> out = new ArrayList<>();
        int start = 0;
        for (int i = 0; i <= body.length(); i++) {
            if (i == body.length() || separators.indexOf(body.charAt(i)) >= 0) {
                if (i > start) out.add(body.substring(start, i));
                start = i + 1;
            }
        }
        return out;
    }

    /**
     * An unsigned number read from {@code from}.
     *
     * @param value    the number modulo 2^64, as the kernel would keep it
     * @param end      the index after its last digit
     * @param overflow it did not fit 64 bits
     */
    public record Scanned(long value, int end, boolean overflow) {
    }

    /**
     * vsscanf's {@code %u} / {@code %llu}: whitespace skipped, then decimal digits (no sign).
     *
     * @return null when no digit follows
     */
    public static Scanned scanDecimal(String s, int from) {
        return scanDigits(s, skipSpaces(s, from), 10);
    }

    /**
     * The kernel's base-0 number at {@code from} (simple_strtoull and kstrtoull with base 0):
     * {@code 0x} or {@code 0X} and a hex digit start hex, another leading {@code 0} starts octal,
     * anything else is decimal. No whitespace, no sign.
     *
     * @return null when no digit is there
     */
    public static Scanned scanBase0(String s, int from) {
        int base = 10;
        int i = from;
        if (i < s.length() && s.charAt(i) == '0') {
            boolean hex = i + 2 < s.length() && (s.charAt(i + 1) | 0x20) == 'x' && Character.digit(s.charAt(i + 2), 16) >= 0;
            base = hex ? 16 : 8;
            if (hex) i += 2;
        }
        return scanDigits(s, i, base);
    }

    private static Scanned scanDigits(String s, int from, int base) {
        long value = 0;
        boolean overflow = false;
        int i = from;
        for (int d; i < s.length() && s.charAt(i) < 128 && (d = Character.digit(s.charAt(i), base)) >= 0; i++) {
            if (Long.compareUnsigned(value, Long.divideUnsigned(U64_MAX - d, base)) > 0) overflow = true;
            value = value * base + d;
        }
        return i == from ? null : new Scanned(value, i, overflow);
    }

    /**
     * The whole of {@code value} as one base-0 number (match_token's {@code %u} followed by
     * match_u64, or kstrtoull with base 0).
     *
     * @throws ControlException EINVAL when it is not exactly a number, ERANGE when it does not fit 64 bits
     */
    public static long parseU64(String what, String value) throws ControlException {
        return wholeNumber(what, value, value, 0);
    }

    /** {@code text} from {@code from} to its end as one base-0 number; refusals quote {@code value}. */
    private static long wholeNumber(String what, String value, String text, int from) throws ControlException {
        Scanned n = scanBase0(text, from);
        if (n == null || n.end() != text.length()) throw invalid(what, value, "an unsigned number (0x.. hex, 0.. octal)");
        if (n.overflow()) throw new ControlException(Errno.ERANGE, what + "=" + value + " (expected: a number below 2^64)");
        return n.value();
    }

    /**
     * kstrtobool, as a configfs or sysfs attribute applies it to a write: the text stripped, then
     * a first character of {@code 1 y Y t T} is true and {@code 0 n N f F} false, and
     * {@code on}/{@code off} (any case) by their first two; what follows is not looked at, as in
     * the kernel ({@code yes} and {@code 10} are true).
     *
     * @throws ControlException EINVAL for anything else, the empty text included
     */
    public static boolean kstrtobool(String what, String value) throws ControlException {
        String v = strip(value);
        if (v.length() >= 2 && (v.charAt(0) | 0x20) == 'o') {              // on, off
            if ((v.charAt(1) | 0x20) == 'n') return true;
            if ((v.charAt(1) | 0x20) == 'f') return false;
        } else if (!v.isEmpty()) {
            if ("1yYtT".indexOf(v.charAt(0)) >= 0) return true;
            if ("0nNfF".indexOf(v.charAt(0)) >= 0) return false;
        }
        throw invalid(what, value, BOOLEAN);
    }

    /**
     * kstrtou64 with base 0, as an attribute applies it to a write: the text stripped, an
     * optional {@code +}, then exactly one {@link #parseU64} number ({@code 010} is 8,
     * {@code 0x10} is 16). A {@code -} is EINVAL, as in the kernel.
     *
     * @throws ControlException EINVAL when not such a number, ERANGE when it does not fit 64 bits
     */
    public static long kstrtou64(String what, String value) throws ControlException {
        String v = strip(value);
        return wholeNumber(what, value, v, v.startsWith("+") ? 1 : 0);
    }

    /**
     * kstrtoint with base 0: an optional sign, then {@link #parseU64}'s number.
     *
     * @throws ControlException EINVAL when not such a number, ERANGE when outside an int
     */
    public static int parseInt(String what, String value) throws ControlException {
        boolean negative = value.startsWith("-");
        String digits = negative || value.startsWith("+") ? value.substring(1) : value;
        long magnitude = parseU64(what, digits);
        long limit = negative ? -(long) Integer.MIN_VALUE : Integer.MAX_VALUE;
        if (Long.compareUnsigned(magnitude, limit) > 0) {
            throw new ControlException(Errno.ERANGE, what + "=" + value + " (expected: an int)");
        }
        return (int) (negative ? -magnitude : magnitude);
    }

    /**
     * cgroup_parse_float: {@code [-]whole[.fraction]} in units of 10^-{@code decimals};
     * {@code "95.5"} with 2 places is 9550, more places round to the nearest ({@code "95.005"}
     * is 9501). The kernel refuses no leading digit and a negative fraction; iotarget also
     * refuses what the kernel misreads: trailing characters (it ignores them), more than
     * {@code decimals + 9} fraction digits (its 32-bit divisor wraps) and values that overflow;
     * and the sign applies to the whole value (the kernel reads {@code "-0.5"} as +0.5 and
     * {@code "-1.5"} as -0.5).
     *
     * @throws ControlException EINVAL
     */
    public static long parseDecimal(String what, String value, int decimals) throws ControlException {
        String expected = "a decimal number such as 95.5";
        boolean negative = value.startsWith("-");
        int i = negative ? 1 : 0;
        Scanned whole = scanDigits(value, i, 10);
        if (whole == null) throw invalid(what, value, expected);
        i = whole.end();
        long fraction = 0;
        int places = 0;
        if (i < value.length() && value.charAt(i) == '.') {
            Scanned f = scanDigits(value, i + 1, 10);
            if (f != null) {
                places = f.end() - i - 1;
                if (places > decimals + 9 || f.overflow()) throw invalid(what, value, expected + " with at most " + (decimals + 9) + " decimals");
                fraction = f.value();
                i = f.end();
            } else {
                i++;
            }
        }
        if (i != value.length()) throw invalid(what, value, expected);
        long scale = pow10(decimals);
        fraction = places <= decimals ? fraction * pow10(decimals - places) : roundedDivide(fraction, pow10(places - decimals));
        long magnitude;
        try {
            if (whole.overflow() || whole.value() < 0) throw new ArithmeticException();
            magnitude = Math.addExact(Math.multiplyExact(whole.value(), scale), fraction);
        } catch (ArithmeticException e) {
            throw invalid(what, value, expected);
        }
        return negative ? -magnitude : magnitude;
    }

    private static long pow10(int n) {
        long v = 1;
        for (int k = 0; k < n; k++) v *= 10;
        return v;
    }

    /** DIV_ROUND_CLOSEST: halves round up. */
    private static long roundedDivide(long value, long divisor) {
        return (value + divisor / 2) / divisor;
    }

    public static ControlException invalid(String what, String value, String expected) {
        return new ControlException(Errno.EINVAL, what + "=" + value + " (expected: " + expected + ")");
    }
}
