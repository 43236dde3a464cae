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
        if (value.isEmpty() || value.length() > 20) throw invalid(what, value, "an unsigned decimal number");
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < '0' || c > '9') throw invalid(what, value, "an unsigned decimal number");
        }
        try {
            return Long.parseUnsignedLong(value);
        } catch (NumberFormatException e) {
            throw invalid(what, value, "a number below 2^64");
        }
    }

    public static ControlException invalid(String what, String value, String expected) {
        return new ControlException(Errno.EINVAL, what + "=" + value + " (expected: " + expected + ")");
    }

    private static int skipSpaces(String s, int i) {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        return i;
    }
}
