package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code iotarget top} in a real terminal: tmux runs the CLI (Main on the test's classpath, as
 * bin/iotarget runs its jar) in a detached pane while fio reads through tenant a (io.max riops=2000,
 * so io.max holds most of its 8 requests in flight) and writes through tenant b (no limit; fio
 * itself paces it to 500 writes/s at queue depth 1, under io.max wiops=1000 with a burst to 3000,
 * whose credit it never spends), and a third fio reads through export c, whose hosts each pay in
 * their own child of tenant c (cgroup_per_host); the test reads the screen with capture-pane
 * and types keys.
 */
@Timeout(30)
class TopTest {
    private Server server;
    private String control;
    private final String socket = "iotarget-top-" + ProcessHandle.current().pid();
    @TempDir
    Path dir;

    @BeforeEach
    void start() throws Exception {
        server = Server.start(new ObjectMapper().readTree("""
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "backends": { "default": { "type": "memory", "size": "64M", "enable": 1 } },
                  "cgroup": { "tenants": { "cgroup.subtree_control": "+io",
                                           "a": { "io.max": "default riops=2000" },
                                           "b": { "io.max": "default wiops=1000", "io.max.burst": "default wiops=3000" },
                                           "c": { } } },
                  "nbd": { "exports": { "a": { "backend": "default", "cgroup": "tenants/a", "enable": 1 },
                                        "b": { "backend": "default", "cgroup": "tenants/b", "enable": 1 },
                                        "c": { "backend": "default", "cgroup": "tenants/c", "cgroup_per_host": 1, "enable": 1 } } } }"""), dir);
        control = ControlEndpoint.hostPort(server.controlAddress());
    }

    @AfterEach
    void stop() throws Exception {
        tmux("kill-server");
        server.close();
    }

    @Test
    void shouldShowLiveRatesSortByKeyAndGiveTheTerminalBack() throws Exception {
        Tools.requireFioNbd();
        Tools.require("tmux", "/usr/bin/tmux");
        List<Process> fio = List.of(fio("a", "randread", "--iodepth=8"), fio("b", "randwrite", "--iodepth=1", "--rate_iops=500"),
                fio("c", "randread", "--iodepth=1", "--rate_iops=100"));
        try {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            String top = "env IOTARGET_RUNTIME_DIR=" + dir + " " + java + " -XX:TieredStopAtLevel=1 -cp " + CliProcess.classpath()
                         + " " + Main.class.getName() + " --control " + control + " top";
            // Twice: ended by q, then by Ctrl-C (the shell traps SIGINT so that it survives it; top gets the default).
            String script = String.join("; ", "trap : INT", "stty -g > before", top, "echo $? > exit", "stty -g > after",
                    top, "stty -g > after-interrupt", "sleep 60");
            assertEquals(0, tmux("new-session", "-d", "-x", "150", "-y", "20", "-c", dir.toString(), "sh", "-c", script).exit());

            String first = screenWhere(s -> riops(s, "tenants/a") > 0);
            String second = screenWhere(s -> !s.equals(first) && riops(s, "tenants/a") > 0);
            for (String s : List.of(first, second)) {
                long riops = riops(s, "tenants/a");
                assertTrue(riops >= 1500 && riops <= 2100, "io.max riops=2000 holds a near 2000 reads/s:\n" + s);
            }
            assertTrue(second.contains("sorted by RIOPS"), second);
            assertTrue(second.indexOf("tenants/a ") < second.indexOf("tenants/b "), "most reads first:\n" + second);

            // a waits in io.max and so takes longer than b, which nothing holds.
            String[] a = row(second, "tenants/a"), b = row(second, "tenants/b");
            assertTrue(usec(a[MAXHELD]) >= 2e6, "about 6-7 of a's 8 requests wait in io.max all along:\n" + second);
            assertEquals("0", b[MAXHELD], "nothing holds b:\n" + second);
            assertEquals("0", a[COSTHELD], "iocost is off:\n" + second);
            assertEquals("-", a[MIN], "no io.min, nothing to meet:\n" + second);
            assertEquals("-", a[BURST], "a has no burst:\n" + second);
            assertEquals("100%", b[BURST], "b writes 500/s under its wiops=1000: its burst credit stays full:\n" + second);
            assertEquals("-", a[HOST], "an ordinary group:\n" + second);
            String host = "tenants/c/addr:127.0.0.1";       // fio's NBD client has no TLS identity: its address names its group
            assertEquals("auto", screenRow(host, r -> true)[HOST], "made by fio's connect, used by nobody since");
            assertEquals("-", screenRow("tenants/c", r -> true)[HOST], "the export's group is no host's");
            server.mounts().write(host + "/io.max", "default riops=5000");
            screenRow(host, r -> r[HOST].equals("kept"));      // written to: an ordinary group now
            assertTrue(usec(a[AVGLAT]) >= 1000 && usec(a[AVGLAT]) <= 10_000, "8 in flight at 2000/s take ~4 ms each:\n" + second);
            assertTrue(usec(a[P99LAT]) >= usec(a[AVGLAT]), second);
            assertTrue(usec(b[AVGLAT]) < usec(a[AVGLAT]) / 2, "b's requests are not held:\n" + second);

            tmux("send-keys", "m");
            String byHeld = screenWhere(s -> s.contains("sorted by MAXHELD"));
            assertTrue(byHeld.indexOf("tenants/a ") < byHeld.indexOf("tenants/b "), "most held first:\n" + byHeld);
            tmux("send-keys", "l");
            String byLatency = screenWhere(s -> s.contains("sorted by AVGLAT"));
            assertTrue(byLatency.indexOf("tenants/a ") < byLatency.indexOf("tenants/b "), "slowest first:\n" + byLatency);

            tmux("send-keys", "w");
            String byWrites = screenWhere(s -> s.contains("sorted by WIOPS"));
            assertTrue(byWrites.indexOf("tenants/b ") < byWrites.indexOf("tenants/a "), "most writes first:\n" + byWrites);

            tmux("send-keys", "q");
            await("after");
            assertEquals("0", Files.readString(dir.resolve("exit")).strip(), "q quits with status 0");
            assertEquals(Files.readString(dir.resolve("before")), Files.readString(dir.resolve("after")), "the terminal's settings are back");

            screenWhere(s -> s.contains("sorted by RIOPS"));
            tmux("send-keys", "C-c");
            await("after-interrupt");
            assertEquals(Files.readString(dir.resolve("before")), Files.readString(dir.resolve("after-interrupt")), "and after Ctrl-C");
            assertTrue(!pane().contains("sorted by"), "the main screen is back:\n" + pane());
        } finally {
            for (Process p : fio) p.destroy();
        }
    }

