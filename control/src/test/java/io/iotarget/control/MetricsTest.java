package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code GET /metrics} while an NBD client runs IO: the text is valid exposition format (as
 * Prometheus' own promtool reads it), {@code iotarget_io_ops_total} and
 * {@code iotarget_io_bytes_total} agree with io.stat, and the endpoint's token rules hold.
 */
class MetricsTest {
    /** {@code iotarget_io_ops_total{device="259:0",group="/tenants/a",op="read"} 1234.0} */
    private static final Pattern IO_SAMPLE = Pattern.compile(
            "^iotarget_io_(ops|bytes)_total\\{device=\"([^\"]+)\",group=\"([^\"]+)\",op=\"([a-z]+)\"} (\\S+)$", Pattern.MULTILINE);
    private static final Pattern STAT_FIELD = Pattern.compile("([rwd])(bytes|ios)=(\\d+)");
    private static final List<String> GROUPS = List.of("/", "/tenants", "/tenants/a");

    private Server server;
    private String base;
    private String token;
    private final HttpClient http = HttpClient.newHttpClient();
    @TempDir
    Path dir;

    @BeforeEach
    void start() throws Exception {
        server = Server.start(new ObjectMapper().readTree("""
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "backends": { "default": { "type": "memory", "size": "64M", "enable": 1 } },
                  "cgroup": { "io.cost.qos": "default enable=1",
                              "tenants": { "cgroup.subtree_control": "+io", "a": { "io.max": "default riops=3000 wiops=3000", "io.min": "default riops=100" } } },
                  "nbd": { "exports": { "a": { "backend": "default", "cgroup": "tenants/a", "enable": 1 } } },
                  "nvmet": { "subsystems": { "nqn.2026-11.io.iotarget:a": { "attr_allow_any_host": 1,
                               "namespaces": { "1": { "device_path": "default", "cgroup": "tenants/a", "enable": 1 } } } } } }"""),
                dir.resolve("tokens"));
        int port = server.controlAddress().getPort();
        base = "http://127.0.0.1:" + port;
        token = Files.readString(dir.resolve("tokens").resolve("control-127.0.0.1-" + port + ".token")).strip();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    @Test
    void shouldAgreeWithIoStatWhileAnNbdClientRuns() throws Exception {
        Tools.requireFioNbd();
        Tools.require("promtool", "/usr/bin/promtool");
        String uri = "nbd://" + io.iotarget.control.http.ControlEndpoint.hostPort(server.nbdAddresses().getFirst()) + "/a";
        Process fio = new ProcessBuilder("fio", "--name=metrics", "--ioengine=nbd", "--uri=" + uri, "--rw=randrw", "--bs=4k",
                "--iodepth=8", "--size=16M", "--time_based", "--runtime=3", "--output-format=json")
                .redirectErrorStream(true).redirectOutput(dir.resolve("fio.out").toFile()).start();
        Map<String, Long> previous = new TreeMap<>();
        int scrapesDuringIo = 0;
        while (fio.isAlive()) {
            Map<String, Long> before = samples(scrape());
            Map<String, Long> stat = ioStat();
            Map<String, Long> after = samples(scrape());
            for (Map.Entry<String, Long> e : stat.entrySet()) {
                long b = before.getOrDefault(e.getKey(), 0L), a = after.getOrDefault(e.getKey(), 0L);
                assertTrue(previous.getOrDefault(e.getKey(), 0L) <= b && b <= e.getValue() && e.getValue() <= a,
                        e.getKey() + ": scrape " + b + ", io.stat " + e.getValue() + ", scrape " + a + " (counters only grow)");
            }
            previous = after;
            scrapesDuringIo++;
            Thread.sleep(200);                  // paces the scrapes over fio's run
        }
        assertEquals(0, fio.waitFor(), Files.readString(dir.resolve("fio.out")));
        assertTrue(scrapesDuringIo >= 3, "scraped " + scrapesDuringIo + " times during IO");

        String text = scrape();
        Path file = dir.resolve("metrics.txt");
        Files.writeString(file, text);
        Tools.Result check = Tools.run(30, List.of("sh", "-c", "promtool check metrics < " + file));
        assertEquals(0, check.exit(), "promtool check metrics:\n" + check.out() + "\n" + text);

        Map<String, Long> scraped = samples(text);
        Map<String, Long> stat = ioStat();
        assertEquals(stat, scraped, "once IO stopped, every (group, device, op) equals io.stat");
        long reads = scraped.get("ops /tenants/a 259:0 read"), writes = scraped.get("ops /tenants/a 259:0 write");
        assertTrue(reads > 1000 && writes > 1000, "the client's IO was counted: " + reads + " reads, " + writes + " writes");
        assertEquals(reads * 4096, scraped.get("bytes /tenants/a 259:0 read"));

        assertTrue(text.contains("iotarget_export_info{device=\"259:0\",export=\"a\",group=\"/tenants/a\"} 1"), text);
        assertTrue(text.contains("iotarget_nvmet_namespace_info{device=\"259:0\",group=\"/tenants/a\",nsid=\"1\",subsystem=\"nqn.2026-11.io.iotarget:a\"} 1"), text);
        assertTrue(text.contains("iotarget_device_info{device=\"259:0\",name=\"default\",type=\"memory\"} 1"), text);
        assertTrue(Pattern.compile("^iotarget_iocost_vrate_ratio\\{device=\"259:0\"} [0-9.]+$", Pattern.MULTILINE).matcher(text).find(), text);
        // iocost's QoS loop ran its 50 ms periods (the default qos) while fio did: counted, with why vrate moved.
        double periods = value(text, "iotarget_cost_periods_total{device=\"259:0\"}");
        assertTrue(periods >= 10, "3 s of IO under iocost: " + periods + " periods");
        assertTrue(value(text, "iotarget_cost_vrate_lowered_periods_total{device=\"259:0\"}")
                   + value(text, "iotarget_cost_vrate_raised_periods_total{device=\"259:0\"}") <= periods, text);
        assertTrue(text.contains("iotarget_cost_busy_level{device=\"259:0\"} "), text);
        assertTrue(text.contains("\niotarget_host_groups_removed_total 0.0\n"), "no per-host group here: " + text);
        assertTrue(text.contains("iotarget_buffer_capacity_bytes "), text);
        assertTrue(text.contains("iotarget_connections{frontend=\"nbd\"} 0.0"), "fio's connection is closed:\n" + text);

        // riops=3000 wiops=3000 hold a QD8 client back; every completion is a latency sample.
        double held = value(text, "iotarget_io_throttled_seconds_total{device=\"259:0\",group=\"/tenants/a\",policy=\"throttle\"}");
        assertTrue(held > 0.1, "io.max held tenants/a's requests: " + held + " s");
        assertEquals(0.0, value(text, "iotarget_io_throttled_seconds_total{device=\"259:0\",group=\"/tenants/a\",policy=\"latency\"}"));
        assertEquals(held, value(text, "iotarget_io_throttled_seconds_total{device=\"259:0\",group=\"/tenants\",policy=\"throttle\"}"), 1e-6,
                "hierarchical: tenants holds what a held");
        assertEquals((double) (reads + writes), value(text, "iotarget_io_latency_seconds_count{device=\"259:0\",group=\"/tenants/a\"}"));
        assertEquals((double) (reads + writes), value(text, "iotarget_io_latency_seconds_bucket{device=\"259:0\",group=\"/tenants/a\",le=\"+Inf\"}"));
        // io.min riops=100 under io.max's 3000: about 100 reads a second go on the minimum, which is met.
        assertEquals(1.0, value(text, "iotarget_io_min_granted_ratio{device=\"259:0\",group=\"/tenants/a\"}"));
        double minIos = value(text, "iotarget_io_min_ios_total{device=\"259:0\",group=\"/tenants/a\"}");
        assertTrue(minIos >= 100 && minIos <= 500, "3 s at riops=100 went on the minimum: " + minIos);
        assertEquals(minIos, value(text, "iotarget_io_min_ios_total{device=\"259:0\",group=\"/tenants\"}"), "hierarchical");
        assertTrue(server.mounts().read("/cgroup/tenants/a/iotarget.io.stat").contains(" min_pct=100.00 min_ios=" + (long) minIos + " "),
                server.mounts().read("/cgroup/tenants/a/iotarget.io.stat"));
        double avg = value(text, "iotarget_io_latency_seconds_sum{device=\"259:0\",group=\"/tenants/a\"}") / (reads + writes);
        assertTrue(avg > 0.0001 && avg < 0.01, "held to 3000 IOPS per direction, a request takes a fraction of a ms or more: " + avg);
    }

    /** io.max.burst's credit, per limit in effect: full for a group that has not spent it, absent for a dormant burst. */
    @Test
    void shouldShowTheBurstCreditLeft() throws Exception {
        server.engine().controller().write("tenants/a/io.max.burst", "259:0 riops=5000 wiops=7000 wbps=1048576 len=2");
        String text = scrape();
        assertEquals(4000.0, value(text, "iotarget_io_burst_credit{device=\"259:0\",group=\"/tenants/a\",limit=\"riops\"}"), text);
        assertEquals(4000.0, value(text, "iotarget_io_burst_credit_full{device=\"259:0\",group=\"/tenants/a\",limit=\"riops\"}"), text);
        assertEquals(8000.0, value(text, "iotarget_io_burst_credit{device=\"259:0\",group=\"/tenants/a\",limit=\"wiops\"}"), text);
        assertTrue(!text.contains("limit=\"wbps\""), "io.max does not limit wbps: that burst is dormant\n" + text);
    }

    /** The value of one sample in exposition text, by its name and labels as written. */
    private static double value(String text, String series) {
        Matcher m = Pattern.compile("^" + Pattern.quote(series) + " (\\S+)$", Pattern.MULTILINE).matcher(text);
        assertTrue(m.find(), series + " in\n" + text);
        return Double.parseDouble(m.group(1));
    }

    @Test
    void shouldNeedTheTokenAndServeOnlyGet() throws Exception {
        HttpResponse<String> none = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(401, none.statusCode());
        assertTrue(none.body().contains("needs its token"), none.body());
        HttpResponse<String> post = http.send(HttpRequest.newBuilder(URI.create(base + "/metrics")).header("Authorization", "Bearer " + token)
                .header("Content-Type", "application/octet-stream").POST(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(405, post.statusCode());
        HttpResponse<String> other = http.send(HttpRequest.newBuilder(URI.create(base + "/metricsx")).header("Authorization", "Bearer " + token).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(404, other.statusCode());
        HttpResponse<String> ok = get("/metrics");
        assertEquals(200, ok.statusCode());
        assertEquals("text/plain; version=0.0.4; charset=utf-8", ok.headers().firstValue("Content-Type").orElse(""));
    }

    private HttpResponse<String> get(String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base + path)).header("Authorization", "Bearer " + token).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private String scrape() throws Exception {
        HttpResponse<String> r = get("/metrics");
        assertEquals(200, r.statusCode(), r.body());
        return r.body();
    }

    /** "ops /tenants/a 259:0 read" → value, for every io sample of a scrape. */
    private static Map<String, Long> samples(String text) {
        Map<String, Long> m = new TreeMap<>();
        Matcher s = IO_SAMPLE.matcher(text);
        while (s.find()) m.put(s.group(1) + " " + s.group(3) + " " + s.group(2) + " " + s.group(4), (long) Double.parseDouble(s.group(5)));
        return m;
    }

    /** The same keys from io.stat of every group, through the control tree as the CLI reads it. */
    private Map<String, Long> ioStat() throws Exception {
        Map<String, Long> m = new TreeMap<>();
        for (String group : GROUPS) {
            String text = server.mounts().read(group.equals("/") ? "io.stat" : group.substring(1) + "/io.stat");
            for (String line : text.split("\n")) {
                if (line.isBlank()) continue;
                String device = line.split(" ", 2)[0];
                for (String op : List.of("read", "write", "discard")) {
                    m.put("ops " + group + " " + device + " " + op, 0L);
                    m.put("bytes " + group + " " + device + " " + op, 0L);
                }
                Matcher f = STAT_FIELD.matcher(line);
                while (f.find()) {
                    String op = switch (f.group(1)) {
                        case "r" -> "read";
                        case "w" -> "write";
                        default -> "discard";
                    };
                    m.put((f.group(2).equals("ios") ? "ops " : "bytes ") + group + " " + device + " " + op, Long.parseLong(f.group(3)));
                }
            }
        }
        return m;
    }
}
