package io.iotarget.frontend.nvmetcp;

import io.iotarget.backend.file.FileBackend;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.Membership;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Clock;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.TcpRelay;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A change that removes access holds on every node before it completes: two target nodes in
 * this JVM over one file, a three-member etcd, each node with its membership lease. Node 1's
 * client reaches etcd through a relay the test can cut.
 */
class ReservationAcknowledgementTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private static final int WE = 1;
    private static final long KEY_A = 0xAAAA, KEY_B = 0xBBBB;
    /** The membership lease (etcd rounds it to whole seconds). */
    private static final long MEMBER_LEASE_MS = 2000;
    /** The old store-contact fence, far beyond the membership lease: only the lease fences here. */
    private static final long INTERVAL_MS = 100, CONTACT_LEASE_MS = 60_000;
    private static final int WBPS = 64;

    @TempDir
    Path dir;
    private EtcdCluster etcd;
    private TcpRelay relay;
    private Path file;
    private final List<AutoCloseable> closing = new ArrayList<>();
    private final ExecutorService pool = Executors.newCachedThreadPool();

    private record Node(TargetFixture fixture, Membership membership) {
    }

    @BeforeEach
    void start() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"));
        relay = TcpRelay.start("127.0.0.1", etcd.clientPort(0));
        file = dir.resolve("disk");
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(1), TargetFixture.DEVICE_BYTES - 1);
        }
    }

    @AfterEach
    void stop() throws Exception {
        pool.shutdownNow();
        for (int i = closing.size() - 1; i >= 0; i--) closing.get(i).close();
        relay.close();
        etcd.close();
    }

    /** A node over the shared file, namespace 1 with resv_enable in group "a", its reservations in etcd through {@code uri}. */
    private Node node(String name, String uri) throws Exception {
        EtcdClient client = EtcdClient.create(uri, EtcdClient.Access.NONE, Duration.ofMillis(500));
        closing.add(client);
        Membership membership = new Membership(client, name, MEMBER_LEASE_MS, Clock.SYSTEM);
        closing.add(membership);
        membership.start();
        Await.until(Duration.ofSeconds(10), () -> membership.fence().holds(), () -> name + " holds its lease");
        TargetFixture f = new TargetFixture();
        closing.add(f);
        f.engine.addDevice("file", FileBackend.open(file, 512, false, false), null, Engine.DEFAULT_QUEUE_DEPTH);
        var cg = f.engine.controller();
        cg.write("cgroup.subtree_control", "+io");
        Group tenant = cg.mkdir("a");
        f.target.reservations().use(new EtcdReservationStore(client, name, membership.fence()), INTERVAL_MS, CONTACT_LEASE_MS);
        f.tree.write(NS + "/enable", "0");
        f.tree.write(NS + "/device_path", "file");
        f.tree.write(NS + "/cgroup_id", Long.toString(tenant.id()));
        f.tree.write(NS + "/resv_enable", "1");
        f.tree.write(NS + "/enable", "1");
        f.awaitReservationRead();
        return new Node(f, membership);
    }

    private ReservationHost host(Node node, int id) throws Exception {
        ReservationHost h = new ReservationHost(node.fixture.port, TargetFixture.NQN, id);
        closing.add(h);
        return h;
    }

    @Test
    void shouldKeepWritesHeldOnAnotherNodeOffTheDiskOncePreemptAndAbortCompletes() throws Exception {
        Node node1 = node("n1", etcd.uri()), node2 = node("n2", etcd.uri());
        ReservationHost a = host(node1, 0xA1);
        ReservationHost b = host(node2, 0xB2);
        assertEquals(0, a.register(KEY_A));
        assertEquals(0, a.acquire(0, WE, KEY_A, 0));
        assertEquals(0, b.register(KEY_B));
        node1.fixture.engine.controller().write("a/io.max", node1.fixture.engine.device("file").number() + " wbps=" + WBPS);
        var subsystem = node1.fixture.target.subsystems.get(TargetFixture.NQN);
        Controller ca = node1.fixture.target.controllers(subsystem).find(a.cntlid);
        var reservation = subsystem.table.find(1).reservation();
        Future<Integer> held;
        byte fill = 0;
        do {                                                        // until node 1's io.max holds one of A's writes
            assertTrue(fill < 50, "io.max holds one of 50 writes");
            byte f = ++fill;
            held = pool.submit(() -> a.write(0, f));
            Future<Integer> w = held;
            Await.until(Duration.ofSeconds(10), () -> w.isDone() || ca.busyOn(1) && reservation.inBackend() == 0 && sleep(50)
                                                                     && ca.busyOn(1) && reservation.inBackend() == 0,
                        () -> "A's write was answered or io.max holds it");
        } while (held.isDone());
        assertNotEquals(fill, DiskBlocks.onDisk(file, 0)[0], "A's last write is held");

        assertEquals(0, b.acquire(2, WE, KEY_B, KEY_A), "B preempts and aborts A through node 2");
        assertNotEquals(fill, DiskBlocks.onDisk(file, 0)[0], "A's held write is not on the disk when B is answered");
        ReservationHost a2 = host(node1, 0xA1);                      // A's other controller: the first is busy with the held write
        assertEquals(Status.RESERVATION_CONFLICT | Status.DNR, a2.write(1, (byte) 0x77), "node 1 refuses A at once: it acknowledged");
        // Node 1 dropped it before acknowledging: its answer is on its way (io.max would hold it for seconds more).
        assertEquals(Status.ABORT_REQUESTED, held.get(5, TimeUnit.SECONDS), "node 1 aborted A's held write");
        node1.fixture.engine.controller().write("a/io.max", node1.fixture.engine.device("file").number() + " wbps=max");
        assertEquals(0, b.write(0, (byte) 0x5B));
        assertArrayEquals(DiskBlocks.filled((byte) 0x5B), DiskBlocks.onDisk(file, 0), "B's data");
        assertNotEquals((byte) 0x77, DiskBlocks.onDisk(file, 1)[0]);
    }

    @Test
    void shouldCompleteAPreemptOnlyAfterANodeCutOffFromEtcdLostItsLease() throws Exception {
        Node node1 = node("n1", "etcd://" + relay.hostPort()), node2 = node("n2", etcd.uri());
        ReservationHost a = host(node1, 0xA1);
        ReservationHost b = host(node2, 0xB2);
        assertEquals(0, a.register(KEY_A));
        assertEquals(0, a.acquire(0, WE, KEY_A, 0));
        assertEquals(0, b.register(KEY_B));
        // A writes through node 1 all along; each answer is noted with when its write was sent.
        AtomicBoolean writing = new AtomicBoolean(true);
        List<long[]> answers = java.util.Collections.synchronizedList(new ArrayList<>());
        Future<?> writer = pool.submit(() -> {
            byte f = 0;
            while (writing.get()) {
                f = (byte) (f % 100 + 1);
                long sentNs = System.nanoTime();
                int s = a.write(0, f);
                answers.add(new long[] {sentNs, s, f});
            }
            return null;
        });
        Await.until(Duration.ofSeconds(10), () -> answers.size() > 10, () -> "A writes through node 1");
        relay.cut();
        long cutNs = System.nanoTime();
        assertEquals(0, b.acquire(1, WE, KEY_B, KEY_A), "B preempts A through node 2");
        long preemptedNs = System.nanoTime();
        long deadlineNs = node1.membership.fence().validUntilNs();
        assertTrue(deadlineNs - preemptedNs < 0, "node 1's own deadline passed before B's preempt completed");
        assertTrue(preemptedNs - cutNs > TimeUnit.MILLISECONDS.toNanos(500),
                   "the preempt waited for node 1's lease: " + TimeUnit.NANOSECONDS.toMillis(preemptedNs - cutNs) + " ms");
        Thread.sleep(200);
        writing.set(false);
        writer.get(30, TimeUnit.SECONDS);
        for (long[] w : answers) {
            if (w[0] - deadlineNs > 0) assertNotEquals(0L, w[1], "A's write sent after node 1's deadline must fail");
        }
        assertEquals(Status.ANA_INACCESSIBLE, a.write(0, (byte) 0x66), "node 1 is fenced: a path error");
        assertEquals(0, b.write(0, (byte) 0x5B), "B writes through node 2");
        assertArrayEquals(DiskBlocks.filled((byte) 0x5B), DiskBlocks.onDisk(file, 0), "B's data");
    }

    private static boolean sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return true;
    }
}
