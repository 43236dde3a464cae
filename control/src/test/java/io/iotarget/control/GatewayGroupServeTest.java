package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.TcpRelay;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three {@code serve} nodes (in this process) of one gateway group over one etcd cluster: each
 * starts with only {@code cluster.store}, {@code node} and {@code group}, its controllers take ids
 * from a range of its own, the three ANA groups of the shared subsystem (namespaces 1-3 with
 * {@code ana_grpid auto}: groups 1-3) get one owner each, and
 * when a node is cut off from etcd its group moves to a survivor once its lease is gone: the
 * survivor's host gets the ANA change event and reads the group optimized.
 */
class GatewayGroupServeTest {
    private static final String NQN = "nqn.2026-12.io.iotarget:gw";
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555";
    private static final int OPTIMIZED = 0x01, NON_OPTIMIZED = 0x02;
    private static final int ANA_LOG_BYTES = 16 + 128 * 32 + 1024 * 4;
    private static final int ANA_CHANGE_EVENT = 0x000C0302;

    @TempDir
    Path dir;
    private final List<AutoCloseable> closing = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : closing.reversed()) {
            try {
                c.close();
            } catch (Exception e) {
                // closed already
            }
        }
    }

    /** A node: its NVMe/TCP port and server. */
    private record Node(String name, int port, Server server) {
        String anaState(int grpid) {
            try {
                return server.mounts().read("/nvmet/ports/1/ana_groups/" + grpid + "/ana_state").strip();
            } catch (io.iotarget.model.ControlException e) {
                return "";
            }
        }
    }

    private Node start(String name, String store) throws Exception {
        int port = freePort();
        StringBuilder backends = new StringBuilder();
        StringBuilder namespaces = new StringBuilder();
        for (int g = 1; g <= 3; g++) {
            Path file = dir.resolve("disk" + g);
            if (!Files.exists(file)) Files.write(file, new byte[1 << 20]);
            backends.append(g > 1 ? ", " : "").append("\"d%d\": { \"type\": \"file\", \"path\": \"%s\", \"enable\": 1 }".formatted(g, file));
            namespaces.append(g > 1 ? ", " : "").append("""
                    "%d": { "device_path": "d%d", "device_uuid": "5a1e0c3d-9b7f-4e21-8c4a-0d6f2e8b1c9%d", "ana_grpid": "auto", "enable": 1 }"""
                    .formatted(g, g, g));
        }
        String config = """
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "cluster": { "store": "%s", "node": "%s", "group": "g", "interval_ms": 100, "lease_ms": 1000 },
                  "backends": { %s },
                  "nvmet": {
                    "subsystems": { "%s": { "attr_allow_any_host": 1, "attr_serial": "gw-0001", "shared": 1,
                                            "namespaces": { %s } } },
                    "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1",
                                      "addr_trsvcid": "%d", "subsystems": ["%s"] } } } }
                """.formatted(store, name, backends, NQN, namespaces, port, NQN);
        Server server = Server.start(new ObjectMapper().readTree(config), dir);
        closing.add(server);
        return new Node(name, port, server);
    }

    /** A new controller's admin queue on {@code node}, with ANA change events enabled; returns {channel, cntlid}. */
    private Object[] admin(Node node) throws Exception {
        SocketChannel c = RawClients.nvmePastIcReq(node.port(), 0);
        closing.add(c);
        int cntlid = RawClients.nvmeConnect(c, NQN, HOST, 0, 0xFFFF, 32);
        assertEquals(0, RawClients.nvmeSetFeatures(c, 3, 0x0B, 1 << 11), "enable ANA change notices");
        return new Object[] {c, cntlid};
    }

    /** Which node presents each group optimized, by group; "" for none, "a,b" for two. */
    private static Map<Integer, String> owners(List<Node> nodes) {
        Map<Integer, String> out = new TreeMap<>();
        for (int g = 1; g <= 3; g++) {
            List<String> on = new ArrayList<>();
            for (Node n : nodes) if (n.anaState(g).equals("optimized")) on.add(n.name());
            out.put(g, String.join(",", on));
        }
        return out;
    }

    private static boolean oneEach(List<Node> nodes) {
        Set<String> seen = new TreeSet<>();
        for (String o : owners(nodes).values()) if (o.isEmpty() || o.contains(",") || !seen.add(o)) return false;
        return seen.size() == nodes.size();
    }

    @Test
    void nodesOfAGroupGetOwnRangesAndOneAnaGroupEachWhichMovesWithAnAenWhenOneIsCutOff() throws Exception {
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"));
             TcpRelay relay = TcpRelay.start("127.0.0.1", etcd.clientPort(0))) {
            Node a = start("gw1", etcd.uri());
            Node b = start("gw2", etcd.uri());
            Node c = start("gw3", "etcd://" + relay.hostPort());
            List<Node> all = List.of(a, b, c);
            Await.until(Duration.ofSeconds(30), () -> oneEach(all), () -> "not one group each: " + owners(all));

            // Controller ids: from each node's own range, as /cluster/members says.
            MountTable0 view = new MountTable0(a.server());
            Await.until(Duration.ofSeconds(10), () -> view.list("/cluster/members").equals(List.of("gw1/", "gw2/", "gw3/"))
                                                      && all.stream().allMatch(n -> view.read("/cluster/members/" + n.name() + "/ana_groups").matches("\\d+")),
                        () -> "members " + view.list("/cluster/members") + ", owners " + owners(all));
            Map<String, int[]> ranges = new TreeMap<>();
            for (Node n : all) {
                String[] r = view.read("/cluster/members/" + n.name() + "/cntlid_range").split(" ");
                ranges.put(n.name(), new int[] {Integer.parseInt(r[0]), Integer.parseInt(r[1])});
                int cntlid = (int) admin(n)[1];
                assertTrue(cntlid >= ranges.get(n.name())[0] && cntlid <= ranges.get(n.name())[1],
                           n.name() + " gave cntlid " + cntlid + " outside its range " + view.read("/cluster/members/" + n.name() + "/cntlid_range"));
                String owns = view.read("/cluster/members/" + n.name() + "/ana_groups");
                assertTrue(owns.matches("\\d+"), n.name() + " owns " + owns + ": not one group");
                assertEquals(owners(all).get(Integer.parseInt(owns)), n.name(), "/cluster and the ports disagree");
                assertTrue(Long.parseLong(view.read("/cluster/members/" + n.name() + "/lease"), 16) != 0);
            }
            System.out.println("ls /cluster/members: " + view.list("/cluster/members") + ", ranges "
                               + ranges.entrySet().stream().map(e -> e.getKey() + "=" + e.getValue()[0] + ".." + e.getValue()[1]).toList());

            // /metrics says the same.
            int controlPort = a.server().controlAddress().getPort();
            String token = Files.readString(dir.resolve("control-127.0.0.1-" + controlPort + ".token")).strip();
            String metrics = java.net.http.HttpClient.newHttpClient().send(
                    java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:" + controlPort + "/metrics"))
                            .header("Authorization", "Bearer " + token).build(), java.net.http.HttpResponse.BodyHandlers.ofString()).body();
            for (Node n : all) {
                int[] r = ranges.get(n.name());
                assertTrue(metrics.lines().anyMatch(l -> l.startsWith("iotarget_gateway_member_info{") && l.contains("node=\"" + n.name() + "\"")
                                                         && l.contains("cntlid_min=\"" + r[0] + "\"") && l.contains("cntlid_max=\"" + r[1] + "\"")),
                           "no member line for " + n.name() + " in\n" + metrics);
                String owns = view.read("/cluster/members/" + n.name() + "/ana_groups");
                assertTrue(metrics.lines().anyMatch(l -> l.startsWith("iotarget_gateway_ana_group_owner_info{") && l.contains("ana_group=\"" + owns + "\"")
                                                         && l.contains("node=\"" + n.name() + "\"")),
                           "no owner line for group " + owns + " in\n" + metrics);
            }

            // The cut node's group: the survivors' hosts wait for the event.
            int moving = Integer.parseInt(view.read("/cluster/members/gw3/ana_groups"));
            Map<String, SocketChannel> hosts = new TreeMap<>();
            Map<String, CompletableFuture<int[]>> events = new TreeMap<>();
            for (Node n : List.of(a, b)) {
                SocketChannel h = (SocketChannel) admin(n)[0];
                assertEquals(NON_OPTIMIZED, RawClients.anaState(RawClients.nvmeAnaLog(h, 4, ANA_LOG_BYTES), moving));
                RawClients.nvmeAsyncEventRequest(h, 5);
                hosts.put(n.name(), h);
                events.put(n.name(), CompletableFuture.supplyAsync(() -> {
                    try {
                        return RawClients.nvmeCompletion(h);
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }));
            }
            long cutNs = System.nanoTime();
            relay.cut();
            Await.until(Duration.ofSeconds(30), () -> owners(List.of(a, b)).get(moving).length() == 3,
                        () -> "group " + moving + " did not move: " + owners(all));
            long movedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cutNs);
            String newOwner = owners(List.of(a, b)).get(moving);
            Node owner = newOwner.equals("gw1") ? a : b;
            int[] event = events.get(newOwner).get(10, TimeUnit.SECONDS);
            assertEquals(5, event[0]);
            assertEquals(ANA_CHANGE_EVENT, event[2], "an ANA change notice");
            ByteBuffer log = RawClients.nvmeAnaLog(hosts.get(newOwner), 6, ANA_LOG_BYTES);
            assertEquals(OPTIMIZED, RawClients.anaState(log, moving), "the new owner's ANA log page");
            assertEquals("optimized", owner.anaState(moving));
            Await.until(Duration.ofSeconds(10), () -> view.list("/cluster/members").equals(List.of("gw1/", "gw2/")),
                        () -> "members " + view.list("/cluster/members"));
            System.out.printf("gw3 cut off: its ANA group %d optimized on %s %d ms later, with the ANA change event%n", moving, newOwner, movedMs);
        }
    }

    /** Reads through a server's mount table, failing the test on a refusal. */
    private record MountTable0(Server server) {
        List<String> list(String path) {
            try {
                return server.mounts().list(path);
            } catch (io.iotarget.model.ControlException e) {
                return List.of(e.getMessage());
            }
        }

        String read(String path) {
            try {
                return server.mounts().read(path).strip();
            } catch (io.iotarget.model.ControlException e) {
                throw new AssertionError(e);
            }
        }
    }
}
