package io.iotarget.control;

import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code iotarget ls -l [PATH]}: a directory with what is in it, made in the server from its
 * tree, which the endpoint serves whole ({@code GET /v1/list-long}) and every client prints as
 * it comes: the Java client and scripts/cli-thin alike, so neither formats it (issue 35: the
 * perl client answers in ~60 ms, where a JVM start alone takes ~90).
 * <ul>
 *   <li>A group (a directory holding cgroup.controllers): one line per device of the group and
 *       of each child group, with the live rates — io.stat read twice, {@code interval} apart,
 *       each time the whole directory's in one pass ({@link ControlEndpoint#readBelow}) —
 *       the average latency and the time io.max held requests per second over the same interval
 *       (iotarget.io.stat, {@link HeldAndLatency}), and the limits: io.weight on that device and
 *       io.max's limits other than max.
 *   <li>Anything else (/backends, /nbd/exports/a, /nvmet/...): each attribute and its value,
 *       as {@code grep . *} shows a configfs directory; subdirectories end with '/'.
 * </ul>
 * <pre>
 *  GROUP      DEVICE   RIOPS  WIOPS   RBPS   WBPS  AVGLAT MAXHELD  WEIGHT  IO.MAX
 *  tenants    259:0        0   1995      0   7.8M   4.0ms    7.9s     100  -
 *  tenants/a  259:0        0   1995      0   7.8M   4.0ms    7.9s     200  wbps=104857600 riops=2000
 * </pre>
 * Rates are per second over the interval; bandwidth in bytes with binary suffixes (K, M, G),
 * as {@code ls -lh}. {@link #text} sleeps the interval on its caller's thread (the endpoint
 * runs each request on a virtual thread of its own); any thread. The statics ({@link Sample},
 * {@link #bytes}, {@link #read}) are also {@code top}'s, on the CLI's thread.
 */
final class LongListing {
    /** What {@code ls -l} measures live rates over, and how often {@code top} redraws. */
    static final Duration INTERVAL = Duration.ofSeconds(1);
    /** After the GROUP column, whose width is the longest name's. */
    private static final String COLUMNS = "s %-8s %6s %6s %6s %6s %7s %7s %7s  %s%n";
    private static final String NO_VALUE = "-";
    /** io.stat's fields that rates are made of, by index. */
    private static final List<String> STAT_KEYS = List.of("rbytes", "wbytes", "rios", "wios");
    static final int RBYTES = 0, WBYTES = 1, RIOS = 2, WIOS = 3;

    private final ConfigTree tree;
    private final Duration interval;

    LongListing(ConfigTree tree, Duration interval) {
        this.tree = tree;
        this.interval = interval;
    }

    /** The listing of {@code path} ("" is the root group); the tree's refusal to list it is thrown. */
    String text(String path) throws ControlException {
        List<String> entries = tree.list(path);
        return entries.contains("cgroup.controllers") ? groups(path) : attributes(path, entries);
    }

    /** One row per (group, device): the group itself, then its children; two passes over the tree for any number of them. */
    private String groups(String path) throws ControlException {
        Map<String, Map<String, String>> first = ControlEndpoint.readBelow(tree, path, List.of("io.stat", "iotarget.io.stat"));
        long firstNs = System.nanoTime();
        sleep();
        Map<String, Map<String, String>> second = ControlEndpoint.readBelow(tree, path, List.of("io.stat", "iotarget.io.stat", "io.max", "io.weight"));
        long secondNs = System.nanoTime();
        List<String> groups = List.copyOf(second.keySet());
        int width = Math.max("GROUP".length(), groups.stream().mapToInt(g -> shown(g).length()).max().orElse(1));
        String format = "%-" + width + COLUMNS;
        StringBuilder out = new StringBuilder(String.format(Locale.ROOT, format, "GROUP", "DEVICE", "RIOPS", "WIOPS", "RBPS", "WBPS",
                "AVGLAT", "MAXHELD", "WEIGHT", "IO.MAX"));
        for (String g : groups) {
            Map<String, String> before = first.getOrDefault(g, Map.of()), after = second.get(g);
            Map<String, String> ioMax = perDevice(orEmpty(after, "io.max"));
            Map<String, String> weights = perDevice(orEmpty(after, "io.weight"));
            Sample then = Sample.of(orEmpty(before, "io.stat"), firstNs), now = Sample.of(orEmpty(after, "io.stat"), secondNs);
            HeldAndLatency heldThen = HeldAndLatency.of(orEmpty(before, "iotarget.io.stat"), firstNs);
            HeldAndLatency heldNow = HeldAndLatency.of(orEmpty(after, "iotarget.io.stat"), secondNs);
            if (now.byDevice().isEmpty()) {
                out.append(String.format(Locale.ROOT, format, shown(g), NO_VALUE, NO_VALUE, NO_VALUE, NO_VALUE, NO_VALUE, NO_VALUE, NO_VALUE,
                        weights.getOrDefault("default", NO_VALUE), NO_VALUE));
            }
            for (String device : now.byDevice().keySet()) {
                double[] rate = now.ratesSince(then, device);
                HeldAndLatency.Interval latency = heldNow.since(heldThen, device);
                out.append(String.format(Locale.ROOT, format, shown(g), device,
                        Math.round(rate[RIOS]), Math.round(rate[WIOS]), bytes(rate[RBYTES]), bytes(rate[WBYTES]),
                        HeldAndLatency.duration(latency.avgUsec()), HeldAndLatency.held(latency.heldPerSecond()[HeldAndLatency.THROTTLE]),
                        weights.getOrDefault(device, weights.getOrDefault("default", NO_VALUE)),
                        limits(ioMax.get(device))));
            }
        }
        return out.toString();
    }

    /**
     * One read of a group's io.stat: by device, rbytes, wbytes, rios, wios; and when it was read.
     * Two of them make the live rates that {@code ls -l} and {@code top} show.
     */
    record Sample(Map<String, long[]> byDevice, long atNs) {
        /** io.stat's {@code text} as read at {@code atNs} (zeros for a device line without fields; no devices for "", no io.stat). */
        static Sample of(String text, long atNs) {
            Map<String, long[]> byDevice = new LinkedHashMap<>();
            for (String line : text.lines().toList()) {
                String[] tokens = line.strip().split(" ");
                if (tokens[0].isEmpty()) continue;
                long[] v = new long[STAT_KEYS.size()];
                for (String t : tokens) {
                    int eq = t.indexOf('=');
                    int k = eq < 0 ? -1 : STAT_KEYS.indexOf(t.substring(0, eq));
                    if (k >= 0) v[k] = Long.parseLong(t.substring(eq + 1));
                }
                byDevice.put(tokens[0], v);
            }
            return new Sample(byDevice, atNs);
        }

        /** Per second since {@code then}, indexed by {@link #RBYTES} ... {@link #WIOS}; a device new since then counts from 0. */
        double[] ratesSince(Sample then, String device) {
            double seconds = (atNs - then.atNs) / 1e9;
            long[] before = then.byDevice.getOrDefault(device, new long[STAT_KEYS.size()]);
            long[] after = byDevice.get(device);
            double[] rate = new double[STAT_KEYS.size()];
            for (int i = 0; i < rate.length; i++) rate[i] = Math.max(0, after[i] - before[i]) / seconds;
            return rate;
        }
    }

    /** io.max's or io.weight's lines by their first token ("259:0", "default"): the rest of the line. */
    private static Map<String, String> perDevice(String text) {
        Map<String, String> m = new LinkedHashMap<>();
        for (String line : text.lines().toList()) {
            String[] kv = line.strip().split(" ", 2);
            if (kv.length == 2) m.put(kv[0], kv[1]);
        }
        return m;
    }

    /** io.max's limits other than max: {@code wbps=104857600 riops=20000}, or "-". */
    private static String limits(String ioMaxLine) {
        if (ioMaxLine == null) return NO_VALUE;
        List<String> set = new ArrayList<>();
        for (String t : ioMaxLine.split(" ")) if (!t.endsWith("=max")) set.add(t);
        return set.isEmpty() ? NO_VALUE : String.join(" ", set);
    }

    /** 8171520 → "7.8M". */
    static String bytes(double perSecond) {
        String[] units = {"K", "M", "G", "T"};
        if (perSecond < 1024) return Long.toString(Math.round(perSecond));
        double v = perSecond;
        int u = -1;
        while (v >= 1024 && u < units.length - 1) {
            v /= 1024;
            u++;
        }
        return String.format(Locale.ROOT, v < 10 ? "%.1f%s" : "%.0f%s", v, units[u]);
    }

    /** Each entry and its value; a directory, or a file that cannot be read (a link, a write-only file), shows its name alone. */
    private String attributes(String path, List<String> entries) {
        int width = entries.stream().mapToInt(String::length).max().orElse(0);
        StringBuilder out = new StringBuilder();
        for (String e : entries) {
            String value = e.endsWith("/") ? null : readOrNull(ControlEndpoint.join(path, e));
            if (value == null) {
                out.append(e).append('\n');
            } else {
                String v = String.join(", ", value.strip().lines().toList());
                out.append(String.format(Locale.ROOT, "%-" + width + "s  %s%n", e, v));
            }
        }
        return out.toString();
    }

    private String readOrNull(String file) {
        try {
            return tree.read(file);
        } catch (ControlException unreadable) {
            return null;
        }
    }

    /** A file of {@link ControlEndpoint#readBelow}'s answer, or "" when the group has none (io.max and io.weight are not in the root). */
    private static String orEmpty(Map<String, String> files, String name) {
        String text = files.get(name);
        return text == null ? "" : text;
    }

    /** {@code top}'s read of one file through the endpoint, "" when it cannot be read. */
    static String read(ControlClient client, String group, String file) throws IOException {
        ControlClient.Reply r = client.get("read", ControlEndpoint.join(group, file));
        return r.ok() ? r.body() : "";
    }

    /** The root group is shown as "/". */
    static String shown(String group) {
        return group.isEmpty() ? "/" : group;
    }

    private void sleep() {
        try {
            Thread.sleep(interval);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
