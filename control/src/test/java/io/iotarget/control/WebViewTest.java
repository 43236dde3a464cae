package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The web view at {@code /}: who may see it (a one-time code from {@code iotarget web}
 * exchanged for a session cookie that admits only the view's reads), and what it shows, in
 * headless Chromium while fio reads through tenant a (io.max riops=2000) and writes through
 * tenant b. Screenshots go to target/ ({@code -Diotarget.web.screenshots=DIR} writes them there
 * as well, as for docs/).
 */
@Timeout(150)
class WebViewTest {
    private static final String SCREENSHOTS = "iotarget.web.screenshots";
    private static final String IO_MAX = "259:0 rbps=max wbps=max riops=2000 wiops=max\n";

    private Server server;
    private int port;
    @TempDir
    Path dir;

    @BeforeEach
    void start() throws Exception {
        server = Server.start(new ObjectMapper().readTree("""
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "backends": { "default": { "type": "memory", "size": "256M", "enable": 1 },
                                "scratch": { "type": "null", "size": "1G", "enable": 1 } },
                  "cgroup": { "io.cost.qos": "scratch enable=1",
                              "tenants": { "cgroup.subtree_control": "+io",
                                           "a": { "io.max": "default riops=2000", "io.weight": "200" },
                                           "b": { "io.max": "default wbps=33554432 wiops=1500" } },
                              "batch": { "io.max": "scratch rbps=52428800", "io.min": "scratch riops=50" } },
                  "nbd": { "exports": { "a": { "backend": "default", "cgroup": "tenants/a", "enable": 1 },
                                        "b": { "backend": "default", "cgroup": "tenants/b", "enable": 1 },
                                        "scratch": { "backend": "scratch", "cgroup": "batch", "enable": 1 } } } }"""), dir);
        port = server.controlAddress().getPort();
    }

    @AfterEach
    void stop() {
        server.close();
    }

    /** {@code iotarget web}'s address, as a user would copy it from the terminal. */
    private String loginUrl() {
        ByteArrayOutputStream out = new ByteArrayOutputStream(), err = new ByteArrayOutputStream();
        int exit = Main.run(new String[]{"--control", ControlEndpoint.hostPort(server.controlAddress()), "web"},
                Map.of("IOTARGET_RUNTIME_DIR", dir.toString()), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        String printed = out.toString(StandardCharsets.UTF_8);
        assertEquals(0, exit, err.toString(StandardCharsets.UTF_8));
        assertTrue(printed.matches("open http://127\\.0\\.0\\.1:" + port + "/login\\?code=[A-Za-z0-9_-]{43} {3}\\(once, within 2 minutes\\)\n"), printed);
        return printed.substring("open ".length(), printed.indexOf(' ', "open ".length()));
    }

    private record Response(int status, Map<String, String> headers, String body) {
    }

    /** One GET or POST with exactly these headers (Host added unless given). */
    private Response http(String method, String target, Map<String, String> headers) throws IOException {
        StringBuilder request = new StringBuilder(method + " " + target + " HTTP/1.1\r\n");
        if (!headers.containsKey("Host")) request.append("Host: 127.0.0.1:").append(port).append("\r\n");
        headers.forEach((k, v) -> request.append(k).append(": ").append(v).append("\r\n"));
        request.append("Content-Length: 0\r\nConnection: close\r\n\r\n");
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(request.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            String response = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            int end = response.indexOf("\r\n\r\n");
            List<String> head = response.substring(0, end).lines().toList();
            Map<String, String> h = new LinkedHashMap<>();
            for (String line : head.subList(1, head.size())) {
                int colon = line.indexOf(':');
                h.put(line.substring(0, colon).toLowerCase(), line.substring(colon + 1).strip());
            }
            return new Response(Integer.parseInt(head.getFirst().split(" ")[1]), h, response.substring(end + 4));
        }
    }

    private Response get(String target, String cookie, String... headers) throws IOException {
        Map<String, String> m = new LinkedHashMap<>();
        if (cookie != null) m.put("Cookie", cookie);
        for (int i = 0; i < headers.length; i += 2) m.put(headers[i], headers[i + 1]);
        return http("GET", target, m);
    }

    /** Logs in as the browser does: the code for a cookie. */
    private String session() throws IOException {
        String url = loginUrl();
        Response r = get(url.substring(url.indexOf("/login")), null);
        assertEquals(303, r.status(), r.body());
        assertEquals("/", r.headers().get("location"), "to the page, without the code");
        String setCookie = r.headers().get("set-cookie");
        assertTrue(setCookie.matches("iotarget-" + port + "=[A-Za-z0-9_-]{43}; Path=/; Max-Age=43200; HttpOnly; SameSite=Strict"), setCookie);
        return setCookie.substring(0, setCookie.indexOf(';'));
    }

    @Test
    void shouldTellHowToLogIn() {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        assertEquals(0, Main.run(new String[]{"help", "web"}, Map.of(), new PrintStream(out, true, StandardCharsets.UTF_8), System.err));
        String help = out.toString(StandardCharsets.UTF_8);
        assertTrue(help.startsWith("usage: iotarget web\n") && help.contains("/login?code="), help);
    }

    @Test
    void shouldShowNothingWithoutALiveSession() throws Exception {
        for (String target : List.of("/", "/web/view.js", "/metrics", "/v1/list?path=tenants", "/v1/read?path=tenants/a/io.max")) {
            for (String cookie : new String[]{null, "iotarget-" + port + "=not-a-session", "other=1"}) {
                Response r = get(target, cookie);
                assertEquals(401, r.status(), target + " " + cookie + ": " + r.body());
                assertFalse(r.body().contains("tenants") || r.body().contains("259:0") || r.body().contains("IotargetMetrics"),
                        "no data, no code: " + r.body());
            }
        }
        Response page = get("/", null);
        assertEquals("text/html; charset=utf-8", page.headers().get("content-type"));
        assertTrue(page.body().contains("This page needs a login.") && page.body().contains("bin/iotarget web"), page.body());

        String url = loginUrl();
        String login = url.substring(url.indexOf("/login"));
        assertEquals(401, get(login.substring(0, login.length() - 1) + "x", null).status(), "a wrong code");
        assertEquals(401, get("/login", null).status(), "no code");
        assertEquals(303, get(login, null).status());
        Response again = get(login, null);
        assertEquals(401, again.status(), "a code works once");
        assertTrue(again.body().contains("used up or expired"), again.body());
        assertFalse(again.headers().containsKey("set-cookie"));
    }

    @Test
    void shouldLetASessionReadTheViewAndNothingElse() throws Exception {
        String cookie = session();
        Response page = get("/", cookie);
        assertEquals(200, page.status());
        assertTrue(page.body().contains("<canvas id=\"chart-iops\">"), page.body());
        assertTrue(page.headers().get("content-security-policy").contains("script-src 'self'"), page.headers().toString());
        assertEquals("DENY", page.headers().get("x-frame-options"));
        assertEquals(200, get("/web/metrics.js", cookie).status());
        assertEquals(404, get("/web/../default-config.json", cookie).status(), "only the page's own files");
        assertTrue(get("/metrics", cookie).body().contains("iotarget_io_ops_total{"));
        assertEquals(IO_MAX, get("/v1/read?path=tenants/a/io.max", cookie).body());
        assertTrue(get("/v1/list?path=tenants", cookie).body().contains("a/\n"));
        assertEquals(200, get("/v1/devices", cookie).status());
        // Not the other trees (keys, paths), not save (keys), never a change.
        for (String target : List.of("/v1/read?path=/nbd/exports/a/backend", "/v1/list?path=/nvmet", "/v1/read?path=/cgroup/tenants/a/io.max",
                                     "/v1/save")) {
            assertEquals(401, get(target, cookie).status(), target);
        }
        Response write = http("POST", "/v1/write?path=tenants/a/io.max", Map.of("Cookie", cookie, "Content-Type", "application/octet-stream"));
        assertEquals(401, write.status(), write.body());
        assertEquals(401, http("POST", "/v1/web-login", Map.of("Cookie", cookie, "Content-Type", "application/octet-stream")).status(),
                "a session cannot make more logins");
        assertEquals(IO_MAX, server.mounts().read("tenants/a/io.max"), "unchanged");
        // The browser checks hold for cookies too.
        assertEquals(403, get("/metrics", cookie, "Host", "evil.example:" + port).status(), "a rebinding Host");
        assertEquals(403, get("/metrics", cookie, "Origin", "http://evil.example").status(), "another origin");
        assertEquals(403, get("/metrics", cookie, "Referer", "http://127.0.0.1:1/page").status(), "another port is another origin");
        assertEquals(200, get("/metrics", cookie, "Referer", "http://127.0.0.1:" + port + "/").status(), "the page's own fetches");
        assertEquals(401, get("/metrics", cookie.replace("iotarget-" + port, "iotarget-" + (port + 1))).status(),
                "another endpoint's cookie name");
    }

    /** metrics.js on an exposition with the latency histogram and throttled time that the server will export. */
    @Test
    void shouldComputeRatesLatencyAndThrottlingFromAnExposition() throws Exception {
        try (Chromium chromium = Chromium.start(1000, 700)) {
            chromium.navigate(loginUrl());
            String before = """
                    # TYPE iotarget_io_ops_total counter
                    iotarget_io_ops_total{group="/tenants/a",device="259:0",op="read"} 1000
                    iotarget_io_ops_total{group="/tenants/a",device="259:0",op="write"} 10
                    iotarget_io_ops_total{group="/tenants/a",device="259:1",op="read"} 0
                    iotarget_io_ops_total{group="/we \\\\ \\"ird\\"",device="259:0",op="read"} 5
                    iotarget_io_bytes_total{group="/tenants/a",device="259:0",op="read"} 4096000
                    iotarget_io_latency_seconds_bucket{group="/tenants/a",device="259:0",le="0.0001"} 100
                    iotarget_io_latency_seconds_bucket{group="/tenants/a",device="259:0",le="0.001"} 900
                    iotarget_io_latency_seconds_bucket{group="/tenants/a",device="259:0",le="0.01"} 1000
                    iotarget_io_latency_seconds_bucket{group="/tenants/a",device="259:0",le="+Inf"} 1010
                    iotarget_io_latency_seconds_sum{group="/tenants/a",device="259:0"} 0.5
                    iotarget_io_latency_seconds_count{group="/tenants/a",device="259:0"} 1010
                    iotarget_io_throttled_seconds_total{group="/tenants/a",device="259:0",policy="throttle"} 3.0
                    iotarget_io_throttled_seconds_total{group="/tenants/a",device="259:0",policy="cost"} 1.0
                    """;
            // 2 s later: 2000 more reads, each 1 ms on average; the 99th of them in the 1-10 ms bucket.
            String after = before.replace("op=\"read\"} 1000", "op=\"read\"} 3000")
                    .replace("op=\"read\"} 4096000", "op=\"read\"} 12288000")
                    .replace("le=\"0.0001\"} 100", "le=\"0.0001\"} 100").replace("le=\"0.001\"} 900", "le=\"0.001\"} 1900")
                    .replace("le=\"0.01\"} 1000", "le=\"0.01\"} 3000").replace("le=\"+Inf\"} 1010", "le=\"+Inf\"} 3010")
                    .replace("_sum{group=\"/tenants/a\",device=\"259:0\"} 0.5", "_sum{group=\"/tenants/a\",device=\"259:0\"} 2.5")
                    .replace("_count{group=\"/tenants/a\",device=\"259:0\"} 1010", "_count{group=\"/tenants/a\",device=\"259:0\"} 3010")
                    .replace("policy=\"throttle\"} 3.0", "policy=\"throttle\"} 4.5");
            JsonNode r = chromium.evaluate("(() => { const M = IotargetMetrics;"
                                           + " const r = M.rates(M.sample(" + js(before) + ", 1000), M.sample(" + js(after) + ", 3000));"
                                           + " const a = r.groups.get('/tenants/a'), none = M.rates(M.sample('x 1', 0), M.sample('x 2', 1000));"
                                           + " return { a, labels: [...r.groups.keys()], pair: r.pairs.has('/tenants/a\\u0000259:1'),"
                                           + "  noLatency: none.hasLatency, noThrottled: none.hasThrottled,"
                                           + "  empty: M.quantile(0.99, new Map([['+Inf', 0]])) }; })()");
            JsonNode a = r.get("a");
            assertEquals(1000.0, a.at("/iops/read").asDouble(), 1e-9);
            assertEquals(1000.0, a.at("/iops/total").asDouble(), 1e-9);
            assertEquals(4096000.0, a.at("/bps/read").asDouble(), 1e-9);
            assertEquals(0.001, a.get("latencyAvg").asDouble(), 1e-12);
            // Δ buckets: ≤0.1 ms 0, ≤1 ms 1000, ≤10 ms 2000, all 2000; rank 1980: 1 ms + 9 ms × 980/1000.
            assertEquals(0.00982, a.get("latencyP99").asDouble(), 1e-12);
            assertEquals(0.75, a.at("/throttled/throttle").asDouble(), 1e-12);
            assertEquals(0.0, a.at("/throttled/cost").asDouble(), 1e-12);
            assertEquals(0.75, a.at("/throttled/total").asDouble(), 1e-12);
            assertEquals("[\"/tenants/a\",\"/we \\\\ \\\"ird\\\"\"]", r.get("labels").toString(), "label escapes");
            assertTrue(r.get("pair").asBoolean());
            assertFalse(r.get("noLatency").asBoolean(), "no histogram: no data, not zero");
            assertFalse(r.get("noThrottled").asBoolean());
            assertTrue(r.get("empty").isNull());
        }
    }

    private static String js(String s) throws IOException {
        return new ObjectMapper().writeValueAsString(s);
    }

    @Test
    void shouldShowTheGroupsAndTheirMovingRatesWhileFioRuns() throws Exception {
        Tools.requireFioNbd();
        // a at depth 32: its io.max (riops=2000), not fio's round trips, must bound it even when the
        // machine is loaded: 2000/s at depth 8 needs round trips under 4 ms, at depth 32 under 16 ms.
        List<Process> fio = List.of(fio("a", "randread", "4k", 32), fio("b", "randwrite", "16k", 8), fio("scratch", "read", "64k", 8));
        try (Chromium chromium = Chromium.start(1400, 1060)) {
            chromium.navigate("http://127.0.0.1:" + port + "/");
            assertTrue(chromium.evaluate("document.body.innerText").asText().contains("This page needs a login."), "no session yet");

            chromium.navigate(loginUrl());
            assertEquals("http://127.0.0.1:" + port + "/", chromium.evaluate("location.href").asText(), "the code is out of the address bar");
            String groups = awaitValue(chromium, "[...document.querySelectorAll('#groups tr[data-group]')].map(r => r.dataset.group).join(' ')",
                    v -> v.contains("/tenants/b"));
            assertEquals("/ /batch /tenants /tenants/a /tenants/b", groups);
            assertTrue(awaitValue(chromium, "document.querySelector('#groups tr[data-group=\"/tenants/a\"]').innerText",
                    v -> v.contains("riops=2000")).contains("200"), "a's io.max and io.weight");
            assertTrue(awaitValue(chromium, "document.querySelector('#groups tr[data-group=\"/batch\"]').innerText",
                    v -> v.contains("riops=50 · met")).contains("rbps=50"), "batch's io.min, met (its reads go on it), and its io.max");
            assertTrue(awaitValue(chromium, "document.querySelector('#devices').innerText", v -> v.contains("nbd a → /tenants/a"))
                    .contains("nbd scratch → /batch"), "exports, by device");

            String iops = "document.querySelector('#groups tr[data-group=\"/tenants/a\"]').dataset.iops";
            long first = Long.parseLong(awaitValue(chromium, iops, v -> !v.isEmpty() && Long.parseLong(v) > 1000));
            int update = chromium.evaluate("Number(document.body.dataset.updates)").asInt();
            long second = -1;
            long deadline = System.nanoTime() + 15_000_000_000L;
            while (second < 0 || second == first) {       // two one-second rates of a busy tenant: equal at most by chance, for a while
                if (System.nanoTime() > deadline) fail("IOPS of tenants/a did not move from " + first);
                Thread.sleep(300);
                if (chromium.evaluate("Number(document.body.dataset.updates)").asInt() > update) second = Long.parseLong(chromium.evaluate(iops).asText());
            }
            assertNotEquals(first, second);
            // A one-second rate between two of the page's fetches, timed by the browser: on a busy
            // machine a fetch that comes late or early moves it by some 10% either way.
            for (long v : new long[]{first, second}) assertTrue(v >= 1500 && v <= 2500, "io.max riops=2000 holds a near 2000/s: " + v);
            assertFalse(chromium.evaluate("document.querySelector('#status').classList.contains('error')").asBoolean(),
                    chromium.evaluate("document.querySelector('#status').textContent").asText());
            Thread.sleep(System.getProperty(SCREENSHOTS) == null ? 8_000 : 75_000);      // lines for the picture; longer for docs/
            screenshot(chromium, "web-view.png");
        } finally {
            for (Process p : fio) p.destroy();
        }
    }

    /**
     * A host's group under cgroup_per_host carries a mark: nbdinfo's connect to an export with
     * cgroup_per_host 1 makes tenants/c/addr:127.0.0.1 ("host · auto"); a write to it makes it the
     * operator's ("host").
     */
    @Test
    void shouldMarkAHostsGroup() throws Exception {
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        var mounts = server.mounts();
        mounts.mkdir("tenants/c");
        mounts.mkdir("/nbd/exports/c");
        mounts.write("/nbd/exports/c/backend", "default");
        mounts.write("/nbd/exports/c/cgroup", "tenants/c");
        mounts.write("/nbd/exports/c/cgroup_per_host", "1");
        mounts.write("/nbd/exports/c/enable", "1");
        Tools.ok(30, "nbdinfo", "--size", "nbd://" + ControlEndpoint.hostPort(server.nbdAddresses().getFirst()) + "/c");
        try (Chromium chromium = Chromium.start(1400, 700)) {
            chromium.navigate(loginUrl());
            String row = "document.querySelector('#groups tr[data-group=\"/tenants/c/addr:127.0.0.1\"]')";
            assertEquals("auto", awaitValue(chromium, row + ".dataset.host", v -> !v.isEmpty()));
            assertTrue(chromium.evaluate(row + ".cells[0].innerText").asText().contains("addr:127.0.0.1host · auto"),
                    chromium.evaluate(row + ".cells[0].innerText").asText());
            assertEquals("undefined", chromium.evaluate("String(document.querySelector('#groups tr[data-group=\"/tenants/c\"]').dataset.host)").asText(),
                    "the export's group is no host's");
            mounts.write("tenants/c/addr:127.0.0.1/io.max", "default riops=5000");
            awaitValue(chromium, row + ".dataset.host", v -> v.equals("kept"));
            assertEquals("host", chromium.evaluate(row + ".querySelector('span.host').textContent").asText());
        }
    }

    private void screenshot(Chromium chromium, String name) throws Exception {
        chromium.screenshot(Path.of("target", name));
        String docs = System.getProperty(SCREENSHOTS);
        if (docs != null) chromium.screenshot(Path.of(docs, name));
    }

    private static String awaitValue(Chromium chromium, String expression, java.util.function.Predicate<String> wanted) throws Exception {
        long deadline = System.nanoTime() + 15_000_000_000L;
        String v = "";
        while (System.nanoTime() < deadline) {
            JsonNode n = chromium.evaluate("(() => { try { return String(" + expression + "); } catch (e) { return ''; } })()");
            v = n.asText();
            if (wanted.test(v)) return v;
            Thread.sleep(200);
        }
        return fail("not seen within 15 s: " + expression + " = " + v);
    }

    private Process fio(String export, String rw, String bs, int depth) throws IOException {
        String uri = "nbd://" + ControlEndpoint.hostPort(server.nbdAddresses().getFirst()) + "/" + export;
        return new ProcessBuilder("fio", "--name=web", "--ioengine=nbd", "--uri=" + uri, "--rw=" + rw, "--bs=" + bs,
                "--iodepth=" + depth, "--size=64M", "--time_based", "--runtime=120", "--output-format=terse")
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    }
}
