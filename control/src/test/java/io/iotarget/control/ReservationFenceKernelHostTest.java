package io.iotarget.control;

import io.iotarget.control.ReservationClient.Host;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.GuestChannel;
import io.iotarget.testkit.GuestVm;
import io.iotarget.testkit.TcpRelay;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static io.iotarget.testkit.Ports.freePort;
import static io.iotarget.control.ReservationClient.ACQUIRE;
import static io.iotarget.control.ReservationClient.ACQUIRE_PREEMPT_AND_ABORT;
import static io.iotarget.control.ReservationClient.REGISTER;
import static io.iotarget.control.ReservationClient.RELEASE;
import static io.iotarget.control.ReservationClient.RELEASE_CLEAR;
import static io.iotarget.control.ReservationClient.WRITE_EXCLUSIVE;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Issue 31 with the Linux host (Debian 12's 6.1, native multipath; src/test/vm/resv-fence.sh
 * has the steps): two {@code iotarget serve} nodes of one shared subsystem over one O_DIRECT
 * file, reservations in a three-member etcd cluster that node 1 reaches only through relays the
 * test can cut. The guest is host A, holding Write Exclusive. Node 1 cut off from etcd fences:
 * its ANA log page shows the group Inaccessible with an ANA change event, and the host moves a
 * verified fio to node 2 with no IO error. Node 1 reconnected re-joins and is optimized again.
 * Then host B (the test's own NVMe/TCP client) preempt-and-aborts A through node 2 while A
 * writes through node 1, and writes its pattern: A's later writes fail with Reservation
 * Conflict, and the file holds B's data at every block B wrote. Last, with A holding again and
 * writing through node 1, node 1 is cut off and B preempt-and-aborts through node 2 at once: the
 * preempt completes once node 1's lease is gone, and the same holds of A's writes and the file.
 * The guest prints what it measured (RESULT lines); every step is a CHECK.
 */
class ReservationFenceKernelHostTest {
    private static final String NQN = "nqn.2026-12.io.iotarget:fence";
    private static final String UUID = "3f6b0d2a-8c41-4e97-a5d3-1b9e7c2f4a60";
    private static final long INTERVAL_MS = 200;
    private static final long LEASE_MS = 1000;
    private static final long KEY_A = 0xA, KEY_B = 0xB;
    /** What B writes in step 4: the guest's 64 blocks of 4 KiB, as 512-byte LBAs. */
    private static final int B_LBAS = 64 * 8;
    private static final int LBAS_PER_WRITE = 8;
    private static final byte B_FILL = (byte) 0xBB, B_FILL_2 = (byte) 0xBC;
    private static final Pattern IOS = Pattern.compile("(?:rios|wios)=(\\d+)");

    @TempDir
    Path dir;
    private final HttpClient http = HttpClient.newHttpClient();
    private Path image;

    /** One node: its config, its process, and its control endpoint's token. */
    private final class Node {
        final int nvmePort;
        final ServerProcess server;
        final String token;

        Node(int id, String store, String anaState) throws IOException, InterruptedException {
            nvmePort = freePort();
            Path config = dir.resolve("node" + id + ".json");
            Files.writeString(config, """
                    { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                      "cluster": { "node": "n%d", "store": "%s", "nodes": 2, "interval_ms": %d, "lease_ms": %d },
                      "backends": { "shared": { "type": "file", "path": "%s", "direct": 1, "enable": 1 } },
                      "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { } } },
                      "nvmet": {
                        "subsystems": { "%s": { "attr_allow_any_host": 1, "attr_serial": "iotarget-fence", "shared": 1,
                                                "attr_cntlid_min": %d, "attr_cntlid_max": %d,
                                                "namespaces": { "1": { "device_path": "shared", "device_uuid": "%s", "cgroup": "tenants/a",
                                                                       "resv_enable": 1, "enable": 1 } } } },
                        "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1", "addr_trsvcid": "%d",
                                          "ana_groups": { "1": { "ana_state": "%s" } }, "subsystems": ["%s"] } } } }
                    """.formatted(id, store, INTERVAL_MS, LEASE_MS, image, NQN, id * 100 - 99, id * 100, UUID, nvmePort, anaState, NQN));
            server = ServerProcess.start(config, dir, null);
            String port = server.control().substring(server.control().lastIndexOf(':') + 1);
            token = Files.readString(dir.resolve("control-127.0.0.1-" + port + ".token")).strip();
        }

        /** The tenant's IOs so far (io.stat's rios + wios), read over the control endpoint. */
        long ios() throws IOException, InterruptedException {
            HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create("http://" + server.control() + "/v1/read?path=tenants/a/io.stat"))
                                                       .header("Authorization", "Bearer " + token).build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), r.body());
            long sum = 0;
            Matcher m = IOS.matcher(r.body());
            while (m.find()) sum += Long.parseLong(m.group(1));
            return sum;
        }

        /** How many times the server logged {@code text} so far. */
        int logged(String text) throws IOException {
            String out = server.output();
            int n = 0;
            for (int i = out.indexOf(text); i >= 0; i = out.indexOf(text, i + 1)) n++;
            return n;
        }
    }

    /**
     * Polls {@code node}'s log every 5 ms, on a thread of its own, until {@code text} appears more
     * than {@code before} times, for up to 60 s: completes with the ms from {@code fromNs} to the
     * first look that found it, or -1.
     */
    private static CompletableFuture<Long> msUntilLogged(Node node, String text, int before, long fromNs) {
        CompletableFuture<Long> ms = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            try {
                while (System.nanoTime() < deadline) {
                    if (node.logged(text) > before) {
                        ms.complete(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - fromNs));
                        return;
                    }
                    Thread.sleep(5);
                }
                ms.complete(-1L);
            } catch (IOException | InterruptedException e) {
                ms.completeExceptionally(e);
            }
        });
        return ms;
    }

    /**
     * Host B's preempt-and-abort of A through node 2, then B's pattern {@code fill} over the
     * guest's blocks; {@code beforePreempt} runs just before the preempt. The answer: the
     * preempt's status and time, and how many of B's writes failed.
     */
    private static String preempt(ReservationClient b, byte fill, Runnable beforePreempt) throws IOException {
        beforePreempt.run();
        long t0 = System.nanoTime();
        int preempted = b.reservation(2, ACQUIRE, ACQUIRE_PREEMPT_AND_ABORT | WRITE_EXCLUSIVE, KEY_B, KEY_A);
        long preemptMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        int failures = 0;
        List<String> failed = new ArrayList<>();
        for (int lba = 0; lba < B_LBAS; lba += LBAS_PER_WRITE) {
            long t = System.nanoTime();
            int status = b.write(10 + lba / LBAS_PER_WRITE, lba, LBAS_PER_WRITE, fill);
            if (status != 0) {
                failures++;
                failed.add("lba" + lba + ":0x" + Integer.toHexString(status) + "@" + TimeUnit.NANOSECONDS.toMillis(t - t0) + "ms");
            }
        }
        return "preempt_status=" + preempted + " preempt_ms=" + preemptMs + " b_write_failures=" + failures + " failed=" + failed;
    }

    private interface Command {
        int status(int commandId) throws IOException;
    }

    /** {@code command} sent again while it answers ANA Inaccessible (0x302, no DNR), for up to 10 s; its last status. */
    private static int retried(Command command) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int commandId = 100;
        int status;
        while ((status = command.status(commandId++)) == 0x302 && System.nanoTime() < deadline) Thread.sleep(20);
        return status;
    }

    /** The shared file's blocks B wrote, read directly: how many hold something other than B's data. */
    private String check(byte fill) throws IOException {
        List<Integer> mismatched = new ArrayList<>();
        ByteBuffer b = ByteBuffer.allocate(B_LBAS * ReservationClient.BLOCK);
        try (FileChannel ch = FileChannel.open(image, StandardOpenOption.READ)) {
            while (b.hasRemaining() && ch.read(b, b.position()) >= 0) {
                // read all of it
            }
        }
        for (int lba = 0; lba < B_LBAS; lba++) {
            for (int i = 0; i < ReservationClient.BLOCK; i++) {
                if (b.get(lba * ReservationClient.BLOCK + i) != fill) {
                    mismatched.add(lba);
                    break;
                }
            }
        }
        return "blocks=" + B_LBAS + " mismatched=" + mismatched.size() + " first_mismatched=" + (mismatched.isEmpty() ? "none" : "lba " + mismatched.getFirst());
    }

    @Test
    void linuxHostMovesOffAFencedNodeAndAPreemptThroughTheOtherHoldsOnDisk() throws Exception {
        GuestVm.require();
        image = dir.resolve("shared.img");
        try (RandomAccessFile f = new RandomAccessFile(image.toFile(), "rw")) {
            f.setLength(128L << 20);
        }
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd"))) {
            List<TcpRelay> relays = new ArrayList<>();
            for (int m = 0; m < etcd.size(); m++) relays.add(TcpRelay.start("127.0.0.1", etcd.clientPort(m)));
            String node1Store = "etcd://" + String.join(",", relays.stream().map(TcpRelay::hostPort).toList());
            Node node1 = new Node(1, node1Store, "optimized");
            Node node2 = null;
            List<CompletableFuture<Long>> fenced = new ArrayList<>();
            try {
                node2 = new Node(2, etcd.uri(), "non-optimized");
                Node[] nodes = {null, node1, node2};
                Node survivor = node2;
                try (GuestChannel channel = GuestChannel.open("ReservationFenceKernelHostTest", p -> switch (p[0]) {
                    case "ios" -> Long.toString(nodes[Integer.parseInt(p[1])].ios());
                    case "cut" -> {
                        int before = node1.logged(" fenced, lease ");
                        long cutNs = System.nanoTime();
                        for (TcpRelay r : relays) r.cut();
                        fenced.add(msUntilLogged(node1, " fenced, lease ", before, cutNs));
                        yield "cut";
                    }
                    // node 1's membership logged that it lost its lease: how long after the cut
                    case "fenced" -> "fenced_ms=" + fenced.getLast().get() + " lease_ms=" + LEASE_MS;
                    case "restore" -> {
                        int before = node1.logged(" re-joined with lease ");
                        long t0 = System.nanoTime();
                        for (TcpRelay r : relays) r.restore();
                        yield "rejoined_ms=" + msUntilLogged(node1, " re-joined with lease ", before, t0).get();
                    }
                    case "preempt" -> {
                        try (ReservationClient b = ReservationClient.connect(NQN, survivor.nvmePort, Host.of(0xBB))) {
                            yield "register_status=" + b.reservation(1, REGISTER, 0, 0, KEY_B) + " " + preempt(b, B_FILL, () -> { });
                        }
                    }
                    case "check" -> check(B_FILL);
                    case "reset" -> {
                        try (ReservationClient b = ReservationClient.connect(NQN, survivor.nvmePort, Host.of(0xBB))) {
                            // ANA Inaccessible (a store read timed out on a loaded machine) is a path error: retried, as a host would
                            yield "clear_status=" + retried(cid -> b.reservation(cid, RELEASE, RELEASE_CLEAR | WRITE_EXCLUSIVE, KEY_B))
                                  + " register_status=" + retried(cid -> b.reservation(cid, REGISTER, 0, 0, KEY_B));
                        }
                    }
                    // node 1 cut off and, at once, B's preempt through node 2: it completes only once node 1's lease is gone
                    case "cut-preempt" -> {
                        try (ReservationClient b = ReservationClient.connect(NQN, survivor.nvmePort, Host.of(0xBB))) {
                            int before = node1.logged(" fenced, lease ");
                            String r = preempt(b, B_FILL_2, () -> {
                                for (TcpRelay relay : relays) relay.cut();
                                fenced.add(msUntilLogged(node1, " fenced, lease ", before, System.nanoTime()));
                            });
                            yield r + " node1_fenced_ms=" + fenced.getLast().get() + " lease_ms=" + LEASE_MS;
                        }
                    }
                    case "check2" -> check(B_FILL_2);
                    default -> "ERR unknown " + String.join(" ", p);
                })) {
                    GuestVm.Result result = GuestVm.run(GuestVm.script("resv-fence.sh"), Map.of(
                            "NQN", NQN, "PORT1", Integer.toString(node1.nvmePort), "PORT2", Integer.toString(node2.nvmePort),
                            "CTL_PORT", Integer.toString(channel.port())), List.of(GuestVm.script("two-nodes.sh")), 600);
                    result.lines("RESULT").forEach(l -> System.out.println("[fence] " + l));
                    System.out.println("[fence] node 1's log:\n" + node1.server.output() + "\n[fence] node 2's log:\n" + node2.server.output());
                    List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
                    assertEquals(List.of(), failed, result.text());
                    assertEquals(23, result.lines("CHECK").size(), "every step reported: " + result.text());
                    assertEquals(0, result.exitCode(), result.text());
                    assertEquals("blocks=" + B_LBAS + " mismatched=0 first_mismatched=none", check(B_FILL_2), "after the guest disconnected, the file still holds B's data");
                }
            } finally {
                node1.server.close();
                if (node2 != null) node2.server.close();
                for (TcpRelay r : relays) r.close();
            }
        }
    }
}
