package io.iotarget.iocontrol.file;

import io.iotarget.iocontrol.DeviceControl;
import io.iotarget.iocontrol.IoController;
import io.iotarget.model.ControlException;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.Errno;

import java.util.ArrayList;
import java.util.List;

/**
 * The parsing rules shared by the io.* files, after the kernel's {@code blkg_conf_open_bdev}
 * and its sscanf conventions. Stricter than the kernel in one respect: numbers that overflow
 * are refused (EINVAL) instead of wrapping.
 */
public final class KernelParse {
    /** u64 max: the kernel's "max" for byte limits. */
    public static final long U64_MAX = -1L;

    private KernelParse() {
    }

    /** A device key and the rest of the line. */
    public record DeviceLine(DeviceControl device, String body) {
    }

    /**
     * Splits {@code "MAJ:MIN rest"}: leading whitespace skipped, {@code MAJ:MIN} (or a device
     * name, an iotarget extension), then whitespace or the end of the text.
     *
     * @throws ControlException EINVAL for bad syntax, ENODEV for an unknown device
     */
    public static DeviceLine deviceLine(IoController controller, String text) throws ControlException {
        int i = skipSpaces(text, 0);
        int end = i;
        while (end < text.length() && !Character.isWhitespace(text.charAt(end))) end++;
        String key = text.substring(i, end);
        if (key.isEmpty()) throw new ControlException(Errno.EINVAL, "expected MAJ:MIN at the start of the line");
        String body = text.substring(skipSpaces(text, end));
        int colon = key.indexOf(':');
        if (colon < 0) {
            // iotarget extension: a backend name in place of MAJ:MIN.
            for (DeviceControl dc : controller.devices()) if (dc.device().name().equals(key)) return new DeviceLine(dc, body);
            throw new ControlException(Errno.EINVAL, "'" + key + "' is neither MAJ:MIN nor a device name");
        }
        DeviceNumber number = DeviceNumber.parse(key);
        return new DeviceLine(controller.findDevice(number.toString()), body);
    }

    /** Whitespace-separated tokens, empty ones dropped (sscanf "%s" semantics). */
    public static List<String> tokens(String body) {
        List<String> out = new ArrayList<>();
        for (String t : body.trim().split("\\s+")) if (!t.isEmpty()) out.add(t);
        return out;
    }

    /**
     * An unsigned decimal u64 (digits only, no sign).
     *
     * @throws ControlException EINVAL if not a number or larger than 2^64 - 1
     */
    public static long parseU64(String what, String value) throws ControlException {
        if (value.isEmpty() || value.length() > 20 || !digits(value)) throw invalid(what, value, "an unsigned decimal number");
        try {
            return Long.parseUnsignedLong(value);
        } catch (NumberFormatException e) {
            throw invalid(what, value, "a number below 2^64");
        }
    }

    /**
     * A decimal with up to {@code decimals} places kept, as the kernel's
     * {@code cgroup_parse_float}: {@code "95.5"} with 2 places is 9550; more places are rounded
     * to the nearest ({@code "95.005"} → 9501). Stricter than the kernel: the fraction must be
     * digits only, nothing may follow the number, and a minus sign applies to the whole value
     * (the kernel reads {@code "-0.5"} as +0.5).
     *
     * @throws ControlException EINVAL when not such a number or out of range of a long
     */
    public static long parseDecimal(String what, String value, int decimals) throws ControlException {
        String expected = "a decimal number with up to " + decimals + " places";
        int dot = value.indexOf('.');
        String whole = dot < 0 ? value : value.substring(0, dot);
        String fraction = dot < 0 ? "" : value.substring(dot + 1);
        boolean negative = whole.startsWith("-");
        if (negative || whole.startsWith("+")) whole = whole.substring(1);
        if (whole.isEmpty() || !digits(whole) || !digits(fraction) || whole.length() > 18 || fraction.length() > 18) {
            throw invalid(what, value, expected);
        }
        long scale = 1;
        for (int i = 0; i < decimals; i++) scale *= 10;
        long frac = fraction.isEmpty() ? 0 : Long.parseLong(fraction);
        if (fraction.length() <= decimals) {
            for (int i = fraction.length(); i < decimals; i++) frac *= 10;
        } else {
            long divisor = 1;
            for (int i = decimals; i < fraction.length(); i++) divisor *= 10;
            frac = (frac + divisor / 2) / divisor;
        }
        long magnitude;
        try {
            magnitude = Math.addExact(Math.multiplyExact(Long.parseLong(whole), scale), frac);
        } catch (ArithmeticException e) {
            throw invalid(what, value, expected);
        }
        return negative ? -magnitude : magnitude;
    }

    private static boolean digits(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') return false;
        }
        return true;
    }

    public static ControlException invalid(String what, String value, String expected) {
        return new ControlException(Errno.EINVAL, what + "=" + value + " (expected: " + expected + ")");
    }

    private static int skipSpaces(String s, int i) {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        return i;
    }
}
