package io.iotarget.iocontrol.file;

import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse.Scanned;

import static io.iotarget.model.tree.KernelParse.isSpace;
import static io.iotarget.model.tree.KernelParse.scanDecimal;
import static io.iotarget.model.tree.KernelParse.skipSpaces;

/**
 * A per-device line of a cgroup file ({@code io.max}, {@code io.weight}, {@code io.cost.*}):
 * its device key and the rest of the line, leading whitespace skipped. The numbers are read
 * with {@link io.iotarget.model.tree.KernelParse}.
 */
public record DeviceLine(PolicyDevice device, String body) {
    /**
     * {@code blkcg_conf_open_bdev}: {@code MAJ:MIN} read with {@code "%u:%u"} (so whitespace may
     * precede either number, and each is decimal), then a whitespace character — the end of the
     * text is not one — then the body. A backend's name in place of {@code MAJ:MIN} is an
     * iotarget extension. A number that names no device, out of range included, is ENODEV: the
     * kernel's MKDEV would fold it onto some other number, which it never means.
     *
     * @throws ControlException EINVAL for bad syntax, ENODEV for an unknown device
     */
    public static DeviceLine parse(PolicyHost host, String text) throws ControlException {
        int i = skipSpaces(text, 0);
        Scanned major = scanDecimal(text, i);
        if (major == null) return namedDevice(host, text, i);
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
        return new DeviceLine(host.findDevice(number), body);
    }

    private static DeviceLine namedDevice(PolicyHost host, String text, int from) throws ControlException {
        int end = from;
        while (end < text.length() && !isSpace(text.charAt(end))) end++;
        String name = text.substring(from, end);
        if (end < text.length()) {
            for (PolicyDevice dc : host.devices()) {
                if (dc.device().name().equals(name)) return new DeviceLine(dc, text.substring(skipSpaces(text, end)));
            }
        }
        throw notDeviceKey(text);
    }

    private static ControlException notDeviceKey(String text) {
        String line = text.lines().findFirst().orElse("").strip();
        return new ControlException(Errno.EINVAL, "'" + line + "' does not start with MAJ:MIN (or a device name) and whitespace");
    }

}
