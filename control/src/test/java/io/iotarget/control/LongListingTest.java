package io.iotarget.control;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.http.ControlToken;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code iotarget help} and {@code iotarget ls -l}: the CLI tells what it does and what each tenant is doing. */
class LongListingTest {
    private Server server;
    private String control;
    @TempDir
    Path tokens;

    @BeforeEach
    void start() throws Exception {
        server = Server.start(new ObjectMapper().readTree("""
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "backends": { "default": { "type": "memory", "size": "64M", "enable": 1 } },
                  "cgroup": { "tenants": { "cgroup.subtree_control": "+io",
                                           "a": { "io.max": "default riops=2000 wbps=104857600", "io.weight": "default 300" },
                                           "b": {} } },
                  "nbd": { "exports": { "a": { "backend": "default", "cgroup": "tenants/a", "enable": 1 } } } }"""), tokens);
        control = ControlEndpoint.hostPort(server.controlAddress());
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private record Result(int code, String out, String err) {
    }

    private Result cli(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        String[] full = new String[args.length + 2];
        full[0] = "--control";
        full[1] = control;
        System.arraycopy(args, 0, full, 2, args.length);
        int code = Main.run(full, Map.of("IOTARGET_RUNTIME_DIR", tokens.toString()), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void shouldShowLimitsAndLiveRatesOfEachGroup() throws Exception {
        Tools.requireFioNbd();
        String uri = "nbd://" + ControlEndpoint.hostPort(server.nbdAddresses().getFirst()) + "/a";
        Process fio = new ProcessBuilder("fio", "--name=ls", "--ioengine=nbd", "--uri=" + uri, "--rw=randread", "--bs=4k",
                "--iodepth=8", "--size=16M", "--time_based", "--runtime=4", "--output-format=terse")
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        try {
            Thread.sleep(1_000);                                     // past fio's start-up
            Result r = cli("ls", "-l", "tenants");
            assertEquals(0, r.code, r.err);
            List<String> lines = r.out.lines().toList();
            assertEquals(List.of("GROUP", "DEVICE", "RIOPS", "WIOPS", "RBPS", "WBPS", "AVGLAT", "MAXHELD", "WEIGHT", "IO.MAX"),
                    List.of(lines.get(0).split(" +")));
            String[] tenants = lines.get(1).split(" +", 10);
            String[] a = lines.get(2).split(" +", 10);
            String[] b = lines.get(3).split(" +", 10);
            assertEquals(4, lines.size(), r.out);
            assertEquals(List.of("tenants", "259:0"), List.of(tenants).subList(0, 2), r.out);
            assertEquals(List.of("tenants/a", "259:0"), List.of(a).subList(0, 2), r.out);
            long riops = Long.parseLong(a[2]);
            assertTrue(riops >= 1500 && riops <= 2100, "io.max riops=2000 holds a near 2000 reads/s: " + r.out);
            assertEquals("0", a[3], r.out);
            assertTrue(a[4].endsWith("M") && Double.parseDouble(a[4].replace("M", "")) >= 5.8
                       && Double.parseDouble(a[4].replace("M", "")) <= 8.3, "2000 × 4 KiB/s is 7.8M: " + r.out);
            assertTrue(a[6].endsWith("ms"), "8 in flight at 2000/s take ~4 ms each: " + r.out);
            assertTrue(a[7].endsWith("s") && !a[7].endsWith("ms"), "seconds of waiting per second in io.max: " + r.out);
            assertEquals(List.of("300", "wbps=104857600 riops=2000"), List.of(a).subList(8, 10), "io.max in its own order: " + r.out);
            assertEquals(List.of("100", "-"), List.of(tenants).subList(8, 10), "defaults: " + r.out);
            assertTrue(Math.abs(Long.parseLong(tenants[2]) - riops) <= riops / 10, "the parent counts its child's IO: " + r.out);
            assertEquals(List.of("tenants/b", "-", "-", "-", "-", "-", "-", "-", "100", "-"), List.of(b), "b has done nothing yet: " + r.out);
        } finally {
            assertEquals(0, fio.waitFor());
        }
    }

    /**
     * Issue 19 item 6: ten thousand groups took 13.3 s, six requests per group. Now two
     * read-below requests answer for all of them (and a list): about 2 s with the 1 s interval on
     * this test's cold JVM, 4 s on a machine at load 18. The bound leaves room for that load and
     * none for sixty thousand requests.
     */
    @Test
    void shouldListTenThousandGroupsInTwoRequests() throws Exception {
        server.mounts().write("tenants/b/cgroup.subtree_control", "+io");
        for (int i = 0; i < 10_000; i++) server.mounts().mkdir("tenants/b/g" + i);
        server.mounts().write("tenants/b/g7/io.max", "default riops=700");
        long startNs = System.nanoTime();
        Result r = cli("ls", "-l", "tenants/b");
        double seconds = (System.nanoTime() - startNs) / 1e9;
        assertEquals(0, r.code, r.err);
        List<String> lines = r.out.lines().toList();
        assertEquals(1 + 1 + 10_000, lines.size());
        assertTrue(lines.stream().anyMatch(l -> l.matches("tenants/b/g9999 +- +- +- +- +- +- +- +100 +-")),
                "the last group, idle: " + lines.getLast());
        assertTrue(lines.stream().anyMatch(l -> l.startsWith("tenants/b/g7 ") && l.endsWith("riops=700")), "g7's io.max");
        System.out.printf("[ls -l] 10,000 groups in %.2f s, 1 s of it the rates' interval%n", seconds);
        assertTrue(seconds < 6, "ls -l of 10,000 groups took " + seconds + " s");
    }

    /** {@code GET /v1/read-below?path=DIR&files=FILES} with the token: the status and the body. */
    private HttpResponse<String> readBelow(String dir, String files) throws Exception {
        String token = ControlToken.read(tokens.resolve("control-" + control.replace(':', '-') + ".token"));
        try (HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).proxy(HttpClient.Builder.NO_PROXY).build()) {
            return http.send(HttpRequest.newBuilder(URI.create("http://" + control + "/v1/read-below?path=" + URLEncoder.encode(dir, StandardCharsets.UTF_8)
                                                               + "&files=" + URLEncoder.encode(files, StandardCharsets.UTF_8)))
                    .header("Authorization", "Bearer " + token).build(), HttpResponse.BodyHandlers.ofString());
        }
    }

    @Test
    void shouldReadFilesOfEveryDirectoryBelowInOneRequest() throws Exception {
        TypeReference<LinkedHashMap<String, Map<String, String>>> byDirectory = new TypeReference<>() { };
        HttpResponse<String> tenants = readBelow("tenants", "io.max,io.weight");
        assertEquals(200, tenants.statusCode(), tenants.body());
        Map<String, Map<String, String>> below = new ObjectMapper().readValue(tenants.body(), byDirectory);
        assertEquals(List.of("tenants", "tenants/a", "tenants/b"), List.copyOf(below.keySet()));
        assertEquals("259:0 rbps=max wbps=104857600 riops=2000 wiops=max\n", below.get("tenants/a").get("io.max"));
        assertEquals("default 300\n", below.get("tenants/a").get("io.weight"));
        Map<String, String> root = new ObjectMapper().readValue(readBelow("", "io.max,cgroup.subtree_control").body(), byDirectory).get("");
        assertTrue(root.containsKey("io.max") && root.get("io.max") == null, "the root has no io.max: null, " + root);
        assertEquals("io\n", root.get("cgroup.subtree_control"));
        HttpResponse<String> refused = readBelow("tenants/nope", "io.max");
        assertEquals(404, refused.statusCode());
        assertEquals("No such file or directory (ENOENT): no group tenants/nope\n", refused.body());
    }

    @Test
    void shouldShowAttributesWithTheirValuesElsewhere() {
        Result r = cli("ls", "-l", "/nbd/exports/a");
        assertEquals(0, r.code, r.err);
        assertTrue(r.out.lines().anyMatch(l -> l.matches("backend +default")), r.out);
        assertTrue(r.out.lines().anyMatch(l -> l.matches("cgroup +/tenants/a")), r.out);
        assertTrue(r.out.lines().anyMatch(l -> l.matches("enable +1")), r.out);
        Result missing = cli("ls", "-l", "tenants/nope");
        assertEquals(1, missing.code);
        assertEquals("iotarget: ls -l tenants/nope: No such file or directory (ENOENT): no group tenants/nope\n", missing.err);
    }

    @Test
    void shouldTellEveryCommand() {
        Result list = cli("help");
        assertEquals(0, list.code);
        for (String command : List.of("read PATH", "write PATH VALUE", "mkdir PATH", "rmdir PATH", "ls [-l] [PATH]", "ln TARGET LINK",
                "unlink LINK", "devices", "watch PATH TRIGGER", "help [COMMAND]")) {
            assertTrue(list.out.contains("\n  " + command + " "), command + " in\n" + list.out);
        }
        Result ls = cli("help", "ls");
        assertEquals(0, ls.code);
        assertTrue(ls.out.startsWith("usage: iotarget ls [-l] [PATH]\n"), ls.out);
        assertTrue(ls.out.contains("iotarget ls -l tenants"), ls.out);
        Result watch = cli("help", "watch");
        assertTrue(watch.out.startsWith("usage: iotarget watch PATH TRIGGER\n"), watch.out);
        assertTrue(watch.out.contains("iotarget watch tenants/a/io.pressure \"some 150000 1000000\""), watch.out);
        Result serve = cli("help", "serve");
        assertTrue(serve.out.startsWith("usage: iotarget serve [--config FILE]\n"), serve.out);
        assertEquals(new Result(2, "", "iotarget: help frobnicate: no such command (commands: serve, read, write, mkdir, rmdir, ls, ln, unlink, devices, save, top, watch, calibrate, web, batch, help)\n"),
                cli("help", "frobnicate"));
        assertEquals(new Result(2, "", "usage: iotarget ln TARGET LINK   (iotarget help ln tells more)\n"), cli("ln", "x"));
    }
}
