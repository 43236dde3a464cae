package io.iotarget.control;

import io.iotarget.control.LongListing.Sample;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlClient.Reply;

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
 * io.stat read each interval, {@link Sample#ratesSince}); nothing is added to the IO path.
 * <pre>
 *  iotarget top — every 1 s, sorted by RIOPS (keys: g r w R W, q quits)
 *  GROUP      DEVICE   RIOPS  WIOPS   RBPS   WBPS
 *  tenants    259:0     1995      0   7.8M      0
 * </pre>
 * The terminal is /dev/tty, put in non-canonical mode without echo ({@code stty -icanon -echo}) so
 * that one key acts at once, and drawn on the alternate screen with plain ANSI sequences; the
 * saved {@code stty -g} settings and the main screen come back however top ends: q, end of input,
 * an error, or Ctrl-C (a signal: the JVM's shutdown hook restores them).
 * Threads: the CLI thread samples and draws; one daemon thread reads keys from the terminal.
 */
final class Top {
    /** Sort keys and the column each sorts by, descending (the group name ascending). */
    private static final String KEYS = "grwRW";
    private static final List<String> COLUMNS = List.of("GROUP", "RIOPS", "WIOPS", "RBPS", "WBPS");
    private static final String ROW = "s %-8s %6s %6s %6s %6s%n";
    private static final String ENTER = "\033[?1049h\033[?25l", LEAVE = "\033[?25h\033[?1049l", HOME_CLEAR = "\033[H\033[2J";
    private static final int END_OF_INPUT = -1;

    private final ControlClient client;
    private final Duration interval;

    Top(ControlClient client, Duration interval) {
        this.client = client;
        this.interval = interval;
    }

    /** One row: a group on one device and its rates, indexed as {@link Sample#ratesSince}. */
    private record Row(String group, String device, double[] rate) {
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
            Map<String, Sample> before = samples(groups(""));
            List<Row> rows = List.of();
            char sort = 'r';
            long next = System.nanoTime() + interval.toNanos();
            while (true) {
                int key = tty.key(Math.max(0, next - System.nanoTime()));
                if (key == 'q' || key == END_OF_INPUT) return new Reply(200, "", null);
                if (key > 0 && KEYS.indexOf(key) >= 0) sort = (char) key;
                if (System.nanoTime() >= next) {
                    Map<String, Sample> now = samples(groups(""));
                    rows = rows(before, now);
                    before = now;
                    next = System.nanoTime() + interval.toNanos();
                }
                out.print(HOME_CLEAR + screen(rows, sort));        // a key redraws at once, in its order
                out.flush();
            }
        } finally {
            out.print(LEAVE);
            out.flush();
            tty.restore();
        }
    }

    /** {@code group} and every group below it, parents first. */
    private List<String> groups(String group) throws IOException {
        List<String> all = new ArrayList<>(List.of(group));
        Reply listing = client.get("list", group);
        if (!listing.ok()) return all;        // removed meanwhile
        for (String e : listing.body().lines().toList()) {
            if (e.endsWith("/")) all.addAll(groups(LongListing.join(group, e.substring(0, e.length() - 1))));
        }
        return all;
    }

    private Map<String, Sample> samples(List<String> groups) throws IOException {
        Map<String, Sample> m = new HashMap<>();
        for (String g : groups) m.put(g, Sample.of(client, g));
        return m;
    }

    /** A row per group and device now; a group new since {@code before} is left for the next tick. */
    private static List<Row> rows(Map<String, Sample> before, Map<String, Sample> now) {
        List<Row> rows = new ArrayList<>();
        for (Map.Entry<String, Sample> g : now.entrySet()) {
            Sample then = before.get(g.getKey());
            if (then == null) continue;
            for (String device : g.getValue().byDevice().keySet()) {
                rows.add(new Row(LongListing.shown(g.getKey()), device, g.getValue().ratesSince(then, device)));
            }
        }
        return rows;
    }

    private static String screen(List<Row> rows, char sort) {
        Comparator<Row> byName = Comparator.comparing(Row::group).thenComparing(Row::device);
        int column = switch (sort) {
            case 'r' -> LongListing.RIOS;
            case 'w' -> LongListing.WIOS;
            case 'R' -> LongListing.RBYTES;
            case 'W' -> LongListing.WBYTES;
            default -> -1;
        };
        List<Row> sorted = new ArrayList<>(rows);
        sorted.sort(column < 0 ? byName : Comparator.<Row>comparingDouble(r -> -r.rate[column]).thenComparing(byName));
        int width = Math.max("GROUP".length(), rows.stream().mapToInt(r -> r.group.length()).max().orElse(1));
        String format = "%-" + width + ROW;
        StringBuilder sb = new StringBuilder(String.format(Locale.ROOT,
                "iotarget top - every second, sorted by %s (keys: g r w R W sort by GROUP RIOPS WIOPS RBPS WBPS; q quits)%n",
                COLUMNS.get(KEYS.indexOf(sort))));
        sb.append(String.format(Locale.ROOT, format, "GROUP", "DEVICE", "RIOPS", "WIOPS", "RBPS", "WBPS"));
        for (Row r : sorted) {
            sb.append(String.format(Locale.ROOT, format, r.group, r.device, Math.round(r.rate[LongListing.RIOS]),
                    Math.round(r.rate[LongListing.WIOS]), LongListing.bytes(r.rate[LongListing.RBYTES]),
                    LongListing.bytes(r.rate[LongListing.WBYTES])));
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
