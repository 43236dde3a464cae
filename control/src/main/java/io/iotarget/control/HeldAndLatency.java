package io.iotarget.control;

import io.iotarget.control.http.ControlClient;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * One read of a group's {@code iotarget.io.stat} (the time policies held its requests, their
 * latency, and how its io.min fares, per device; docs/decisions.md), and what two reads tell about the time between them:
 * average and p99 latency, and held time per second. For {@code top} and {@code ls -l}; CLI thread.
 *
 * @param byDevice the file's lines by {@code MAJ:MIN}
 * @param atNs     when it was read ({@link System#nanoTime})
 */
record HeldAndLatency(Map<String, Line> byDevice, long atNs) {
    /** The held-time keys, indexed as {@link Interval#heldPerSecond}. */
    static final List<String> HELD_KEYS = List.of("throttle_usec", "latency_usec", "cost_usec", "delay_usec");
    static final int THROTTLE = 0, LATENCY = 1, COST = 2, DELAY = 3;
    private static final double P99 = 0.99;

    /**
     * One device's line.
     *
     * @param heldUsec indexed as {@link #HELD_KEYS}
     * @param buckets  latency buckets: highest µs → requests
     * @param minPct   io.min: the % of its minimum the group gets (100 unless the device is overcommitted)
     * @param minIos   requests that went on a minimum
     */
    record Line(long[] heldUsec, long ios, long usec, TreeMap<Long, Long> buckets, double minPct, long minIos) {
        static final Line EMPTY = new Line(new long[HELD_KEYS.size()], 0, 0, new TreeMap<>(), 100, 0);
    }

    /**
     * Between two reads.
     *
     * @param avgUsec       average latency of the requests completed in between, NaN when none
     * @param p99Usec       their 99th percentile (a bucket's top), -1 when none
     * @param heldPerSecond seconds requests were held per second, by {@link #HELD_KEYS} (2.0: two requests waited all along)
     * @param minPct        io.min: the % of its minimum the group got at the end, NaN when no request went on a minimum in between
     */
    record Interval(double avgUsec, long p99Usec, double[] heldPerSecond, double minPct) {
        /** io.min's column: "-" when nothing went on a minimum, "met", or the % of the minimum given ("71%"). */
        String minimum() {
            if (Double.isNaN(minPct)) return "-";
            return minPct >= 100 ? "met" : String.format(Locale.ROOT, "%.0f%%", Math.floor(minPct));
        }
    }

    /** A group's file's {@code text} as read at {@code atNs}; no devices for "" (io not enabled, an old server). */
    static HeldAndLatency of(String text, long atNs) {
        Map<String, Line> byDevice = new LinkedHashMap<>();
        for (String line : text.lines().toList()) {
            String[] tokens = line.strip().split(" ");
            if (tokens[0].isEmpty()) continue;
            long[] held = new long[HELD_KEYS.size()];
            long ios = 0, usec = 0, minIos = 0;
            double minPct = 100;
            TreeMap<Long, Long> buckets = new TreeMap<>();
            for (String t : tokens) {
                int eq = t.indexOf('=');
                if (eq < 0) continue;
                String key = t.substring(0, eq), value = t.substring(eq + 1);
                int h = HELD_KEYS.indexOf(key);
                if (h >= 0) held[h] = Long.parseLong(value);
                else if (key.equals("lat_ios")) ios = Long.parseLong(value);
                else if (key.equals("lat_usec")) usec = Long.parseLong(value);
                else if (key.equals("min_pct")) minPct = Double.parseDouble(value);
                else if (key.equals("min_ios")) minIos = Long.parseLong(value);
                else if (key.equals("lat_hist") && !value.isEmpty()) {
                    for (String b : value.split(",")) {
                        int colon = b.indexOf(':');
                        buckets.merge(Long.parseLong(b.substring(0, colon)), Long.parseLong(b.substring(colon + 1)), Long::sum);
                    }
                }
            }
            byDevice.put(tokens[0], new Line(held, ios, usec, buckets, minPct, minIos));
        }
        return new HeldAndLatency(byDevice, atNs);
    }

    /** What happened on {@code device} since {@code then}; a device new since then counts from 0. */
    Interval since(HeldAndLatency then, String device) {
        double seconds = (atNs - then.atNs) / 1e9;
        Line before = then.byDevice.getOrDefault(device, Line.EMPTY), after = byDevice.getOrDefault(device, Line.EMPTY);
        double[] held = new double[HELD_KEYS.size()];
        for (int i = 0; i < held.length; i++) held[i] = Math.max(0, after.heldUsec[i] - before.heldUsec[i]) / 1e6 / seconds;
        double minPct = after.minIos > before.minIos ? after.minPct : Double.NaN;
        long ios = after.ios - before.ios;
        if (ios <= 0) return new Interval(Double.NaN, -1, held, minPct);
        // The buckets may be a request or two behind lat_ios (a read is not an atomic snapshot):
        // then the highest bucket that moved stands for the p99.
        long rank = (long) Math.ceil(P99 * ios), seen = 0, p99 = -1;
        for (Map.Entry<Long, Long> b : after.buckets.entrySet()) {
            long moved = b.getValue() - before.buckets.getOrDefault(b.getKey(), 0L);
            if (moved <= 0) continue;
            seen += moved;
            p99 = b.getKey();
            if (seen >= rank) break;
        }
        return new Interval((double) (after.usec - before.usec) / ios, p99, held, minPct);
    }

    /** 1234.5 µs → "1.2ms"; NaN or negative → "-". */
    static String duration(double usec) {
        if (Double.isNaN(usec) || usec < 0) return "-";
        if (usec < 1000) return Math.round(usec) + "us";
        if (usec < 1e6) return String.format(Locale.ROOT, usec < 10_000 ? "%.1fms" : "%.0fms", usec / 1000);
        return String.format(Locale.ROOT, usec < 1e7 ? "%.1fs" : "%.0fs", usec / 1e6);
    }

    /** Seconds held per second as a duration ("7.9s", "120ms"), or "0". */
    static String held(double secondsPerSecond) {
        return secondsPerSecond == 0 ? "0" : duration(secondsPerSecond * 1e6);
    }
}
