package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Thousands of idle clients cost the server no threads and little memory, and it stays
 * responsive: 5,000 NBD connections in transmission and 1,000 NVMe/TCP connections past
 * ICReq, then a CLI read, a new NBD client's IO, and the NVMe connect limit cutting the
 * connections that never sent Connect.
 */
class ManyConnectionsTest {
    private static final int NBD_CONNECTIONS = 5_000;
    private static final int NVME_CONNECTIONS = 1_000;
    @TempDir
    Path tokens;

    @Test
    void shouldCarryThousandsOfIdleConnectionsAndStayResponsive() throws Exception {
        JsonNode config = Server.defaultConfig();
        int nvmePort = freePort();
        ((ObjectNode) config.get("server")).put("control", "127.0.0.1:0").put("nbd", "127.0.0.1:0").put("max_connections_per_host", 10_000);
        ((ObjectNode) config.at("/nvmet/ports/1")).put("addr_trsvcid", Integer.toString(nvmePort));
        try (Server server = Server.start(config, tokens)) {
            int nbdPort = server.nbdAddresses().getFirst().getPort();
            String control = io.iotarget.control.http.ControlEndpoint.hostPort(server.controlAddress());
            cli(control, "read", "io.stat");                         // warm the endpoint
            System.gc();
            int threadsBefore = ManagementFactory.getThreadMXBean().getThreadCount();
            long rssBefore = rssKib();
            long heapBefore = usedHeap();

            List<SocketChannel> clients = new ArrayList<>();
            try {
                long t0 = System.nanoTime();
                for (int i = 0; i < NBD_CONNECTIONS; i++) clients.add(RawClients.nbdTransmitting(nbdPort, "default", 0));
                for (int i = 0; i < NVME_CONNECTIONS; i++) clients.add(RawClients.nvmePastIcReq(nvmePort, 0));
                long connectMs = (System.nanoTime() - t0) / 1_000_000;
                System.gc();
                int threadsAfter = ManagementFactory.getThreadMXBean().getThreadCount();
                long rssAfter = rssKib();
                long heapAfter = usedHeap();

                long c0 = System.nanoTime();
                String stat = cli(control, "read", "io.stat");
                long cliMs = (System.nanoTime() - c0) / 1_000_000;
                Tools.require("nbdinfo", "/usr/bin/nbdinfo");
                long n0 = System.nanoTime();
                String size = Tools.ok(30, "nbdinfo", "--size", "nbd://127.0.0.1:" + nbdPort + "/default").strip();
                long nbdinfoMs = (System.nanoTime() - n0) / 1_000_000;

                System.out.printf("[many-connections] %d NBD (transmitting) + %d NVMe/TCP (past ICReq) idle, connected in %d ms: "
                                  + "threads %d -> %d, RSS %d -> %d MiB (+%.1f KiB per connection), heap %d -> %d MiB; "
                                  + "CLI read %d ms, nbdinfo %d ms%n",
                        NBD_CONNECTIONS, NVME_CONNECTIONS, connectMs, threadsBefore, threadsAfter, rssBefore / 1024, rssAfter / 1024,
                        (rssAfter - rssBefore) / (double) clients.size() / 2, heapBefore >> 20, heapAfter >> 20, cliMs, nbdinfoMs);
                assertEquals("1073741824", size);
                assertTrue(stat.isEmpty() || stat.contains("259:0"), stat);
                assertTrue(cliMs < 1_000, "a CLI read took " + cliMs + " ms with " + clients.size() + " idle connections");
                assertTrue(threadsAfter <= threadsBefore + 4, "threads " + threadsBefore + " -> " + threadsAfter);
                // Both ends of every connection live in this JVM: half of the growth is the server's.
                assertTrue(rssAfter - rssBefore < clients.size() * 2 * 64L, "RSS grew " + (rssAfter - rssBefore) + " KiB");

                // The NVMe/TCP connections never sent Connect: they are cut at the connect limit, the NBD ones stay.
                long deadline = System.nanoTime() + 20_000_000_000L;
                int closed = 0;
                for (SocketChannel c : clients.subList(NBD_CONNECTIONS, clients.size())) {
                    c.socket().setSoTimeout((int) Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
                    if (c.socket().getInputStream().read() < 0) closed++;
                }
                assertEquals(NVME_CONNECTIONS, closed, "NVMe/TCP connections without Connect closed by the server");
                assertTrue(server.nbdAddresses().size() == 1);
            } finally {
                for (SocketChannel c : clients) c.close();
            }
        }
    }

    private String cli(String control, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        String[] full = new String[args.length + 2];
        full[0] = "--control";
        full[1] = control;
        System.arraycopy(args, 0, full, 2, args.length);
        int code = Main.run(full, Map.of("IOTARGET_RUNTIME_DIR", tokens.toString()), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8));
        assertEquals(0, code);
        return out.toString(StandardCharsets.UTF_8);
    }

    private static long rssKib() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
        throw new IOException("no VmRSS");
    }

    private static long usedHeap() {
        Runtime r = Runtime.getRuntime();
        return r.totalMemory() - r.freeMemory();
    }
}
