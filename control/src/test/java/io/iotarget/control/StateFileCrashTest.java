package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlEndpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code server.state}: a server process is killed with SIGKILL in the middle of a stream of
 * changes, at a different moment each round, and restarted from the same config. The state
 * file and its journal must always restore exactly the changes made before some point —
 * every change the client saw succeed, and at most the one in flight — and the restarted
 * server must come back with exactly those. Each round goes on until a compaction has ended
 * in it, and a kill may land in the next one.
 */
class StateFileCrashTest {
    private static final Pattern CONTROL = Pattern.compile("control endpoint http://(127\\.0\\.0\\.1:\\d+) ");

    @TempDir
    Path dir;

    @Test
    void shouldKeepAWholeStateThroughKillNine() throws Exception {
        Path stateDir = Files.createDirectories(dir.resolve("state"));
        Path state = stateDir.resolve("state.json");
        Path journal = stateDir.resolve("state.json.journal");
        Path config = dir.resolve("config.json");
        Files.writeString(config, """
                { "server": { "control": "127.0.0.1:0", "state": "%s" },
                  "backends": { "disk": { "type": "memory", "size": "16M", "enable": 1 } },
                  "cgroup": { "cgroup.subtree_control": "+io" } }
                """.formatted(state));
        int made = 0;
        Set<Integer> weighted = ConcurrentHashMap.newKeySet();       // groups whose io.weight write was acknowledged
        for (int round = 0; round < 3; round++) {
            Process server = serve(config);
            try {
                String control = controlAddress(server);
                ControlClient client = ControlClient.connect(control, null, dir, null);
                assertEquals(groups(made), listGroups(client), "round " + round + " starts where the last one stopped");
                AtomicInteger acknowledged = new AtomicInteger(made);
                int first = made;
                Thread changes = Thread.ofPlatform().start(() -> {
                    try {
                        for (int n = first; ; n++) {
                            if (!client.post("mkdir", name(n), null, null).ok()) return;
                            if (!client.post("write", name(n) + "/io.weight", null, "default " + (n % 9000 + 1)).ok()) return;
                            weighted.add(n);
                            acknowledged.incrementAndGet();
                        }
                    } catch (java.io.IOException e) {
                        // the server was killed
                    }
                });
                awaitCompaction(state, name(made), changes);
                Thread.sleep(round * 173L);                        // a different moment each round, perhaps in the next compaction
                server.destroyForcibly();                          // SIGKILL
                assertTrue(server.waitFor(30, TimeUnit.SECONDS));
                changes.join(30_000);
                int acked = acknowledged.get();
                assertTrue(acked > made, "round " + round + " made changes (" + acked + ")");
                assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(journal)));
                // a start replays the snapshot and its journal, as a restart does, then writes them as one snapshot
                Server.start(ConfigLoader.parse(config), dir).close();
                JsonNode saved = ConfigLoader.parse(state);
                List<String> kept = new ArrayList<>();
                saved.path("cgroup").fieldNames().forEachRemaining(name -> {
                    if (name.startsWith("g")) kept.add(name);
                });
                int k = kept.size();
                assertTrue(k == acked || k == acked + 1, "kept " + k + " groups, " + acked + " acknowledged");
                assertEquals(groups(k), kept, "the state holds a prefix of the changes");
                for (int n = 0; n < k; n++) {
                    JsonNode weight = saved.path("cgroup").path(name(n)).path("io.weight");
                    // a group made by the change in flight at a kill has no weight written
                    if (weighted.contains(n)) assertEquals("default " + (n % 9000 + 1), weight.asText(), name(n));
                }
                assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(state)));
                made = k;
            } finally {
                server.destroyForcibly();
            }
        }
        Process server = serve(config);
        try {
            assertEquals(groups(made), listGroups(ControlClient.connect(controlAddress(server), null, dir, null)));
            try (Stream<Path> files = Files.list(stateDir)) {
                assertEquals(List.of(state, journal, stateDir.resolve("state.json.prev")), files.sorted().toList(),
                             "a restart removes the temporary files and the compaction's journal a kill left");
            }
        } finally {
            server.destroyForcibly();
            server.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * Waits until a compaction has ended during this round: the snapshot holds the round's first
     * group. Waiting for it rather than for a fixed time keeps a slow or loaded machine from
     * killing every round before the journal has outgrown the snapshot.
     */
    private static void awaitCompaction(Path state, String firstOfRound, Thread changes) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (!ConfigLoader.parse(state).path("cgroup").has(firstOfRound)) {
            assertTrue(changes.isAlive(), "the changes stopped before a compaction");
            assertTrue(System.nanoTime() < deadline, "no compaction in two minutes of changes");
            Thread.sleep(20);
        }
    }

    /** Group names sort as their numbers: a listing is in name order. */
    private static String name(int n) {
        return String.format("g%05d", n);
    }

    /** When the state file exists its trees replace the config's; the config's server section still applies. */
    @Test
    void shouldRestoreTheStateRatherThanTheConfigsTrees() throws Exception {
        Path state = dir.resolve("state.json");
        String config = """
                { "server": { "control": "127.0.0.1:0", "state": "%s" }, "cgroup": { "%s": {} } }
                """;
        try (Server server = Server.start(new ObjectMapper().readTree(config.formatted(state, "seeded")), dir)) {
            ControlClient client = ControlClient.connect(ControlEndpoint.hostPort(server.controlAddress()), null, dir, null);
            assertTrue(Files.readString(state).contains("\"seeded\""), "the config's trees seed a new state file");
            assertTrue(client.post("mkdir", "made", null, null).ok());
            assertTrue(Files.readString(dir.resolve("state.json.journal")).contains("[\"mkdir\",\"made\"]"),
                       "a change is in the journal once acknowledged");
        }
        try (Server server = Server.start(new ObjectMapper().readTree(config.formatted(state, "edited")), dir)) {
            assertEquals(List.of("made/", "seeded/"), server.mounts().list("").stream().filter(n -> n.endsWith("/")).toList(),
                         "the state wins over the config's trees");
        }
        Files.writeString(state, "{ \"cgroup\": { \"x\": { \"io.max\": \"nope\" } } }");
        ConfigLoader.ConfigException e = assertThrows(ConfigLoader.ConfigException.class,
                () -> Server.start(new ObjectMapper().readTree(config.formatted(state, "edited")), dir));
        assertTrue(e.getMessage().startsWith("server.state = \"" + state + "\": cgroup.x.io.max = \"nope\": "), e.getMessage());
        assertTrue(e.getMessage().endsWith("(move state.json away to start from the config's trees; " + dir.resolve("state.json.prev")
                                           + " holds the state as the compaction before the last left it)"), e.getMessage());
    }

    private static List<String> groups(int count) {
        List<String> names = new ArrayList<>();
        for (int n = 0; n < count; n++) names.add(name(n));
        return names;
    }

    private static List<String> listGroups(ControlClient client) throws Exception {
        List<String> names = new ArrayList<>();
        for (String entry : client.get("list", "/cgroup").body().split("\n")) {
            if (entry.startsWith("g") && entry.endsWith("/")) names.add(entry.substring(0, entry.length() - 1));
        }
        return names;
    }

    private Process serve(Path config) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:-UsePerfData",
                "-cp", CliProcess.classpath(), Main.class.getName(), "serve", "--config", config.toString());
        pb.environment().put("IOTARGET_RUNTIME_DIR", dir.toString());
        pb.redirectErrorStream(true);
        return pb.start();
    }

    /** Reads the server's start-up message up to the control endpoint's address. */
    private static String controlAddress(Process server) throws Exception {
        BufferedReader out = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
        StringBuilder seen = new StringBuilder();
        for (String line; (line = out.readLine()) != null; ) {
            seen.append(line).append('\n');
            Matcher m = CONTROL.matcher(line);
            if (m.find()) {
                Thread.ofVirtual().start(() -> out.lines().forEach(l -> { }));     // keep the pipe drained
                return m.group(1);
            }
        }
        fail("the server did not start:\n" + seen);
        return null;
    }
}
