package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The launcher's client commands against a running server, as an operator uses them. */
class ServeAndCliTest {
    private Server server;
    private String control;
    @TempDir
    Path tokens;

    @BeforeEach
    void start() throws Exception {
        String config = """
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "default": { "type": "memory", "size": "64M", "enable": 1 },
                                "scratch": { "type": "null", "size": "1G", "device": "259:7", "enable": true } },
                  "cgroup": { "tenants": { "cgroup.subtree_control": "+io",
                                           "a": { "io.max": ["default riops=20000", "scratch wbps=1048576"] } } } }
                """;
        server = Server.start(new ObjectMapper().readTree(config), tokens);
        control = io.iotarget.control.http.ControlEndpoint.hostPort(server.controlAddress());
    }

    @AfterEach
    void stop() {
        if (server != null) server.close();
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
        int code = Main.run(full, Map.of("IOTARGET_RUNTIME_DIR", tokens.toString()), new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void shouldApplyTheConfigAndServeItsFiles() {
        assertEquals(new Result(0, "259:0 rbps=max wbps=max riops=20000 wiops=max\n259:7 rbps=max wbps=1048576 riops=max wiops=max\n", ""),
                cli("read", "tenants/a/io.max"));
        Result devices = cli("devices");
        assertTrue(devices.out.contains("default          259:0            67108864 memory  0"), devices.out);
        assertTrue(devices.out.contains("scratch          259:7          1073741824 null    0"), devices.out);
    }

    @Test
    void shouldDriveTheGroupTreeLikeCgroupfs() {
        assertEquals(0, cli("mkdir", "tenants/b").code);
        assertEquals(0, cli("write", "tenants/b/io.max", "259:0 wiops=120").code);
        assertEquals("259:0 rbps=max wbps=max riops=max wiops=120\n", cli("read", "tenants/b/io.max").out);
        assertEquals("a/\nb/\ncgroup.controllers\ncgroup.subtree_control\ncgroup.events\ncgroup.stat\ncgroup.max.descendants\n"
                     + "cgroup.max.depth\nio.stat\nio.pressure\niotarget.io.stat\nio.max\nio.max.global\nio.max.per_host\nio.max.burst\nio.max.burst.stat\nio.latency\nio.weight\nio.min\n", cli("ls", "tenants").out);
        assertEquals(0, cli("rmdir", "tenants/b").code);
        assertEquals("cgroup/\nbackends/\nnbd/\nnvmet/\n", cli("ls", "/").out);
        assertEquals("67108864\n", cli("read", "/backends/default/size").out);
    }

    @Test
    void shouldPrintKernelStyleErrorsAndExitNonZero() {
        assertEquals(new Result(1, "", "iotarget: write tenants/a/io.max: Numerical result out of range (ERANGE): wbps=0 (expected: > 0 or max)\n"),
                cli("write", "tenants/a/io.max", "259:0 wbps=0"));
        assertEquals(new Result(1, "", "iotarget: write tenants/a/io.max: No such device (ENODEV): no device 259:9\n"),
                cli("write", "tenants/a/io.max", "259:9 wbps=1"));
        assertEquals(1, cli("rmdir", "tenants").code);
        assertTrue(cli("rmdir", "tenants").err.contains("Device or resource busy (EBUSY)"));
        assertEquals(1, cli("write", "/backends/default/block_size", "4096").code, "fixed while enabled");
        assertEquals(2, cli("write", "tenants/a/io.max").code, "usage");
        assertEquals(2, cli("frobnicate").code);
        assertEquals("259:0 rbps=max wbps=max riops=20000 wiops=max\n259:7 rbps=max wbps=1048576 riops=max wiops=max\n",
                cli("read", "tenants/a/io.max").out, "nothing changed");
    }

    @Test
    void shouldSayWhenNoServerRuns() {
        server.close();
        Result r = cli("devices");
        assertEquals(2, r.code, "a stopped server removed its token file: nothing to send, nothing sent");
        assertTrue(r.err.startsWith("iotarget: no token file ") && r.err.contains("is one running as this user on this address?"), r.err);
        server = null;
    }

    @Test
    void shouldRefuseABadConfigNamingFieldValueAndExpectation() throws Exception {
        ObjectMapper json = new ObjectMapper();
        ConfigException e = assertThrows(ConfigException.class, () -> Server.start(json.readTree("""
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "m": { "type": "memory", "size": "lots", "enable": 1 } } }"""), tokens));
        assertEquals("backends.m.size = \"lots\": Invalid argument (EINVAL): size=lots (expected: a positive size in bytes, or with K, M, G or T)",
                e.getMessage());
        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree("{ \"tenants\": {} }"), tokens));
        assertEquals("tenants: unknown section (expected: server, cluster, backends, cgroup, nbd, nvmet)", e.getMessage());
        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree("""
                { "server": { "control": "127.0.0.1:0" }, "cgroup": { "a": { "io.max": "259:0 rbps=1" } } }"""), tokens));
        assertEquals("cgroup.a.io.max = \"259:0 rbps=1\": No such device (ENODEV): no device 259:0", e.getMessage());
        e = assertThrows(ConfigException.class, () -> Server.start(json.readTree("{ \"server\": { \"control\": \"localhost\" } }"), tokens));
        assertEquals("server.control = \"localhost\": expected HOST:PORT as a string, e.g. 127.0.0.1:10809 or [::1]:10809", e.getMessage());
    }
}
