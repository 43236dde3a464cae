package io.iotarget.engine;

import io.iotarget.iocontrol.IoController;
import io.iotarget.model.ControlException;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoGroup;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What one group's tenant may see of its own QoS on one device, at one instant: the lines of
 * its interface files that concern that device, as key/value pairs. Front ends encode it for
 * the tenant's host (NVMe/TCP's QoS log page, docs/qos-log.md); the operator reads the same
 * files ({@code io.max}, {@code iotarget.io.stat}, ...), so both always agree: the values are
 * read through {@link IoController#read}, which flushes io.stat's stripes and folds latency as
 * a read of the file does, and are not computed a second time here.
 * <p>
 * Immutable. {@link #of} takes the group tree's lock per file, as a read of each would: any
 * thread but the IO workers; it allocates.
 */
public final class QosSnapshot {
    /** A limit that is "max" in its file: no limit. */
    public static final long UNLIMITED = -1L;
    /** The files read, in this order; each contributes its device's line. */
    public static final List<String> FILES = List.of("io.max", "io.min", "io.max.burst.stat", "io.latency", "io.weight",
            "io.stat", "iotarget.io.stat", "io.pressure");

    private final String groupPath;
    private final DeviceNumber device;
    private final long takenAtMs;
    /** By file, by key. io.pressure's keys are prefixed "some." and "full."; io.weight's is "weight". */
    private final Map<String, Map<String, String>> values;
    /** By file, the lines of it that concern the device, as the file has them (io.weight: its default and the device's line). */
    private final Map<String, List<String>> lines;

    private QosSnapshot(String groupPath, DeviceNumber device, long takenAtMs, Map<String, Map<String, String>> values,
                        Map<String, List<String>> lines) {
        this.groupPath = groupPath;
        this.device = device;
        this.takenAtMs = takenAtMs;
        this.values = values;
        this.lines = lines;
    }

    /**
     * Reads {@code group}'s files for {@code device}. A file the group does not have (the root
     * has no io.max) or cannot be read contributes nothing, so its values read as absent.
     *
     * @param nowMs wall-clock milliseconds since the Unix epoch, recorded as the snapshot's time
     */
    public static QosSnapshot of(IoController controller, IoGroup group, DeviceNumber device, long nowMs) {
        String dir = group.path().replaceFirst("^/+", "");
        String prefix = dir.isEmpty() ? "" : dir + "/";
        String key = device.toString();
        Map<String, Map<String, String>> values = new HashMap<>();
        Map<String, List<String>> lines = new HashMap<>();
        for (String file : FILES) {
            String text;
            try {
                text = controller.read(prefix + file);
            } catch (ControlException e) {
                continue;                                   // not in this group (root), or removed meanwhile
            }
            Map<String, String> kv = new HashMap<>();
            List<String> kept = new java.util.ArrayList<>();
            for (String line : text.split("\n")) {
                String[] words = line.strip().split(" +");
                if (words.length == 0 || words[0].isEmpty()) continue;
                switch (file) {
                    case "io.pressure" -> {
                        for (int i = 1; i < words.length; i++) put(kv, words[0] + ".", words[i]);
                        kept.add(line.strip());
                    }
                    case "io.weight" -> {
                        // "default 100" then "MAJ:MIN 200" lines; the device's own overrides the default.
                        if (words.length == 2 && (words[0].equals(key) || words[0].equals("default") && !kv.containsKey("device"))) {
                            kv.put("weight", words[1]);
                            if (words[0].equals(key)) kv.put("device", "1");
                        }
                        if (words[0].equals(key) || words[0].equals("default")) kept.add(line.strip());
                    }
                    default -> {
                        if (!words[0].equals(key)) continue;
                        for (int i = 1; i < words.length; i++) put(kv, "", words[i]);
                        kept.add(line.strip());
                    }
                }
            }
            values.put(file, kv);
            lines.put(file, List.copyOf(kept));
        }
        return new QosSnapshot(group.path(), device, nowMs, values, lines);
    }

    private static void put(Map<String, String> kv, String prefix, String pair) {
        int eq = pair.indexOf('=');
        if (eq > 0) kv.put(prefix + pair.substring(0, eq), pair.substring(eq + 1));
    }

    /** "/" for the root, else "/tenants/a" as the tree names it. */
    public String groupPath() {
        return groupPath;
    }

    public DeviceNumber device() {
        return device;
    }

    public long takenAtMs() {
        return takenAtMs;
    }

    /**
     * The lines of {@code file} that concern the device, as a read of the file shows them (for
     * io.weight its {@code default} line and the device's own, for io.pressure both); empty when
     * the file could not be read or has none.
     */
    public List<String> lines(String file) {
        return lines.getOrDefault(file, List.of());
    }

    /** The raw value of {@code key} in {@code file}'s line for the device, or null when absent. */
    public String text(String file, String key) {
        Map<String, String> kv = values.get(file);
        return kv == null ? null : kv.get(key);
    }

    /**
     * {@code key} in {@code file} as a whole number: {@link #UNLIMITED} for "max", {@code absent}
     * when missing or not a number; for "A/B" (io.max.burst.stat) A.
     */
    public long number(String file, String key, long absent) {
        String v = text(file, key);
        if (v == null) return absent;
        if (v.equals("max")) return UNLIMITED;
        int slash = v.indexOf('/');
        try {
            return Long.parseLong(slash < 0 ? v : v.substring(0, slash));
        } catch (NumberFormatException e) {
            return absent;
        }
    }

    /** For "A/B" values (io.max.burst.stat: credit left / full credit), B; {@code absent} otherwise. */
    public long denominator(String file, String key, long absent) {
        String v = text(file, key);
        int slash = v == null ? -1 : v.indexOf('/');
        if (slash < 0) return absent;
        try {
            return Long.parseLong(v.substring(slash + 1));
        } catch (NumberFormatException e) {
            return absent;
        }
    }

    /** {@code key} with two decimals (io.pressure's avg10, iotarget.io.stat's min_pct) in hundredths; {@code absent} when missing. */
    public long hundredths(String file, String key, long absent) {
        String v = text(file, key);
        if (v == null) return absent;
        try {
            return new java.math.BigDecimal(v).movePointRight(2).longValue();
        } catch (NumberFormatException e) {
            return absent;
        }
    }
}
