package io.iotarget.control;

import io.iotarget.control.LongListing.Sample;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlClient.Reply;
import io.iotarget.control.http.ControlEndpoint;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code iotarget top}: every group's IO per device, redrawn each interval, as iotop shows
 * processes. Made of the endpoint's list and read operations only (the rates are {@code ls -l}'s:
 * io.stat read each interval, {@link Sample#ratesSince}; latency and held time come from
 * iotarget.io.stat read alongside, {@link HeldAndLatency#since}); nothing is added to the IO path.
 * <pre>
 *  iotarget top - every second, sorted by RIOPS; q quits
 *  keys g r w R W l p m c sort by GROUP RIOPS ... COSTHELD; HELD: time waited in io.max, iocost per s
 *  GROUP      DEVICE   RIOPS  WIOPS   RBPS   WBPS  AVGLAT  P99LAT MAXHELD COSTHELD  MIN BURST HOST
 *  tenants/a  259:0     1995      0   7.8M      0   4.0ms   4.2ms    7.9s        0  met   37%    -
 * </pre>
 * AVGLAT and P99LAT are the latency of the requests completed in the interval; MAXHELD and
 * COSTHELD the time requests waited in io.max and iocost per second of it (7.9s: about eight
 * requests waited all along); MIN whether io.min's minimum was met ("met"), or the share of it
 * given while the minimums overcommit the device ("71%"), "-" when no request went on one;
 * BURST the io.max.burst credit left now (io.max.burst.stat; the lowest of the device's limits),
 * "-" without a burst in effect; HOST marks a host's group under cgroup_per_host (iotarget.host):
 * "auto" while it is one a connect made and nobody used (removed once idle and too many such are),
 * "kept" once it is an ordinary group, "-" for any other group.
 * The terminal is /dev/tty, put in non-canonical mode without echo ({@code stty -icanon -echo}) so
 * that one key acts at once, and drawn on the alternate screen with plain ANSI sequences; the
 * saved {@code stty -g} settings and the main screen come back however top ends: q, end of input,
 * an error, or Ctrl-C (a signal: the JVM's shutdown hook restores them).
 * With a gateway group ({@code cluster.group}) a last block says which node serves what: each live
 * member, the ANA groups it presents optimized and its controller ids ({@code /cluster/members}).
 * Threads: the CLI thread samples and draws; one daemon thread reads keys from the terminal.
 */
final class Top {
    /** Sort keys and the column each sorts by, descending (the group name ascending). */
    private static final String KEYS = "grwRWlpmc";
    private static final List<String> COLUMNS = List.of("GROUP", "RIOPS", "WIOPS", "RBPS", "WBPS", "AVGLAT", "P99LAT", "MAXHELD", "COSTHELD");
    private static final String ROW = "s %-8s %6s %6s %6s %6s %7s %7s %7s %8s %4s %5s %4s%n";
    private static final String ENTER = "\033[?1049h\033[?25l", LEAVE = "\033[?25h\033[?1049l", HOME_CLEAR = "\033[H\033[2J";
    private static final int END_OF_INPUT = -1;

    private final ControlClient client;
    private final Duration interval;

    Top(ControlClient client, Duration interval) {
        this.client = client;
        this.interval = interval;
    }

    /** One row: a group on one device, its rates (indexed as {@link Sample#ratesSince}), latency, held time, burst credit left and host mark. */
    private record Row(String group, String device, double[] rate, HeldAndLatency.Interval latency, String burst, String host) {
    }

    /** One tick's reads of a group: io.stat, iotarget.io.stat, io.max.burst.stat and iotarget.host. */
    private record Reads(Sample stat, HeldAndLatency held, String burst, String host) {
    }

    /** Runs until q or the end of input; the endpoint's refusal to list the root group, or no terminal, ends it at once. */
    Reply run(PrintStream out) throws IOException {
        Reply root = client.get("list", "");
        if (!root.ok()) return root;
        Terminal tty;
        try {
            tty = Terminal.open();
        } catch (IOException e) {
            return new Reply(400, "needs a terminal (/dev/tty): " + e.getMessage() + "\n", null);
        }
        try {
            out.print(ENTER);
            Map<String, Reads> before = samples(groups(""));
            List<Row> rows = List.of();
            String serves = gatewayGroup();
            char sort = 'r';
            long next = System.nanoTime() + interval.toNanos();
            while (true) {
                int key = tty.key(Math.max(0, next - System.nanoTime()));
                if (key == 'q' || key == END_OF_INPUT) return new Reply(200, "", null);
                if (key > 0 && KEYS.indexOf(key) >= 0) sort = (char) key;
                if (System.nanoTime() >= next) {
                    Map<String, Reads> now = samples(groups(""));
                    rows = rows(before, now);
                    before = now;
                    serves = gatewayGroup();
                    next = System.nanoTime() + interval.toNanos();
                }
                out.print(HOME_CLEAR + screen(rows, sort) + serves);   // a key redraws at once, in its order
                out.flush();
            }
        } finally {
            out.print(LEAVE);
            out.flush();
            tty.restore();
        }
    }

    /**
     * With a gateway group ({@code /cluster}), which node serves what: one line per live member,
     * {@code NODE optimized for ANA groups 1 4, cntlids 1..1000}; empty without one.
     */
    private String gatewayGroup() throws IOException {
        Reply members = client.get("list", "/cluster/members");
        if (!members.ok()) return "";
        StringBuilder sb = new StringBuilder(String.format("%ngateway group %s (this node: %s)%n",
                LongListing.read(client, "/cluster", "group").strip(), LongListing.read(client, "/cluster", "node").strip()));
        for (String m : members.body().lines().toList()) {
            String node = m.endsWith("/") ? m.substring(0, m.length() - 1) : m;
            String dir = "/cluster/members/" + node;
            String owns = LongListing.read(client, dir, "ana_groups").strip();
            sb.append(String.format("  %-16s optimized for ANA groups %s, cntlids %s%n", node, owns.isEmpty() ? "-" : owns,
                    LongListing.read(client, dir, "cntlid_range").strip().replace(' ', '-')));
        }
        return sb.toString();
    }

    /** {@code group} and every group below it, parents first. */
    private List<String> groups(String group) throws IOException {
        List<String> all = new ArrayList<>(List.of(group));
        Reply listing = client.get("list", group);
        if (!listing.ok()) return all;        // removed meanwhile
        for (String e : listing.body().lines().toList()) {
            if (e.endsWith("/")) all.addAll(groups(ControlEndpoint.join(group, e.substring(0, e.length() - 1))));
        }
        return all;
    }

    private Map<String, Reads> samples(List<String> groups) throws IOException {
        Map<String, Reads> m = new HashMap<>();
        for (String g : groups) {
            Sample stat = Sample.of(LongListing.read(client, g, "io.stat"), System.nanoTime());
            m.put(g, new Reads(stat, HeldAndLatency.of(LongListing.read(client, g, "iotarget.io.stat"), System.nanoTime()),
                    LongListing.read(client, g, "io.max.burst.stat"), LongListing.read(client, g, "iotarget.host")));
        }
        return m;
    }

    /** A row per group and device now; a group new since {@code before} is left for the next tick. */
    private static List<Row> rows(Map<String, Reads> before, Map<String, Reads> now) {
        List<Row> rows = new ArrayList<>();
        for (Map.Entry<String, Reads> g : now.entrySet()) {
            Reads then = before.get(g.getKey());
            if (then == null) continue;
            Reads reads = g.getValue();
            for (String device : reads.stat().byDevice().keySet()) {
                rows.add(new Row(LongListing.shown(g.getKey()), device, reads.stat().ratesSince(then.stat(), device),
                        reads.held().since(then.held(), device), burstLeft(reads.burst(), device), hostMark(reads.host())));
            }
        }
        return rows;
    }

    /**
     * The credit {@code device}'s line of io.max.burst.stat has left ({@code 259:0 riops=6400/8000}),
     * as a percentage of a full credit, the lowest of its limits; "-" without a line.
     */
    static String burstLeft(String stat, String device) {
        for (String line : stat.lines().toList()) {
            String[] tokens = line.strip().split(" ");
            if (!tokens[0].equals(device)) continue;
            double lowest = 1;
            for (int i = 1; i < tokens.length; i++) {
                String[] leftFull = tokens[i].substring(tokens[i].indexOf('=') + 1).split("/");
                lowest = Math.min(lowest, Double.parseDouble(leftFull[0]) / Double.parseDouble(leftFull[1]));
            }
            return Math.round(lowest * 100) + "%";
        }
        return "-";
    }

    /** HOST: iotarget.host's {@code automatic 1} is "auto", {@code automatic 0} "kept"; no such file, "-". */
    static String hostMark(String iotargetHost) {
        if (iotargetHost.isEmpty()) return "-";
        return iotargetHost.contains("automatic 1") ? "auto" : "kept";
    }

    /** The value a row sorts by, largest first; a row without latency samples sorts last. */
    private static double sortValue(Row r, char sort) {
        return switch (sort) {
            case 'r' -> r.rate[LongListing.RIOS];
            case 'w' -> r.rate[LongListing.WIOS];
            case 'R' -> r.rate[LongListing.RBYTES];
            case 'W' -> r.rate[LongListing.WBYTES];
            case 'l' -> Double.isNaN(r.latency.avgUsec()) ? -1 : r.latency.avgUsec();
            case 'p' -> r.latency.p99Usec();
            case 'm' -> r.latency.heldPerSecond()[HeldAndLatency.THROTTLE];
            case 'c' -> r.latency.heldPerSecond()[HeldAndLatency.COST];
            default -> throw new IllegalArgumentException(String.valueOf(sort));
        };
    }


    private static String screen(List<Row> rows, char sort) {
        Comparator<Row> byName = Comparator.comparing(Row::group).thenComparing(Row::device);
        List<Row> sorted = new ArrayList<>(rows);
        sorted.sort(sort == 'g' ? byName : Comparator.<Row>comparingDouble(r -> -sortValue(r, sort)).thenComparing(byName));
        int width = Math.max("GROUP".length(), rows.stream().mapToInt(r -> r.group.length()).max().orElse(1));
        String format = "%-" + width + ROW;
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                "iotarget top - every second, sorted by %s; q quits%n"
                + "keys g r w R W l p m c sort by GROUP RIOPS WIOPS RBPS WBPS AVGLAT P99LAT MAXHELD COSTHELD; HELD: time waited in io.max, iocost per s%n",
                COLUMNS.get(KEYS.indexOf(sort))));
        sb.append(String.format(Locale.ROOT, format, "GROUP", "DEVICE", "RIOPS", "WIOPS", "RBPS", "WBPS", "AVGLAT", "P99LAT", "MAXHELD", "COSTHELD", "MIN", "BURST", "HOST"));
        for (Row r : sorted) {
            sb.append(String.format(Locale.ROOT, format, r.group, r.device, Math.round(r.rate[LongListing.RIOS]),
                    Math.round(r.rate[LongListing.WIOS]), LongListing.bytes(r.rate[LongListing.RBYTES]),
                    LongListing.bytes(r.rate[LongListing.WBYTES]), HeldAndLatency.duration(r.latency.avgUsec()),
                    HeldAndLatency.duration(r.latency.p99Usec()), HeldAndLatency.held(r.latency.heldPerSecond()[HeldAndLatency.THROTTLE]),
                    HeldAndLatency.held(r.latency.heldPerSecond()[HeldAndLatency.COST]), r.latency.minimum(), r.burst, r.host));
        }
        return sb.toString();
    }

    /** /dev/tty in single-key mode, its keys read by a daemon thread, and how to put it back as it was. */
    private static final class Terminal {
        private final String saved;
        private final BlockingQueue<Integer> keys = new LinkedBlockingQueue<>();
        private final AtomicBoolean restored = new AtomicBoolean();
        private final Thread hook = new Thread(this::restore, "iotarget-top-tty");

        private Terminal(String saved, InputStream in) {
            this.saved = saved;
            Thread reader = new Thread(() -> {
                try (in) {
                    int b;
                    do {
                        b = in.read();
                        keys.add(b);
                    } while (b != END_OF_INPUT);
                } catch (IOException e) {
                    keys.add(END_OF_INPUT);
                }
            }, "iotarget-top-keys");
            reader.setDaemon(true);
            reader.start();
        }

        static Terminal open() throws IOException {
            String saved = stty("-g").strip();
            Terminal t = new Terminal(saved, new FileInputStream("/dev/tty"));
            Runtime.getRuntime().addShutdownHook(t.hook);
            stty("-icanon", "-echo", "min", "1");
            return t;
        }

        /** The next key within {@code waitNs} (0: none came), or {@link #END_OF_INPUT}. */
        int key(long waitNs) {
            try {
                Integer k = keys.poll(waitNs, TimeUnit.NANOSECONDS);
                return k == null ? 0 : k;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return END_OF_INPUT;
            }
        }

        /** Once, from the CLI thread or the shutdown hook. */
        void restore() {
            if (!restored.compareAndSet(false, true)) return;
            try {
                stty(saved);
                if (Thread.currentThread() != hook) Runtime.getRuntime().removeShutdownHook(hook);
                else System.out.print(LEAVE);
            } catch (IOException | IllegalStateException e) {
                // the terminal is gone, or the JVM is already shutting down
            }
        }

        /** {@code stty ARGS < /dev/tty}; its output. */
        private static String stty(String... args) throws IOException {
            List<String> command = new ArrayList<>(List.of("stty"));
            command.addAll(List.of(args));
            Process p = new ProcessBuilder(command).redirectInput(new java.io.File("/dev/tty")).redirectErrorStream(true).start();
            String text = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            try {
                if (p.waitFor() != 0) throw new IOException("stty " + String.join(" ", args) + ": " + text.strip());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted");
            }
            return text;
        }
    }
}