    private void await(String file) throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (!Files.exists(dir.resolve(file)) && System.nanoTime() < deadline) Thread.sleep(100);
    }

    private Process fio(String export, String rw, String... options) throws IOException {
        String uri = "nbd://" + ControlEndpoint.hostPort(server.nbdAddresses().getFirst()) + "/" + export;
        List<String> command = new ArrayList<>(List.of("fio", "--name=top", "--ioengine=nbd", "--uri=" + uri, "--rw=" + rw, "--bs=4k",
                "--size=16M", "--time_based", "--runtime=20", "--output-format=terse"));
        command.addAll(List.of(options));
        return new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    }

    /** Columns of a row: GROUP DEVICE RIOPS WIOPS RBPS WBPS AVGLAT P99LAT MAXHELD COSTHELD MIN BURST HOST. */
    private static final int AVGLAT = 6, P99LAT = 7, MAXHELD = 8, COSTHELD = 9, MIN = 10, BURST = 11, HOST = 12;

    /** {@code group}'s row split into its columns, or null while it is not on the screen. */
    private static String[] row(String screen, String group) {
        for (String line : screen.lines().toList()) {
            String[] f = line.strip().split(" +");
            if (f.length == 13 && f[0].equals(group) && f[2].matches("[0-9]+")) return f;
        }
        return null;
    }

    /** The RIOPS column of {@code group}'s row, or -1 while it is not on the screen. */
    private static long riops(String screen, String group) {
        String[] f = row(screen, group);
        return f == null ? -1 : Long.parseLong(f[2]);
    }

    /** top's "340us", "4.2ms", "1.5s" in µs; "0" is 0, "-" (no requests) is NaN. */
    private static double usec(String shown) {
        if (shown.equals("-")) return Double.NaN;
        if (shown.endsWith("us")) return Double.parseDouble(shown.substring(0, shown.length() - 2));
        if (shown.endsWith("ms")) return Double.parseDouble(shown.substring(0, shown.length() - 2)) * 1e3;
        if (shown.endsWith("s")) return Double.parseDouble(shown.substring(0, shown.length() - 1)) * 1e6;
        return Double.parseDouble(shown);
    }

    /** {@code group}'s row once it is on the screen and {@code wanted}. */
    private String[] screenRow(String group, Predicate<String[]> wanted) throws Exception {
        return row(screenWhere(s -> row(s, group) != null && wanted.test(row(s, group))), group);
    }

    private String screenWhere(Predicate<String> wanted) throws Exception {
        long deadline = System.nanoTime() + 8_000_000_000L;
        String s = pane();
        while (!wanted.test(s)) {
            if (System.nanoTime() > deadline) fail("not seen on the screen within 8 s:\n" + s);
            Thread.sleep(200);
            s = pane();
        }
        return s;
    }

    private String pane() throws Exception {
        return tmux("capture-pane", "-p").out();
    }

    private record Result(int exit, String out) {
    }

    /** tmux on this test's own server socket. */
    private Result tmux(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("tmux", "-L", socket));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        return new Result(p.waitFor(), out);
    }
}
