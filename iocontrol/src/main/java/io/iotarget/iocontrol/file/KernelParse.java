package io.iotarget.iocontrol.file;

import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.model.ControlException;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.Errno;

import java.util.ArrayList;
import java.util.List;

/**
 * The pieces of the kernel's text parsing that the cgroup files share, read from Linux 6.1:
 * {@code blkcg_conf_open_bdev}'s device key, vsscanf's {@code %s} and {@code %u} (decimal,
 * whitespace skipped), strsep, {@code kstrtoull} / {@code kstrtoint} with base 0 (so {@code 010}
 * is 8 and {@code 0x10} is 16), match_token's {@code %u} and {@code cgroup_parse_float}.
 *
 * <p>Where the kernel accepts something only by accident — a number that wraps past its type,
 * trailing characters after a number ({@code 10k} read as 10), a fraction too long for its
 * 32-bit divisor — the callers refuse it instead, with the errno the kernel uses for its own
 * refusals there (docs/decisions.md lists each case). Whitespace is the kernel's
 * {@code isspace} on ASCII: space and {@code \t \n \v \f \r}.
 */
public final class KernelParse {
    /** u64 max: the kernel's "max" for byte limits. */
    public static final long U64_MAX = -1L;
    public static final long U32_MAX = 0xffff_ffffL;

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

    /** A device key and the rest of the line, leading whitespace skipped. */
    public record DeviceLine(DeviceControl device, String body) {
    }

    /**
     * {@code blkcg_conf_open_bdev}: {@code MAJ:MIN} read with {@code "%u:%u"} (so whitespace may
     * precede either number, and each is decimal), then a whitespace character — the end of the
     * text is not one — then the body. A backend's name in place of {@code MAJ:MIN} is an
     * iotarget extension. A number that names no device, out of range included, is ENODEV: the
     * kernel's MKDEV would fold it onto some other number, which it never means.
     *
     * @throws ControlException EINVAL for bad syntax, ENODEV for an unknown device
     */
    public static DeviceLine deviceLine(IoController controller, String text) throws ControlException {
        int i = skipSpaces(text, 0);
        Scanned major = scanDecimal(text, i);
        if (major == null) return namedDevice(controller, text, i);
        i = major.end();
        if (i >= text.length() || text.charAt(i) != ':') throw notDeviceKey(text);
        Scanned minor = scanDecimal(text, skipSpaces(text, i + 1));
        if (minor == null) throw notDeviceKey(text);
        i = minor.end();
        if (i >= text.length() || !isSpace(text.charAt(i))) throw notDeviceKey(text);
        String body = text.substring(skipSpaces(text, i));
        boolean inRange = !major.overflow() && !minor.overflow()
                && Long.compareUnsigned(major.value(), DeviceNumber.MAX_MAJOR) <= 0
                && Long.compareUnsigned(minor.value(), DeviceNumber.MAX_MINOR) <= 0;
        String number = Long.toUnsignedString(major.value()) + ":" + Long.toUnsignedString(minor.value());
        if (!inRange) throw new ControlException(Errno.ENODEV, "no device " + number);
        return new DeviceLine(controller.findDevice(number), body);
    }

    private static DeviceLine namedDevice(IoController controller, String text, int from) throws ControlException {
        int end = from;
        while (end < text.length() && !isSpace(text.charAt(end))) end++;
        String name = text.substring(from, end);
        if (end < text.length()) {
            for (DeviceControl dc : controller.devices()) {
                if (dc.device().name().equals(name)) return new DeviceLine(dc, text.substring(skipSpaces(text, end)));
            }
        }
        throw notDeviceKey(text);
    }

    private static ControlException notDeviceKey(String text) {
        String line = text.lines().findFirst().orElse("").strip();
        return new ControlException(Errno.EINVAL, "'" + line + "' does not start with MAJ:MIN (or a device name) and whitespace");
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
        Scanned n = scanBase0(value, 0);
        if (n == null || n.end() != value.length()) throw invalid(what, value, "an unsigned number (0x.. hex, 0.. octal)");
        if (n.overflow()) throw new ControlException(Errno.ERANGE, what + "=" + value + " (expected: a number below 2^64)");
        return n.value();
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
