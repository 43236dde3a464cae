package io.iotarget.frontend.nvmetcp;

import io.iotarget.cluster.ClusterSettings;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.model.ConfigTree;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.GuestVm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.RandomAccessFile;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Reservations across two nodes, judged by the Linux host (6.1, native multipath) and nvme-cli
 * 2.3 (src/test/vm/resv-host.sh): two host identities take turns on one multipath device whose
 * paths are two targets sharing one file and one three-member etcd cluster; the holder writes, the other
 * gets Reservation Conflict, before and after node 1 is killed, and a preempt through node 2
 * moves the reservation. One guest boot.
 */
class ReservationKernelHostTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";

    /** One node: the fixture's target serving {@code disk} as namespace 1 with the identity both nodes share, reservations in {@code etcd}, joined as the server joins. */
    private static TargetFixture node(EtcdCluster etcd, String name, Path disk, int cntlidMin) throws Exception {
        TargetFixture f = new TargetFixture();
        f.target.reservations().use(EtcdReservationStore.join(new ClusterSettings(name, etcd.uri(), 2, 200, 1000)), 200, 1000);
        ConfigTree t = f.tree;
        String s = "subsystems/" + TargetFixture.NQN;
        t.write(s + "/attr_serial", "resv0123456789");
        t.write(s + "/attr_cntlid_min", Integer.toString(cntlidMin));
        t.write(s + "/attr_cntlid_max", Integer.toString(cntlidMin + 99));
        t.write(NS + "/enable", "0");
        t.write(NS + "/device_path", disk.toString());
        t.write(NS + "/buffered_io", "1");
        t.write(NS + "/device_uuid", "5e7a1c2d-3b4f-4a6e-8d9c-0f1e2d3c4b5a");
        t.write(NS + "/device_nguid", "5e7a1c2d-3b4f-4a6e-8d9c-0f1e2d3c4b5a");
        t.write(NS + "/resv_enable", "1");
        t.write(NS + "/enable", "1");
        f.awaitReservationRead();
        return f;
    }

    @Test
    void linuxHostsHonourAReservationAcrossNodes(@TempDir Path dir) throws Exception {
        GuestVm.require();
        Path disk = dir.resolve("disk.img");
        try (RandomAccessFile f = new RandomAccessFile(disk.toFile(), "rw")) {
            f.setLength(TargetFixture.DEVICE_BYTES);
        }
        try (EtcdCluster etcd = EtcdCluster.start(dir.resolve("etcd")); TargetFixture node2 = node(etcd, "n2", disk, 101);
             ServerSocket control = new ServerSocket(0, 4, InetAddress.getLoopbackAddress())) {
            TargetFixture node1 = node(etcd, "n1", disk, 1);
            java.util.concurrent.atomic.AtomicBoolean killed = new java.util.concurrent.atomic.AtomicBoolean();
            Thread.ofVirtual().start(() -> {
                // The guest's one command: kill node 1 (its target closes: every connection drops), answered "ok".
                try (Socket s = control.accept()) {
                    String line = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8)).readLine();
                    if ("kill-node1".equals(line == null ? null : line.strip()) && killed.compareAndSet(false, true)) node1.close();
                    s.getOutputStream().write("ok".getBytes(StandardCharsets.UTF_8));
                } catch (java.io.IOException e) {
                    // the guest sees no "ok"
                }
            });
            try {
                GuestVm.Result result = GuestVm.run(GuestVm.script("resv-host.sh"), Map.of(
                        "NQN", TargetFixture.NQN, "PORT1", Integer.toString(node1.port), "PORT2", Integer.toString(node2.port),
                        "CTL_PORT", Integer.toString(control.getLocalPort())), List.<Path>of(), 400);
                List<String> failed = result.lines("CHECK").stream().filter(l -> !l.contains(" ok")).toList();
                assertEquals(List.of(), failed, result.text());
                assertEquals(26, result.lines("CHECK").size(), "every step reported: " + result.text());
                assertEquals(0, result.exitCode(), result.text());
            } finally {
                if (killed.compareAndSet(false, true)) node1.close();
            }
        }
    }
}
