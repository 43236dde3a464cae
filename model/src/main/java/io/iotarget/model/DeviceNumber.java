package io.iotarget.model;

/**
 * A block device number, {@code MAJ:MIN}, as the kernel prints it in io.stat and parses it in
 * io.max ({@code blkg_conf_open_bdev}): two unsigned decimal numbers separated by a colon.
 */
public record DeviceNumber(int major, int minor) {
    /** Linux's MAJOR() is 12 bits and MINOR() 20 bits. */
    public static final int MAX_MAJOR = (1 << 12) - 1;
    public static final int MAX_MINOR = (1 << 20) - 1;

    public DeviceNumber {
        if (major < 0 || major > MAX_MAJOR) throw new IllegalArgumentException("major " + major + " (expected: 0.." + MAX_MAJOR + ")");
        if (minor < 0 || minor > MAX_MINOR) throw new IllegalArgumentException("minor " + minor + " (expected: 0.." + MAX_MINOR + ")");
    }

    /**
     * Parses exactly {@code MAJ:MIN} (no surrounding text).
     *
     * @throws ControlException EINVAL when the text is not two decimal numbers separated by ':'
     */
    public static DeviceNumber parse(String text) throws ControlException {
        int colon = text.indexOf(':');
        if (colon <= 0 || colon == text.length() - 1) throw new ControlException(Errno.EINVAL, "'" + text + "' is not MAJ:MIN");
        long major = parseUnsigned(text, 0, colon);
        long minor = parseUnsigned(text, colon + 1, text.length());
        if (major < 0 || minor < 0 || major > MAX_MAJOR || minor > MAX_MINOR) {
            throw new ControlException(Errno.EINVAL, "'" + text + "' is not MAJ:MIN");
        }
        return new DeviceNumber((int) major, (int) minor);
    }

    /** Decimal digits only; -1 when empty, not all digits, or more than 9 digits. */
    private static long parseUnsigned(String s, int from, int to) {
        if (to - from < 1 || to - from > 9) return -1;
        long v = 0;
        for (int i = from; i < to; i++) {
            char c = s.charAt(i);
            if (c < '0' || c > '9') return -1;
            v = v * 10 + (c - '0');
        }
        return v;
    }

    @Override
    public String toString() {
        return major + ":" + minor;
    }
}
