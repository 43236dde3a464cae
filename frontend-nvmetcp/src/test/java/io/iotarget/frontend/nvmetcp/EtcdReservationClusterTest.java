package io.iotarget.frontend.nvmetcp;

import io.iotarget.cluster.EtcdClient;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.testkit.EtcdCluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Reservations kept in a real three-member etcd cluster, two target nodes in this JVM: a
 * reservation taken through one node holds on the other, a preempt reaches the other node
 * through the watch with its notice, a key that vanished fences the namespace instead of
 * reading as "no reservation", and an acknowledged reservation outlives a member's loss and
 * a restart of the whole cluster.
 */
class EtcdReservationClusterTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private static final int CONFLICT = Status.RESERVATION_CONFLICT | Status.DNR;
    private static final int WE = 1;
    private static final long KEY_A = 0xAAAA, KEY_B = 0xBBBB;
    private static final long INTERVAL_MS = 100, LEASE_MS = 3000;

    private EtcdCluster etcd;
    private final List<TargetFixture> nodes = new ArrayList<>();
    private final List<EtcdClient> clients = new ArrayList<>();

    @BeforeEach
    void start(@TempDir Path dir) throws Exception {
        etcd = EtcdCluster.start(dir);
    }

    @AfterEach
    void stop() {
        for (TargetFixture f : nodes) f.close();
        for (EtcdClient c : clients) c.close();
        etcd.close();
    }

    /** A node: a target whose namespace 1 has resv_enable, its reservations in etcd. */
    private TargetFixture node(String name) throws Exception {
        TargetFixture f = new TargetFixture();
        nodes.add(f);
        EtcdClient client = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofMillis(1000));
        clients.add(client);
        f.target.reservations().use(new EtcdReservationStore(client, name, null), INTERVAL_MS, LEASE_MS);
        f.tree.write(NS + "/enable", "0");
        f.tree.write(NS + "/resv_enable", "1");
        f.tree.write(NS + "/enable", "1");
        f.awaitReservationRead();
        return f;
    }

    private static ReservationHost host(TargetFixture node, int id) throws Exception {
        return new ReservationHost(node.port, TargetFixture.NQN, id);
    }

    interface Command {
        int status() throws Exception;
    }

    /** Repeats {@code command} until it answers {@code expected}, for up to 10 s. */
    private static void await(int expected, Command command, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int status;
        while ((status = command.status()) != expected && System.nanoTime() < deadline) Thread.sleep(20);
        assertEquals(expected, status, what);
    }

    private void etcdctl(String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("etcdctl", "--endpoints=" + String.join(",", etcd.endpoints())));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertEquals(0, p.waitFor(), "etcdctl " + String.join(" ", args) + ": " + out);
    }

    @Test
    void shouldMoveAPreemptedReservationAcrossNodesThroughEtcd() throws Exception {
        TargetFixture node1 = node("n1"), node2 = node("n2");
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (ReservationHost a = host(node1, 0xA1); ReservationHost b = host(node2, 0xB2)) {
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, a.acquire(0, WE, KEY_A, 0));
            await(CONFLICT, b::write, "node 2 refuses B's write");
            assertEquals(0, b.register(KEY_B));
            Future<TestHost.Completion> aer = pool.submit(() -> a.admin.execute(a.admin.sqe(0x0C, 0), null, 0, false));
            assertEquals(0, b.acquire(1, WE, KEY_B, KEY_A), "B preempts A through node 2");
            assertEquals(0x00800006, aer.get(10, TimeUnit.SECONDS).result(), "A hears of it on node 1, through the watch");
            ByteBuffer notice = ByteBuffer.wrap(a.admin.getLogPage(0x80, 64, 0, false).data()).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(1, notice.get(8), "registration preempted");
            await(CONFLICT, a::write, "node 1 refuses A's write");
            assertEquals(0, b.write(), "B writes through node 2");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void shouldFenceANamespaceWhoseKeyVanishedInsteadOfReadingItAsFree() throws Exception {
        TargetFixture node1 = node("n1");
        try (ReservationHost a = host(node1, 0xA1); ReservationHost c = host(node1, 0xC3)) {
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, a.acquire(0, WE, KEY_A, 0));
            assertEquals(CONFLICT, c.write());
            etcdctl("del", "/iotarget/resv/" + TargetFixture.NQN + "/1");        // a store restored from an old backup, say
            await(Status.ANA_INACCESSIBLE, c::write, "the node no longer vouches for the namespace: a path error, not a free namespace");
            assertEquals(Status.ANA_INACCESSIBLE, a.write(), "nor for the holder");
        }
    }

    @Test
    void shouldKeepAnAcknowledgedReservationThroughAMembersLossAndARestartOfTheCluster() throws Exception {
        TargetFixture node1 = node("n1");
        try (ReservationHost a = host(node1, 0xA1)) {
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, a.acquire(0, WE, KEY_A, 0));
            assertEquals((byte) 0xFF, a.admin.identify(0, 1).data()[31], "RESCAP: PTPL too, etcd keeps the state durably");
        }
        etcd.kill(etcd.leader());
        for (int i = 0; i < etcd.size(); i++) if (etcd.alive(i)) etcd.kill(i);
        for (int i = 0; i < etcd.size(); i++) etcd.restart(i);
        TargetFixture node2 = node("n2");
        try (ReservationHost b = host(node2, 0xB2)) {
            assertEquals(CONFLICT, b.write(), "A's reservation came back with the cluster");
            ByteBuffer report = b.report(4096, true);
            assertEquals(WE, report.get(4));
            assertEquals(KEY_A, report.getLong(64 + 8));
        }
    }
}
