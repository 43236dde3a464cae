package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.tree.Sizes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** Each config mistake operators made names its own field, the value as written and what was expected. */
class ConfigMistakesTest {
    private final ObjectMapper json = new ObjectMapper();
    @TempDir
    Path tokens;

    private String refusal(String config) {
        return assertThrows(ConfigException.class, () -> Server.start(json.readTree(config), tokens)).getMessage();
    }

    private static String memory(String size) {
        return "{ \"server\": { \"control\": \"127.0.0.1:0\" }, \"backends\": { \"m\": { \"type\": \"memory\", \"size\": " + size + ", \"enable\": 1 } } }";
    }

    private static String limit() {
        MemoryBackend.SizeLimit limit = MemoryBackend.sizeLimit();
        return "at most " + Sizes.describe(limit.bytes()) + " for a memory backend, " + limit.reason() + "; a file backend may be larger";
    }

    @Test
    void shouldRefuseAMemoryBackendLargerThanTheMachineInAConfigAndOverTheCli() throws Exception {
        assertEquals("backends.m.size = \"100T\": Invalid argument (EINVAL): size=100T (expected: " + limit() + ")", refusal(memory("\"100T\"")));
        try (Server server = Server.start(json.readTree("{ \"server\": { \"control\": \"127.0.0.1:0\" } }"), tokens)) {
            String control = ControlEndpoint.hostPort(server.controlAddress());
            Map<String, String> env = Map.of("IOTARGET_RUNTIME_DIR", tokens.toString(), "IOTARGET_CONTROL", control);
            assertEquals(0, cli(env, "mkdir", "/backends/m"));
            assertEquals(0, cli(env, "write", "/backends/m/size", "100T"), "no type yet: any size");
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            assertEquals(1, Main.run(new String[]{"write", "/backends/m/type", "memory"}, env, new PrintStream(new ByteArrayOutputStream()),
                    new PrintStream(err, true, StandardCharsets.UTF_8)));
            assertEquals("iotarget: write /backends/m/type: Invalid argument (EINVAL): type=memory (expected: a type that can hold size "
                         + (100L << 40) + ": " + limit() + ")\n", err.toString(StandardCharsets.UTF_8));
            assertEquals("\n", server.mounts().read("/backends/m/type"), "nothing changed");
        }
    }

    /**
     * A subsystem other nodes serve too (issue 20.2) on the memory backend of the usual config: refused at start, with the
     * namespace's enable as the field and what no other node could see; the ids a node alone would make up come first.
     */
    @Test
    void shouldRefuseASharedSubsystemThatSeveralNodesCannotServeAsOne() {
        String config = """
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "m": { "type": "memory", "size": "1M", "enable": 1 } },
                  "nvmet": { "subsystems": { "nqn.2026-12.io.example:ha": { "shared": 1, %s
                             "namespaces": { "1": { "device_path": "m", %s "enable": 1 } } } } } }
                """;
        assertEquals("nvmet.subsystems.nqn.2026-12.io.example:ha.namespaces.1.enable = 1: Invalid argument (EINVAL): enable=1: "
                     + "subsystems/nqn.2026-12.io.example:ha is shared with other nodes, but attr_serial is not set (expected: the same attr_serial on every node)",
                refusal(config.formatted("", "")));
        assertEquals("nvmet.subsystems.nqn.2026-12.io.example:ha.namespaces.1.enable = 1: Invalid argument (EINVAL): enable=1: "
                     + "subsystems/nqn.2026-12.io.example:ha is shared with other nodes, but device_path=m is a memory backend, which no other node can see "
                     + "(expected: a file or block device every node opens)",
                refusal(config.formatted("\"attr_serial\": \"ha-1\", \"attr_cntlid_max\": 100,", "\"device_uuid\": \"5a1e0c3d-9b7f-4e21-8c4a-0d6f2e8b1c97\",")));
    }

    private static int cli(Map<String, String> env, String... args) {
        return Main.run(args, env, new PrintStream(new ByteArrayOutputStream()), new PrintStream(new ByteArrayOutputStream()));
    }

    /** Connection caps that do not fit under RLIMIT_NOFILE would let one listener's clients starve another's accepts. */
    @Test
    void shouldRefuseConnectionCapsThatDoNotFitTheDescriptorLimit() throws Exception {
        var settings = io.iotarget.control.config.ConfigLoader.serverSettings(json.readTree("{ \"server\": { \"max_connections\": 3000 } }"));
        Server.checkDescriptors(settings, 3000 + ControlEndpoint.MAX_CONNECTIONS + Server.RESERVED_DESCRIPTORS);
        ConfigException e = assertThrows(ConfigException.class, () -> Server.checkDescriptors(settings, 4096));
        assertEquals("server.max_connections = 3000: with the control endpoint's 1024 connections and 512 descriptors kept for files, the server needs "
                     + "4536 descriptors, but its limit (RLIMIT_NOFILE) is 4096 (raise the hard limit: ulimit -Hn, systemd's LimitNOFILE=; "
                     + "or lower server.max_connections to at most 2560)", e.getMessage());
    }

