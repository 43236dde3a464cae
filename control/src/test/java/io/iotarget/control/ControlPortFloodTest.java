package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.ProcessResources;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 19's control-port attack, run by another user: uid nobody keeps
 * {@link #STALLED} connections to the control endpoint open, each with half a request line,
 * and opens a new one whenever the server closes one. Meanwhile the server keeps at most its
 * cap, the CLI (this user, with the token), a new NBD client's read, nbdinfo and a new NVMe/TCP
 * controller all keep working; when the attacker stops reconnecting the server closes every
 * connection it still has within the head deadline, and descriptors, threads and memory come
 * back to the baseline.
 */
class ControlPortFloodTest {
    /** Far more than {@link ControlEndpoint#MAX_CONNECTIONS}: what the attacker tries to hold at once. */
    private static final int STALLED = 6_000;
    /** Longer than the head deadline, so that deadlines as well as the caps are at work during the attack. */
    private static final long ATTACK_NS = TimeUnit.SECONDS.toNanos(15);
    /**
     * Over the baseline, after the attack. Threads: carriers of the virtual threads the CLI's
     * requests ran on, JIT compiler threads (one per core of each, 2 cores). Descriptors: jar
     * files opened for classes first used during the attack. RSS: heap grown into and Netty's
     * pooled buffers for the thousands of reads (it keeps its arenas); the attack without caps
     * and deadlines left 1.06 GB.
     */
    private static final ProcessResources.Tolerance TOLERANCE = new ProcessResources.Tolerance(4, 8, 16 << 20, 64 << 20, 128L << 20);
    @TempDir
    Path tokens;

    @Test
    void anotherUsersStalledConnectionsHoldAtMostTheCapAndNoClientIsLockedOut() throws Exception {
        Tools.require("setpriv", "/usr/bin/setpriv");
        Tools.require("python3", "/usr/bin/python3");
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        JsonNode config = Server.defaultConfig();
        int nvmePort = freePort();
        ((ObjectNode) config.get("server")).put("control", "127.0.0.1:0").put("nbd", "127.0.0.1:0");
        ((ObjectNode) config.at("/nvmet/ports/1")).put("addr_trsvcid", Integer.toString(nvmePort));
        try (Server server = Server.start(config, tokens)) {
            int nbdPort = server.nbdAddresses().getFirst().getPort();
            String control = ControlEndpoint.hostPort(server.controlAddress());
            for (int i = 0; i < 20; i++) clients(server, control, nbdPort, nvmePort);      // warm-up: classes, loops, pools
            ProcessResources baseline = settled();
            Path script = Files.createTempFile("stalled", ".py");
            try (InputStream in = ControlPortFloodTest.class.getResourceAsStream("stalled-connections.py")) {
                Files.write(script, in.readAllBytes());
            }
            script.toFile().setReadable(true, false);
            List<String> command = new ArrayList<>(CliProcess.AS_NOBODY);
            command.addAll(List.of("/usr/bin/python3", script.toString(), Integer.toString(server.controlAddress().getPort()), Integer.toString(STALLED)));
            Process attacker = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            BlockingQueue<String> lines = lines(attacker.getInputStream());
            try {
                long start = System.nanoTime();
                int maxKept = 0;
                long maxDescriptors = 0;
                long maxRss = 0;
                int rounds = 0;
                String last = null;
                while (System.nanoTime() - start < ATTACK_NS) {
                    long t0 = System.nanoTime();
                    clients(server, control, nbdPort, nvmePort);
                    long roundMs = (System.nanoTime() - t0) / 1_000_000;
                    assertTrue(roundMs < 5_000, "a CLI read, an NBD read and an NVMe/TCP connect took " + roundMs + " ms during the attack");
                    rounds++;
                    ControlEndpoint.Load load = server.controlLoad();
                    ProcessResources now = ProcessResources.now();
                    maxKept = Math.max(maxKept, load.connections());
                    maxDescriptors = Math.max(maxDescriptors, now.descriptors());
                    maxRss = Math.max(maxRss, now.rssBytes());
                    assertTrue(load.connections() <= ControlEndpoint.MAX_CONNECTIONS, "the endpoint keeps " + load);
                    for (String l; (l = lines.poll()) != null; ) last = l;
                    Thread.sleep(200);                                  // paces the rounds over the attack
                }
                String size = Tools.ok(30, "nbdinfo", "--size", "nbd://127.0.0.1:" + nbdPort + "/default").strip();
                assertEquals("1073741824", size, "nbdinfo during the attack");
                ControlEndpoint.Load during = server.controlLoad();
                assertNotNull(last, "the attacker reports");
                int opened = Integer.parseInt(last.split(" ")[3]);
                assertTrue(opened > 4 * ControlEndpoint.MAX_CONNECTIONS, "the attacker opened " + opened + " connections: " + last);
                assertTrue(maxDescriptors <= baseline.descriptors() + ControlEndpoint.MAX_CONNECTIONS + TOLERANCE.descriptors(),
                        "descriptors " + baseline.descriptors() + " -> " + maxDescriptors);

                OutputStream toAttacker = attacker.getOutputStream();
                toAttacker.write("stop\n".getBytes(StandardCharsets.UTF_8));
                toAttacker.flush();
                // It reads the line between bursts of connects, so its last connection may come seconds later.
                for (String l; !"stopped".equals(l = lines.poll(30, TimeUnit.SECONDS)); ) assertNotNull(l, "the attacker stops");
                long stop = System.nanoTime();
                Await.within(Duration.ofNanos(2 * ControlEndpoint.HEAD_TIMEOUT_NS), () -> server.controlLoad().connections() == 0);
                long drainMs = (System.nanoTime() - stop) / 1_000_000;
                String drained = null;
                for (String l; (l = lines.poll(70, TimeUnit.SECONDS)) != null; ) {
                    if (l.startsWith("drained") || l.startsWith("held")) {
                        drained = l;
                        break;
                    }
                }
                System.out.printf("[control-flood] attacker (nobody) %s; endpoint kept at most %d (cap %d), %s; %d rounds of CLI + NBD + NVMe/TCP "
                                  + "during it; after stop: the server kept none after %d ms, the attacker saw %s; RSS before %d MiB, during at most %d MiB; "
                                  + "descriptors before %d, during at most %d%n",
                        last, maxKept, ControlEndpoint.MAX_CONNECTIONS, during, rounds, drainMs, drained, baseline.rssBytes() >> 20, maxRss >> 20,
                        baseline.descriptors(), maxDescriptors);
                assertTrue(drainMs < TimeUnit.NANOSECONDS.toMillis(ControlEndpoint.HEAD_TIMEOUT_NS) + 2_000,
                        "the server closed every stalled connection within the head deadline: " + drainMs + " ms");
                assertNotNull(drained, "the attacker ended");
                assertTrue(drained.startsWith("drained"), "the attacker saw every connection closed: " + drained);
            } finally {
                attacker.destroyForcibly().waitFor();
                Files.deleteIfExists(script);
            }
            Await.within(Duration.ofSeconds(20), () -> server.controlLoad().connections() == 0);
            assertEquals(0, server.controlLoad().connections(), "every connection gone");
            clients(server, control, nbdPort, nvmePort);
            String excess = ProcessResources.awaitNear(baseline, TOLERANCE, 20_000);
            System.out.println("[control-flood] after: " + ProcessResources.now() + " (baseline " + baseline + ")");
            assertNull(excess, "back to the baseline " + baseline);
        }
    }

    /** The CLI reads io.stat, a new NBD client reads a block, a new NVMe/TCP host makes a controller. */
    private void clients(Server server, String control, int nbdPort, int nvmePort) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = Main.run(new String[]{"--control", control, "read", "io.stat"}, Map.of("IOTARGET_RUNTIME_DIR", tokens.toString()),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        assertEquals(0, code, "the CLI: " + err.toString(StandardCharsets.UTF_8));
        try (SocketChannel nbd = RawClients.nbdTransmitting(nbdPort, "default", 0)) {
            assertEquals(0, RawClients.nbdRead(nbd, 1, 0, 4096), "an NBD read");
        }
        try (SocketChannel nvme = RawClients.nvmePastIcReq(nvmePort, 0)) {
            int id = RawClients.nvmeConnect(nvme, "nqn.2026-11.io.iotarget:default", "nqn.2014-08.org.nvmexpress:uuid:flood-test", 0, 0xFFFF, 32);
            assertTrue(id > 0, "an NVMe/TCP controller: " + id);
        }
    }

    private static ProcessResources settled() throws InterruptedException {
        ProcessResources.awaitNear(ProcessResources.now(), TOLERANCE, 0);
        return ProcessResources.now();
    }

    /** The attacker's report lines, as they come. */
    private static BlockingQueue<String> lines(InputStream in) {
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread.ofVirtual().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
                for (String l; (l = r.readLine()) != null; ) lines.add(l);
            } catch (IOException e) {
                // the attacker ended
            }
        });
        return lines;
    }
}
