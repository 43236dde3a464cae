package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.GuestChannel;
import io.iotarget.testkit.GuestVm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Issue 32.3 with the Linux host (Debian 12's 6.1, native multipath; src/test/vm/gw-host.sh has
 * the steps): three {@code iotarget serve} processes of one gateway group on a three-member etcd
 * cluster serve six namespaces of one shared subsystem (ANA groups 1-6, two per node), each over
 * a file all nodes open with O_DIRECT, all charged to tenant a, whose {@code io.max.global} caps
 * namespace 1's writes. Under a crc32c-verified fio on all six, the owner of group 1 is SIGKILLed
 * {@link #KILLS} times and restarted each time; then a fourth node is started under fio.
 *
 * <p>The test is the host's channel to the nodes and measures them from outside: a thread reads
 * every node's io.stat back to back (a round every 30-85 ms on a loaded two-core machine) and the
 * pause of a kill is from the last IO of namespace 1 on the dead node to the first on the new
 * owner of group 1 (sampler times: each an upper bound, off by up to one round); the guest prints
 * its own view, the longest gap between two completions of namespace 1 around each kill (fio's
 * per-IO log), which the emulated guest's own stalls blur. Asserted: no IO error and no block
 * failing verification; each kill's group moves and the restarted node gets its two groups back;
 * the fourth node takes groups while fio runs; in the window around its join, io.stat summed over
 * the nodes is exactly what fio moved (across a kill it cannot be: the dead node's io.stat dies
 * with it, and what it wrote but could not answer is sent again through another); namespace 1's
 * writes, summed over the nodes, stay under io.max.global through every move; each pause under
 * the lease_ms + 1 s, which held with a margin of five at a load of 12; the new owner's
 * optimized presentation only loosely. Numbers: docs/ha.md, bench/results/ha.md.
 */
class GatewayGroupKernelHostTest {
    private static final String NQN = "nqn.2026-12.io.iotarget:gwhost";
    private static final int NAMESPACES = 6;
    /**
     * How many times the owner is killed: three in every build (each kill and restart costs ~20 s
     * of the CI's 30 minutes); the five, whose p50 and max docs/ha.md records, with
     * {@code -Diotarget.gwhost.kills=5}.
     */
    private static final int KILLS = Integer.getInteger("iotarget.gwhost.kills", 3);
    private static final long INTERVAL_MS = 200;
    private static final long LEASE_MS = 1000;
    /**
     * Tenant a's io.max.global on namespace 1's backend: under what the emulated host writes there
     * at QD2 even on a loaded machine (up to 23 16 KiB writes a second at a load of 12 on two cores).
     */
    private static final long GLOBAL_WIOPS = 12;
    /** The bound on a pause, lease_ms + 1 s: the pauses measured are a fifth of it and less, at a load of 12 on two cores. */
    private static final long PAUSE_BOUND_MS = LEASE_MS + 1000;
    /** A loose bound on when the new owner presents group 1 optimized (a lease, etcd's sweep, an interval: 1.3-1.9 s measured). */
    private static final long OPTIMIZED_BOUND_MS = 5 * (LEASE_MS + 1000);
    private static final long SAMPLE_PAUSE_MS = 25;
    private static final String[] KEYS = {"rbytes", "wbytes", "rios", "wios"};
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    /** Every process of every node the test started, in order; the sampler reads the live ones. */
    private final List<Run> runs = new CopyOnWriteArrayList<>();

    /** A node: its name and config, the same across its restarts. */
    private final class Node {
        final String name;
        final int nvmePort;
        final Path config;
        Run run;

        Node(String name, String store) throws IOException {
            this.name = name;
            this.nvmePort = freePort();
            this.config = dir.resolve(name + ".json");
            StringBuilder backends = new StringBuilder();
            StringBuilder namespaces = new StringBuilder();
            for (int n = 1; n <= NAMESPACES; n++) {
                backends.append(n > 1 ? ", " : "").append("""
                        "d%d": { "type": "file", "path": "%s", "direct": 1, "enable": 1 }""".formatted(n, dir.resolve("disk" + n)));
                namespaces.append(n > 1 ? ", " : "").append("""
                        "%d": { "device_path": "d%d", "device_uuid": "7c1f4e2a-3b5d-4f60-9a8e-2d4c6b8a0e1%d", "ana_grpid": "auto",
                                "cgroup": "tenants/a", "enable": 1 }""".formatted(n, n, n));
            }
            Files.writeString(config, """
                    { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                      "cluster": { "store": "%s", "node": "%s", "group": "gw", "interval_ms": %d, "lease_ms": %d },
                      "backends": { %s },
                      "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { "io.max.global": "d1 wiops=%d" } } },
                      "nvmet": {
                        "subsystems": { "%s": { "attr_allow_any_host": 1, "attr_serial": "iotarget-gw-1", "shared": 1,
                                                "namespaces": { %s } } },
                        "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1", "addr_trsvcid": "%d",
                                          "subsystems": ["%s"] } } } }
                    """.formatted(store, name, INTERVAL_MS, LEASE_MS, backends, GLOBAL_WIOPS, NQN, namespaces, nvmePort, NQN));
        }

        Run start() throws IOException, InterruptedException {
            run = new Run(this, ServerProcess.start(config, dir, null));
            runs.add(run);
            return run;
        }
    }

    /** A sampler's reading of a process: when (System.nanoTime, after the answer), namespace 1's wios and ios, and every device's ios. */
    private record Sample(long ns, long d1Wios, long d1Ios, long ios) {
    }

    /** One process of a node: its server, control token, namespace 1's device number there, and what the sampler read of it. */
    private final class Run {
        final Node node;
        final ServerProcess server;
        final String token;
        final String d1;
        final List<Sample> samples = new CopyOnWriteArrayList<>();
        volatile boolean alive = true;

        Run(Node node, ServerProcess server) throws IOException, InterruptedException {
            this.node = node;
            this.server = server;
            String port = server.control().substring(server.control().lastIndexOf(':') + 1);
            this.token = Files.readString(dir.resolve("control-127.0.0.1-" + port + ".token")).strip();
            String device = null;
            for (String line : get("/v1/devices").split("\n")) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 1 && f[0].equals("d1")) device = f[1];
            }
            assertTrue(device != null, "no d1 in the device table");
            this.d1 = device;
        }

        String get(String uriPath) throws IOException, InterruptedException {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + server.control() + uriPath))
                                                       .timeout(Duration.ofSeconds(30))
                                                       .header("Authorization", "Bearer " + token).build(), HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) throw new IOException(uriPath + ": " + r.statusCode() + " " + r.body());
            return r.body();
        }

        /** Tenant a's io.stat by device number: rbytes, wbytes, rios, wios. */
        Map<String, long[]> stat() throws IOException, InterruptedException {
            Map<String, long[]> out = new HashMap<>();
            for (String line : get("/v1/read?path=tenants/a/io.stat").split("\n")) {
                String[] f = line.trim().split("\\s+");
                if (f.length < 2) continue;
                long[] v = new long[4];
                for (int k = 0; k < 4; k++) {
                    Matcher m = Pattern.compile("\\b" + KEYS[k] + "=(\\d+)").matcher(line);
                    if (m.find()) v[k] = Long.parseLong(m.group(1));
                }
                out.put(f[0], v);
            }
            return out;
        }

        /** io.stat's four counters summed over the devices. */
        long[] total() throws IOException, InterruptedException {
            long[] sum = new long[4];
            for (long[] v : stat().values()) for (int k = 0; k < 4; k++) sum[k] += v[k];
            return sum;
        }

        /** ANA group id to this node's port 1 state. */
        Map<Integer, String> anaStates() throws IOException, InterruptedException {
            String below = get("/v1/read-below?path=" + URLEncoder.encode("/nvmet/ports/1/ana_groups", StandardCharsets.UTF_8) + "&files=ana_state");
            Map<Integer, String> out = new TreeMap<>();
            JsonNode all = JSON.readTree(below);
            for (var it = all.properties().iterator(); it.hasNext(); ) {
                var e = it.next();
                String d = e.getKey();
                String id = d.substring(d.lastIndexOf('/') + 1);
                if (id.matches("\\d+") && e.getValue().hasNonNull("ana_state")) out.put(Integer.parseInt(id), e.getValue().get("ana_state").asText().strip());
            }
            return out;
        }

        void sample() {
            try {
                Map<String, long[]> s = stat();
                long t = System.nanoTime();
                long[] d = s.getOrDefault(d1, new long[4]);
                long ios = 0;
                for (long[] v : s.values()) ios += v[2] + v[3];
                samples.add(new Sample(t, d[3], d[2] + d[3], ios));
            } catch (IOException | InterruptedException e) {
                // killed, or dying: its last sample stands
            }
        }

        /** When the sampler first saw namespace 1's IO count grow past what it was at {@code afterNs}; -1 if not yet. */
        long firstD1IoAfter(long afterNs) {
            long base = 0;
            for (Sample s : samples) {
                if (s.ns() <= afterNs) base = s.d1Ios();
                else if (s.d1Ios() > base) return s.ns();
            }
            return -1;
        }

        /** The same for namespace 1's writes alone (io.max.global holds them; fio's verify reads are not). */
        long firstD1WriteAfter(long afterNs) {
            long base = 0;
            for (Sample s : samples) {
                if (s.ns() <= afterNs) base = s.d1Wios();
                else if (s.d1Wios() > base) return s.ns();
            }
            return -1;
        }

        /** When the sampler first saw namespace 1's last write count. */
        long lastD1Write() {
            long last = samples.getLast().d1Wios();
            for (Sample s : samples) if (s.d1Wios() == last) return s.ns();
            return -1;
        }

        /** The sampler saw namespace 1's IO count grow over the last second it sampled. */
        boolean d1Flowing() {
            List<Sample> s = List.copyOf(samples);
            if (s.isEmpty()) return false;
            Sample last = s.getLast();
            for (int i = s.size() - 1; i >= 0; i--) {
                if (last.ns() - s.get(i).ns() >= TimeUnit.SECONDS.toNanos(1)) return last.d1Ios() > s.get(i).d1Ios();
            }
            return false;
        }

        /** When the sampler first saw namespace 1's last IO count (the upper bound of its last completion). */
        long lastD1Io() {
            long last = samples.getLast().d1Ios();
            for (Sample s : samples) if (s.d1Ios() == last) return s.ns();
            return -1;
        }

        /** The sampled count of namespace 1's writes at {@code ns}: the last sample at or before it, 0 before the first. */
        long d1WiosAt(long ns) {
            long v = 0;
            for (Sample s : samples) {
                if (s.ns() > ns) break;
                v = s.d1Wios();
            }
            return v;
        }
    }

    private List<Run> live() {
        return runs.stream().filter(r -> r.alive).toList();
    }

    /** Which live node presents each ANA group optimized ("" none, "a,b" two), by group; null if a node did not answer. */
    private Map<Integer, String> owners() {
        Map<Integer, List<String>> on = new TreeMap<>();
        for (int g = 1; g <= NAMESPACES; g++) on.put(g, new ArrayList<>());
        for (Run r : live()) {
            try {
                r.anaStates().forEach((g, state) -> {
                    if (state.equals("optimized") && on.containsKey(g)) on.get(g).add(r.node.name);
                });
            } catch (IOException | InterruptedException e) {
                return null;
            }
        }
        Map<Integer, String> out = new TreeMap<>();
        on.forEach((g, names) -> out.put(g, String.join(",", names)));
        return out;
    }

    /** Every group optimized on exactly one live node, and the counts per node differing by at most one (the group's notion of balanced). */
    private boolean balanced(Map<Integer, String> owners) {
        if (owners == null) return false;
        Map<String, Integer> count = new TreeMap<>();
        for (Run r : live()) count.put(r.node.name, 0);
        for (String o : owners.values()) {
            if (!count.containsKey(o)) return false;
            count.merge(o, 1, Integer::sum);
        }
        int max = count.values().stream().mapToInt(i -> i).max().orElse(0);
        int min = count.values().stream().mapToInt(i -> i).min().orElse(0);
        return max - min <= 1;
    }

    private static long count(Map<Integer, String> owners, String node) {
        return owners.values().stream().filter(node::equals).count();
    }

    /** Polls {@code condition} every 50 ms (each look is several HTTP reads) until it holds; fails after {@code timeout}. */
    private static void poll(Duration timeout, java.util.function.BooleanSupplier condition, Supplier<String> whatFailed) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("not within " + timeout.toMillis() + " ms: " + whatFailed.get());
            Thread.sleep(50);
        }
    }

    private static long ms(long fromNs, long toNs) {
        return TimeUnit.NANOSECONDS.toMillis(toNs - fromNs);
    }

    @Test
    void linuxHostRidesOutKilledOwnersRejoinsAndAFourthNodeWithExactChargingUnderIoMaxGlobal() throws Exception {
        GuestVm.require();
        for (int n = 1; n <= NAMESPACES; n++) {
            try (RandomAccessFile f = new RandomAccessFile(dir.resolve("disk" + n).toFile(), "rw")) {
                f.setLength(16L << 20);
            }
        }
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"))) {
            Map<String, Node> nodes = new TreeMap<>();
            for (String name : List.of("gw1", "gw2", "gw3")) {
                nodes.put(name, new Node(name, etcd.uri()));
                nodes.get(name).start();
            }
            poll(Duration.ofSeconds(60), () -> balanced(owners()) && owners().values().stream().distinct().count() == 3,
                 () -> "not two groups each: " + owners());
            System.out.println("[gw] owners at start: " + owners());

            Thread sampler = Thread.ofPlatform().daemon().name("gw-sampler").start(() -> {
                while (!stopSampling) {
                    for (Run r : live()) r.sample();
                    try {
                        Thread.sleep(SAMPLE_PAUSE_MS);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });

            List<Long> pauses = new ArrayList<>();
            List<Long> firstAny = new ArrayList<>();
            List<Long> writePauses = new ArrayList<>();
            List<Long> optimizedMs = new ArrayList<>();
            List<Long> rejoinMs = new ArrayList<>();
            Node[] killed = new Node[1];
            Map<Run, long[]> chargeBegin = new HashMap<>();
            long[] charged = new long[4];
            long[] joinedMs = {-1};
            Node gw4 = new Node("gw4", etcd.uri());
            long[] ioWindow = new long[2];

            GuestChannel.Commands commands = command -> switch (command[0]) {
                case "kill" -> {
                    poll(Duration.ofSeconds(30), () -> balanced(owners()), () -> "not balanced before the kill: " + owners());
                    Map<Integer, String> before = owners();
                    Node victim = nodes.get(before.get(1));
                    Run dead = victim.run;
                    poll(Duration.ofSeconds(60), dead::d1Flowing, () -> "no IO of namespace 1 on its owner " + victim.name);
                    long killNs = System.nanoTime();
                    dead.server.kill();
                    dead.alive = false;
                    killed[0] = victim;
                    String[] newOwner = new String[1];
                    poll(Duration.ofSeconds(30), () -> {
                        Map<Integer, String> o = owners();
                        if (o == null || o.get(1).isEmpty() || o.get(1).contains(",")) return false;
                        newOwner[0] = o.get(1);
                        return true;
                    }, () -> "group 1 did not move from " + victim.name + ": " + owners());
                    long optimizedNs = System.nanoTime();
                    Run fresh = nodes.get(newOwner[0]).run;
                    poll(Duration.ofSeconds(30), () -> fresh.firstD1IoAfter(killNs) > 0, () -> "no IO of namespace 1 on " + fresh.node.name);
                    long last = dead.lastD1Io();
                    long pause = ms(last, fresh.firstD1IoAfter(killNs));
                    long any = Long.MAX_VALUE;
                    for (Run r : live()) if (r.firstD1IoAfter(killNs) > 0) any = Math.min(any, ms(last, r.firstD1IoAfter(killNs)));
                    poll(Duration.ofSeconds(30), () -> fresh.firstD1WriteAfter(killNs) > 0, () -> "no write of namespace 1 on " + fresh.node.name);
                    long writePause = ms(dead.lastD1Write(), fresh.firstD1WriteAfter(killNs));
                    writePauses.add(writePause);
                    pauses.add(pause);
                    firstAny.add(any);
                    optimizedMs.add(ms(killNs, optimizedNs));
                    yield "killed=%s new_owner=%s pause_ms=%d write_pause_ms=%d first_io_on_any_survivor_ms=%d optimized_ms_after_kill=%d last_io_ms_before_kill=%d owners_before=%s"
                            .formatted(victim.name, newOwner[0], pause, writePause, any, ms(killNs, optimizedNs), ms(last, killNs), before.values());
                }
                case "restart" -> {
                    Node n = killed[0];
                    long t0 = System.nanoTime();
                    n.start();
                    long started = ms(t0, System.nanoTime());
                    poll(Duration.ofSeconds(120), () -> {
                        Map<Integer, String> o = owners();
                        return balanced(o) && count(o, n.name) == NAMESPACES / 3;
                    }, () -> n.name + " did not get two groups back: " + owners());
                    long share = ms(t0, System.nanoTime());
                    rejoinMs.add(share);
                    yield "rejoined=%s started_ms=%d share_ms=%d (from its start) owners=%s".formatted(n.name, started, share, owners().values());
                }
                case "charge-begin" -> {
                    for (Run r : live()) chargeBegin.put(r, r.total());
                    yield "ok";
                }
                case "add" -> {
                    nodes.put(gw4.name, gw4);
                    gw4.start();
                    yield "port=" + gw4.nvmePort;
                }
                case "joined" -> {
                    long t0 = System.nanoTime();
                    poll(Duration.ofSeconds(60), () -> {
                        Map<Integer, String> o = owners();
                        return balanced(o) && count(o, gw4.name) >= 1 && !gw4.run.samples.isEmpty() && gw4.run.samples.getLast().ios() > 0;
                    }, () -> "gw4 took no group, or no IO: " + owners());
                    joinedMs[0] = ms(t0, System.nanoTime());
                    yield "took_ms=%d (from the host's connect) owners=%s gw4_ios=%d".formatted(joinedMs[0], owners().values(), gw4.run.samples.getLast().ios());
                }
                case "charge-end" -> {
                    ioWindow[1] = System.nanoTime();
                    StringBuilder out = new StringBuilder();
                    for (Run r : live()) {
                        long[] end = r.total();
                        long[] begin = chargeBegin.getOrDefault(r, new long[4]);
                        out.append(r.node.name);
                        for (int k = 0; k < 4; k++) {
                            charged[k] += end[k] - begin[k];
                            out.append(' ').append(KEYS[k]).append('=').append(end[k] - begin[k]);
                        }
                        out.append("; ");
                    }
                    yield out.toString().strip();
                }
                default -> "ERR unknown command " + command;
            };

            try (GuestChannel channel = GuestChannel.open("GatewayGroupKernelHostTest", commands)) {
                Node[] first = nodes.values().toArray(new Node[0]);
                GuestVm.Result result = GuestVm.run(GuestVm.script("gw-host.sh"), Map.of(
                        "NQN", NQN, "PORT1", Integer.toString(first[0].nvmePort), "PORT2", Integer.toString(first[1].nvmePort),
                        "PORT3", Integer.toString(first[2].nvmePort), "CTL_PORT", Integer.toString(channel.port()),
                        "KILLS", Integer.toString(KILLS)), List.of(), 600);
                stopSampling = true;
                sampler.join();
                result.lines("RESULT").forEach(l -> System.out.println("[gw] " + l));
                result.lines("MOVED").forEach(l -> System.out.println("[gw] " + l));
                result.lines("CHARGE").forEach(l -> System.out.println("[gw] " + l));

                // io.max.global: namespace 1's writes summed over every process of every node, in 3 s windows, from the first write seen
                ioWindow[0] = runs.stream().flatMap(r -> r.samples.stream()).filter(s -> s.d1Wios() > 0).mapToLong(Sample::ns).min().orElse(ioWindow[1]);
                long windowNs = TimeUnit.SECONDS.toNanos(3);
                double maxRate = 0;
                for (long t = ioWindow[0]; t + windowNs <= ioWindow[1]; t += windowNs / 6) {
                    long sum = 0;
                    for (Run r : runs) sum += r.d1WiosAt(t + windowNs) - r.d1WiosAt(t);
                    maxRate = Math.max(maxRate, sum * 1e9 / windowNs);
                }
                long total = 0;
                for (Run r : runs) total += r.d1WiosAt(ioWindow[1]) - r.d1WiosAt(ioWindow[0]);
                double average = total * 1e9 / (ioWindow[1] - ioWindow[0]);
                System.out.printf("[gw] io.max.global d1 wiops=%d: namespace 1's writes over all nodes %.1f/s on average over %d s, at most %.1f/s in a 3 s window%n",
                                  GLOBAL_WIOPS, average, TimeUnit.NANOSECONDS.toSeconds(ioWindow[1] - ioWindow[0]), maxRate);
                System.out.println("[gw] pause (last IO of namespace 1 on the dead node to the first on the new owner, sampled io.stat): "
                                   + pauses + " ms, p50 " + p50(pauses) + ", max " + max(pauses) + "; writes alone " + writePauses + " ms, p50 "
                                   + p50(writePauses) + ", max " + max(writePauses) + "; to the first on any survivor: " + firstAny
                                   + "; lease_ms + 1 s = " + (LEASE_MS + 1000) + "; the new owner presented group 1 optimized " + optimizedMs
                                   + " ms after the kill, p50 " + p50(optimizedMs) + ", max " + max(optimizedMs));
                System.out.println("[gw] restarted node owned its two groups again " + rejoinMs + " ms after its start; the fourth took its group "
                                   + joinedMs[0] + " ms after the host connected");
                for (Run r : runs) {
                    if (r.samples.size() > 1) {
                        System.out.printf("[gw] sampler: %s %d samples, every %.1f ms%n", r.node.name, r.samples.size(),
                                          (r.samples.getLast().ns() - r.samples.getFirst().ns()) / 1e6 / (r.samples.size() - 1));
                    }
                }

                List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
                assertEquals(List.of(), failed, result.text());
                assertEquals(0, result.exitCode(), result.text());
                assertEquals(KILLS, pauses.size(), "every kill measured");
                for (long p : pauses) assertTrue(p >= 0 && p <= PAUSE_BOUND_MS, "a pause of " + p + " ms, over lease_ms + 1 s: " + pauses);
                for (long o : optimizedMs) assertTrue(o <= OPTIMIZED_BOUND_MS, "group 1 optimized on its new owner " + o + " ms after the kill: " + optimizedMs);

                // Charging: what the host moved in the window around the fourth node's join, exactly, over the four nodes.
                Matcher moved = Pattern.compile("MOVED rbytes=(\\d+) wbytes=(\\d+)").matcher(result.text());
                if (!moved.find()) fail("no MOVED line: " + result.text());
                long rbytes = Long.parseLong(moved.group(1)), wbytes = Long.parseLong(moved.group(2));
                assertTrue(rbytes > 0 && wbytes > 0, moved.group());
                assertEquals(rbytes, charged[0], "rbytes over the nodes");
                assertEquals(wbytes, charged[1], "wbytes over the nodes");
                assertEquals(rbytes / (16 << 10), charged[2], "rios: one per 16 KiB read");
                assertEquals(wbytes / (16 << 10), charged[3], "wios: one per 16 KiB write, no flush");

                // io.max.global held across the moves: the whole run at most the limit, and no 3 s window much above it.
                assertTrue(average <= GLOBAL_WIOPS * 1.05, "namespace 1's writes averaged " + average + "/s against " + GLOBAL_WIOPS);
                assertTrue(maxRate <= GLOBAL_WIOPS * 1.25, "namespace 1's writes reached " + maxRate + "/s in a 3 s window against " + GLOBAL_WIOPS);
            } finally {
                stopSampling = true;
                for (Run r : runs) r.server.close();
            }
        }
    }

    /** Set by the test's thread when the guest is done; read by the sampler thread. */
    private volatile boolean stopSampling;

    private static long p50(List<Long> values) {
        List<Long> sorted = values.stream().sorted().toList();
        return sorted.isEmpty() ? -1 : sorted.get((sorted.size() - 1) / 2);
    }

    private static long max(List<Long> values) {
        return values.stream().mapToLong(Long::longValue).max().orElse(-1);
    }
}
