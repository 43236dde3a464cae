package io.iotarget.control.tree;

/**
 * Byte sizes as operators write them: {@code 1073741824}, {@code 512K}, {@code 64M}, {@code 1G}, {@code 2T} (powers of 1024).
 * Here with the trees (a backend's {@code size} attribute) rather than the config, which builds
 * on the trees, so that the trees need nothing of it.
 */
public final class Sizes {
    /** What {@link #parse} accepts, for error messages. */
    public static final String EXPECTED = "a positive size in bytes, or with K, M, G or T";

    private Sizes() {
    }

    /** {@code "25111998464 bytes (23.4 GiB)"}: exact, and readable at a glance. */
    public static String describe(long bytes) {
        String[] units = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        int unit = -1;
        double v = bytes;
        while (v >= 1024 && unit < units.length - 1) {
            v /= 1024;
            unit++;
        }
        return unit < 0 ? bytes + " bytes" : String.format("%d bytes (%.1f %s)", bytes, v, units[unit]);
    }

    /** The size in bytes, or -1 when the text is not a size. */
    public static long parse(String text) {
        String s = text.strip();
        if (s.isEmpty()) return -1;
        int shift = switch (Character.toUpperCase(s.charAt(s.length() - 1))) {
            case 'K' -> 10;
            case 'M' -> 20;
            case 'G' -> 30;
            case 'T' -> 40;
            default -> 0;
        };
        String digits = shift == 0 ? s : s.substring(0, s.length() - 1);
        if (digits.isEmpty() || digits.length() > 18 || !digits.chars().allMatch(Character::isDigit)) return -1;
        long v = Long.parseLong(digits);
        if (v > (Long.MAX_VALUE >> shift)) return -1;
        return v << shift;
    }
}
