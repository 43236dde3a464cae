package io.iotarget.frontend.nvmetcp;

import io.iotarget.cluster.ClusterSettings;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.testkit.EtcdCluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Reservations kept in a real three-member etcd cluster and shared by two nodes (two targets
 * serving the same subsystem and namespace, each joined as the server joins,
 * {@link EtcdReservationStore#join}: its own client, membership lease and fence): a reservation taken through
 * node 1 holds on node 2, a preempt through node 2 reaches node 1 and its notice the preempted
 * host there, the reservation outlives node 1, and a node that cannot reach the store grants
 * nothing and, after the lease, serves no IO on the namespace (every member stopped), and serves
 * again once the store answers.
 */
class ReservationClusterTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private static final int CONFLICT = Status.RESERVATION_CONFLICT | Status.DNR;
    private static final int WE = 1, EA = 2;
    private static final long KEY_A = 0xAAAA, KEY_B = 0xBBBB, KEY_C = 0xCCCC;
    private static final long INTERVAL_MS = 100, LEASE_MS = 1500;

    private EtcdCluster etcd;
    private final List<TargetFixture> nodes = new ArrayList<>();

    @BeforeEach
    void start(@TempDir Path dir) throws Exception {
        etcd = EtcdCluster.start(dir);
    }

    @AfterEach
    void stop() throws Exception {
        for (TargetFixture f : nodes) f.close();
        etcd.close();
    }

    /** A node: a target whose namespace 1 has resv_enable, its reservations in the store. */
    private TargetFixture node(String name) throws Exception {
        TargetFixture f = new TargetFixture();
        nodes.add(f);
        f.target.reservations().use(EtcdReservationStore.join(new ClusterSettings(name, etcd.uri(), 2, INTERVAL_MS, LEASE_MS)), INTERVAL_MS, LEASE_MS);
        f.tree.write(NS + "/enable", "0");
        f.tree.write(NS + "/resv_enable", "1");
        f.tree.write(NS + "/enable", "1");
        f.awaitReservationRead();                       // enabling only queues the store's read
        return f;
    }

    private static ReservationHost host(TargetFixture node, int id) throws Exception {
        return new ReservationHost(node.port, TargetFixture.NQN, id);
    }

    interface Command {
        int status() throws Exception;
    }

    /** Repeats {@code command} until it answers {@code expected}, for up to 10 s (a change reaches the other node by etcd's watch, or at its next interval; a node serves once its first lease is granted). */
    private static void await(int expected, Command command, String what) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int status;
        while ((status = command.status()) != expected && System.nanoTime() < deadline) Thread.sleep(20);
        assertEquals(expected, status, what);
    }

    @Test
    void shouldHoldAReservationTakenThroughOneNodeOnTheOther() throws Exception {
        TargetFixture node1 = node("n1"), node2 = node("n2");
        try (ReservationHost a = host(node1, 0xA1); ReservationHost b = host(node2, 0xB2)) {
            await(0, b::write, "nobody holds it yet");
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, a.acquire(0, WE, KEY_A, 0));
            ByteBuffer report = b.report(4096, true);
            assertEquals(WE, report.get(4), "node 2 reports node 1's reservation");
            assertEquals(KEY_A, report.getLong(64 + 8));
            assertEquals(1, report.get(64 + 2));
            await(CONFLICT, b::write, "node 2 refuses B's write");
            assertEquals(0, b.read(), "Write Exclusive: B still reads");
            assertEquals(CONFLICT, b.acquire(0, WE, 0, 0), "B is not registered anywhere");
            assertEquals(0, b.register(KEY_B));
            assertEquals(CONFLICT, b.acquire(0, EA, KEY_B, 0), "A holds it, through the other node");
            assertEquals(CONFLICT, a.register(KEY_C), "A registered with another key, through node 1");
        }
    }

    @Test
    void shouldMovePreemptedReservationAcrossNodesAndTellThePreemptedHost() throws Exception {
        TargetFixture node1 = node("n1"), node2 = node("n2");
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try (ReservationHost a = host(node1, 0xA1); ReservationHost b = host(node2, 0xB2)) {
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, a.acquire(0, WE, KEY_A, 0));
            assertEquals(0, b.register(KEY_B));
            Future<TestHost.Completion> aer = pool.submit(() -> a.admin.execute(a.admin.sqe(0x0C, 0), null, 0, false));
            assertEquals(0, b.acquire(1, WE, KEY_B, KEY_A), "B preempts A through node 2");
            assertEquals(0x00800006, aer.get(10, TimeUnit.SECONDS).result(), "A hears of it on node 1");
            ByteBuffer notice = ByteBuffer.wrap(a.admin.getLogPage(0x80, 64, 0, false).data()).order(ByteOrder.LITTLE_ENDIAN);
            assertEquals(1, notice.get(8), "registration preempted");
            assertEquals(1, notice.getInt(12));
            await(CONFLICT, a::write, "node 1 refuses A's write");
            assertEquals(0, b.write(), "B writes through node 2");
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void shouldKeepTheReservationWhenTheNodeItWasTakenThroughDies() throws Exception {
        TargetFixture node1 = node("n1"), node2 = node("n2");
        try (ReservationHost a = host(node1, 0xA1); ReservationHost b = host(node2, 0xB2)) {
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, a.acquire(0, EA, KEY_A, 0));
            node1.close();
            nodes.remove(node1);
            await(CONFLICT, b::read, "Exclusive Access held by A, node 1 gone");
            try (ReservationHost a2 = host(node2, 0xA1)) {
                assertEquals(0, a2.write(), "A, through node 2, is still the holder");
                assertEquals(0, a2.release(0, EA, KEY_A));
            }
            assertEquals(0, b.write());
        }
    }

    @Test
    void shouldGrantNothingWithoutTheStoreAndFenceIoAfterTheLease() throws Exception {
        TargetFixture node1 = node("n1"), node2 = node("n2");
        try (ReservationHost a = host(node1, 0xA1); ReservationHost c = host(node2, 0xC3)) {
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, a.acquire(0, WE, KEY_A, 0));
            await(CONFLICT, c::write, "node 2 knows");
            for (int i = 0; i < etcd.size(); i++) etcd.stop(i);   // the whole store answers nothing
            try {
                assertEquals(Status.ANA_INACCESSIBLE, c.register(KEY_C), "no registration without the store");
                assertEquals(Status.ANA_INACCESSIBLE, c.acquire(1, WE, KEY_C, KEY_A), "no preempt without the store");
                assertEquals(Status.ANA_INACCESSIBLE, a.release(1, 0, KEY_A), "no clear without the store");
                await(Status.ANA_INACCESSIBLE, c::read, "after the lease node 2 serves no IO on the namespace");
                await(Status.ANA_INACCESSIBLE, a::write, "nor does node 1, even to the holder");
            } finally {
                for (int i = 0; i < etcd.size(); i++) etcd.cont(i);
            }
            await(0, a::write, "the store answers again: the holder writes");
            await(CONFLICT, c::write, "and C is refused again");
            ByteBuffer report = c.report(4096, true);
            assertEquals(1, report.getShort(5), "C's registration never happened");
            assertEquals(KEY_A, report.getLong(64 + 8));
        }
    }
}