    /** The default cap (none in the config) fits itself under a small limit; a cap the config sets is refused instead. */
    @Test
    void shouldFitOnlyTheDefaultConnectionCapUnderTheDescriptorLimit() throws Exception {
        var defaults = io.iotarget.control.config.ConfigLoader.serverSettings(json.readTree("{ \"server\": {} }"));
        assertEquals(2560, Server.fitDescriptors(defaults, false, 4096).transport().maxConnections(), "4096 - 1024 - 512");
        assertEquals(defaults.transport().maxConnections(), Server.fitDescriptors(defaults, false, 1 << 20).transport().maxConnections());
        assertThrows(ConfigException.class, () -> Server.fitDescriptors(defaults, true, 4096));
    }

    @Test
    void shouldRefuseABooleanSizeNamingSize() {
        assertEquals("backends.m.size = true: expected a positive size in bytes, or with K, M, G or T (an integer or a string), got a boolean "
                     + "(true/false are for the 0/1 flags: allow_any_client, attr_allow_any_host, buffered_io, cgroup_per_host, create, direct, enable, readonly, shared, tls)",
                refusal(memory("true")));
    }

    @Test
    void shouldBlameAnUnalignedSizeOnSizeAndTheBlockSize() {
        assertEquals("backends.m.size = 1000: Invalid argument (EINVAL): size=1000 (expected: a multiple of block_size 512)", refusal(memory("1000")));
        assertEquals("backends.m.block_size = 4096: Invalid argument (EINVAL): block_size=4096 (expected: a block size that divides size 6144)",
                refusal("{ \"backends\": { \"m\": { \"type\": \"null\", \"size\": \"6K\", \"block_size\": 4096, \"enable\": 1 } } }"));
    }

    @Test
    void shouldRefuseAFractionalSizeWithTheExpectation() {
        assertEquals("backends.m.size = 1.5: expected a positive size in bytes, or with K, M, G or T (an integer or a string), "
                     + "got a number with a fraction or an exponent", refusal(memory("1.5")));
        assertEquals("backends.m.queue_depth = 1.0E9: expected a string or an integer, got a number with a fraction or an exponent",
                refusal("{ \"backends\": { \"m\": { \"queue_depth\": 1e9 } } }"));
    }

    @Test
    void shouldRefuseConnectionLimitsOutOfRangeWithTheirMeaning() {
        assertEquals("server.max_connections_per_host = 0: expected an integer from 1 to 1000000 (connections from one client address)",
                refusal("{ \"server\": { \"control\": \"127.0.0.1:0\", \"max_connections_per_host\": 0 } }"));
        assertEquals("server.send_timeout_ms = \"30s\": expected an integer from 1 to 86400000 (milliseconds a client may take none of its replies)",
                refusal("{ \"server\": { \"control\": \"127.0.0.1:0\", \"send_timeout_ms\": \"30s\" } }"));
        String sendBuffer = ": expected 0 (the kernel's auto-tuning) or a size from 4K to 64M (in bytes, or with K or M), as an integer or a string";
        assertEquals("server.send_buffer = \"1K\"" + sendBuffer,
                refusal("{ \"server\": { \"control\": \"127.0.0.1:0\", \"send_buffer\": \"1K\" } }"));
        assertEquals("server.send_buffer = true" + sendBuffer,
                refusal("{ \"server\": { \"control\": \"127.0.0.1:0\", \"send_buffer\": true } }"));
        assertEquals("server.poll_us = 5000: expected an integer from 0 to 1000 (microseconds an event loop busy-polls after its last work, 0 for never)",
                refusal("{ \"server\": { \"control\": \"127.0.0.1:0\", \"poll_us\": 5000 } }"));
        assertEquals("server.send_buffer = \"1G\"" + sendBuffer,
                refusal("{ \"server\": { \"control\": \"127.0.0.1:0\", \"send_buffer\": \"1G\" } }"));
    }

    /** Each key that makes the server listen is named when its address is taken. */
    @Test
    void shouldNameTheKeyOfABusyPort() throws Exception {
        try (ServerSocket taken = new ServerSocket()) {
            taken.bind(new InetSocketAddress("127.0.0.1", 0));
            int port = taken.getLocalPort();
            String busy = "cannot listen on 127.0.0.1:" + port + ": Address already in use";
            assertEquals("server.nbd[1] = \"127.0.0.1:" + port + "\": " + busy,
                    refusal("{ \"server\": { \"control\": \"127.0.0.1:0\", \"nbd\": [\"127.0.0.1:0\", \"127.0.0.1:" + port + "\"] } }"));
            assertEquals("server.control = \"127.0.0.1:" + port + "\": " + busy,
                    refusal("{ \"server\": { \"control\": \"127.0.0.1:" + port + "\" } }"));
            assertEquals("nvmet.ports.1.addr_trsvcid = \"" + port + "\": Address already in use (EADDRINUSE): ports/1: " + busy
                         + " (the port starts listening when nvmet.ports.1.subsystems[0] is linked)", refusal("""
                    { "server": { "control": "127.0.0.1:0" },
                      "nvmet": { "subsystems": { "nqn.2026-11.io.iotarget:t": { "attr_allow_any_host": true } },
                                 "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1",
                                                   "addr_trsvcid": "%d", "subsystems": ["nqn.2026-11.io.iotarget:t"] } } } }"""
                    .formatted(port)));
        }
    }
}
