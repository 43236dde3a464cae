package io.iotarget.control;

import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code server.warm_up_ms} (issue 23 item 2): {@code iotarget serve} runs the data path on a
 * private server of its own before the configured one exists. What is asserted: it ran (IOs
 * completed) for at least the configured time and ended (its own report, from inside the
 * process, bounded generously for a loaded machine); the configured NBD port accepted no
 * connection before it ended (a probe connects from the moment the process is launched); and it
 * left no trace a tenant or an operator could see: the trees hold only the config's groups and
 * devices, the config's device has the number it has without a warm-up, its group's io.stat counts nothing, and every metric counts nothing yet
 * and names no device or group of the warm-up's.
 */
class WarmUpTest {
    private static final long WARM_UP_MS = 1500;
    private static final Pattern WARMED = Pattern.compile("warmed up the data path: (\\d+) requests in (\\d+) ms");

    @TempDir
    Path dir;

    /**
     * On one core the JVM took longer than the warm-up to build the private server (1.1-1.4 s),
     * and a warm-up timed from the start ran no request at all: it is timed from when the
     * private server is up.
     */
    @Test
    void aServerOnOneCoreStillRunsRequests() throws Exception {
        Tools.require("taskset (util-linux)", "/usr/bin/taskset");
        Path config = dir.resolve("one-core.json");
        Files.writeString(config, """
                {"server": {"control": "127.0.0.1:0", "nbd": "127.0.0.1:0", "warm_up_ms": 500},
                 "backends": {"disk": {"type": "memory", "size": "64M", "enable": 1}}}
                """);
        try (ServerProcess server = ServerProcess.start(config, dir, "0")) {
            String output = server.output();
            Matcher warmed = WARMED.matcher(output);
            assertTrue(warmed.find(), output);
            assertTrue(Long.parseLong(warmed.group(1)) > 0, output);
            assertTrue(Long.parseLong(warmed.group(2)) >= 500, output);
        }
    }

    @Test
    void serveWarmsUpBeforeItListensAndLeavesNoTrace() throws Exception {
        int port = freePort();
        Path config = dir.resolve("config.json");
        Files.writeString(config, """
                {"server": {"control": "127.0.0.1:0", "nbd": "127.0.0.1:%d", "warm_up_ms": %d},
                 "backends": {"disk": {"type": "memory", "size": "64M", "enable": 1}},
                 "cgroup": {"cgroup.subtree_control": "+io", "t": {"io.max": "disk riops=20000 wiops=20000"}},
                 "nbd": {"exports": {"t": {"backend": "disk", "cgroup": "t", "enable": 1}}}}
                """.formatted(port, WARM_UP_MS));
        AtomicLong firstAcceptNs = new AtomicLong();
        long launchNs = System.nanoTime();
        Thread probe = Thread.ofPlatform().daemon().start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                try (Socket s = new Socket()) {
                    s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
                    firstAcceptNs.set(System.nanoTime());
                    return;
                } catch (IOException e) {
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException stop) {
                        return;
                    }
                }
            }
        });
        try (ServerProcess server = ServerProcess.start(config, dir, null)) {
            probe.join(10_000);
            String output = server.output();
            Matcher warmed = WARMED.matcher(output);
            assertTrue(warmed.find(), output);
            long requests = Long.parseLong(warmed.group(1));
            long ms = Long.parseLong(warmed.group(2));
            assertTrue(requests > 0, output);
            assertTrue(ms >= WARM_UP_MS && ms < WARM_UP_MS + 30_000, "the warm-up ran its time and ended: " + output);
            assertTrue(output.indexOf("warmed up") < output.indexOf("serving"), output);
            assertTrue(firstAcceptNs.get() != 0, "the probe connected once the server served");
            long acceptedAfterMs = (firstAcceptNs.get() - launchNs) / 1_000_000;
            assertTrue(acceptedAfterMs >= ms, "the NBD port accepted " + acceptedAfterMs + " ms after launch, within the warm-up's " + ms + " ms");

            assertEquals("t/", cli(server, "ls", "").lines().filter(l -> l.endsWith("/")).reduce("", String::concat), "only the config's group");
            String devices = cli(server, "devices");
            assertEquals(2, devices.strip().lines().count(), devices);
            assertTrue(devices.contains("disk"), devices);
            assertTrue(devices.contains("259:0"), "the config's device has the first number, as without a warm-up: " + devices);
            String stat = cli(server, "read", "t/io.stat");
            assertFalse(Pattern.compile("=[1-9]").matcher(stat).find(), "no IO charged to the config's group: " + stat);
            assertEquals("t/\n", cli(server, "ls", "/nbd/exports"), "only the config's export");
            String metrics = metrics(server);
            assertFalse(metrics.contains("warm") || metrics.contains("\"iops\"") || metrics.contains("\"bps\"") || metrics.contains("\"free\""),
                        "no device or group of the warm-up's: " + metrics);
            // Every sample counts nothing yet but the info lines, the buffer pool's configured sizes and the server's clock.
            Matcher sample = Pattern.compile("(?m)^(iotarget_[a-z_]+)(\\{[^}]*\\})? (\\S+)$").matcher(metrics);
            int samples = 0;
            while (sample.find()) {
                String name = sample.group(1);
                if (name.endsWith("_info") || name.equals("iotarget_buffer_capacity_bytes") || name.equals("iotarget_buffer_group_share_bytes")
                    || name.equals("iotarget_clock_seconds")) continue;
                samples++;
                assertEquals(0, Double.parseDouble(sample.group(3)), sample.group());
            }
            assertTrue(samples > 100, "the counters are there: " + metrics);
        } finally {
            probe.interrupt();
        }
    }

    private String cli(ServerProcess server, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] full = new String[args.length + 2];
        full[0] = "--control";
        full[1] = server.control();
        System.arraycopy(args, 0, full, 2, args.length);
        int code = Main.run(full, Map.of("IOTARGET_RUNTIME_DIR", dir.toString()), new PrintStream(out, true, StandardCharsets.UTF_8),
                            new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, code, String.join(" ", args) + ": " + err.toString(StandardCharsets.UTF_8));
        return out.toString(StandardCharsets.UTF_8);
    }

    private String metrics(ServerProcess server) throws IOException, InterruptedException {
        String port = server.control().substring(server.control().lastIndexOf(':') + 1);
        String token = Files.readString(dir.resolve("control-127.0.0.1-" + port + ".token")).strip();
        try (HttpClient http = HttpClient.newHttpClient()) {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + server.control() + "/metrics"))
                                                      .header("Authorization", "Bearer " + token).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
            return r.body();
        }
    }
}
