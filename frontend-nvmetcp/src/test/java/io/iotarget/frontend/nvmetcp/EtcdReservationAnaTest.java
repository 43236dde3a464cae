package io.iotarget.frontend.nvmetcp;

import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.Membership;
import io.iotarget.frontend.nvmetcp.TestHost.Completion;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.model.Clock;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.TcpRelay;
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
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * ANA on a node cut off from etcd, and its re-join: two target nodes in this JVM, a three-member
 * etcd, each node with its membership lease; node 1 reaches etcd through two relays the test
 * cuts, one for its membership, one for its reservations (so it can re-join before its watch
 * could tell it what changed).
 * While node 1 is fenced its ANA log page shows the reservation namespace's group Inaccessible
 * and its controllers get an ANA change event, so a host moves to another path; once it has
 * re-joined and read the state again the page is optimized again (another event), and what it
 * enforces is what changed through node 2 meanwhile, never its copy from before.
 */
class EtcdReservationAnaTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private static final int WE = 1;
    private static final long KEY_A = 0xAAAA, KEY_B = 0xBBBB;
    /** The membership lease (etcd rounds it to whole seconds). */
    private static final long MEMBER_LEASE_MS = 2000;
    /**
     * The interval re-read is slow and the old store-contact fence far away: only the lease
     * fences, and only the re-join's re-read (not the interval's) can stop a stale copy at once.
     */
    private static final long INTERVAL_MS = 1000, CONTACT_LEASE_MS = 60_000;
    /** What the Linux host asks for: header + NANAGRPID descriptors + MNAN nsids. */
    private static final int ANA_LOG_BYTES = 16 + 128 * 32 + 1024 * 4;
    private static final int AEN_ANA_CHANGE = 0x000C0302;
    private static final int OPTIMIZED = 0x01, INACCESSIBLE = 0x03;

    @TempDir
    Path dir;
    private EtcdCluster etcd;
    /** Node 1's way to etcd: its membership's, its reservations'. */
    private TcpRelay memberRelay, storeRelay;
    private final List<AutoCloseable> closing = new ArrayList<>();
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @BeforeEach
    void start() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"));
        memberRelay = TcpRelay.start("127.0.0.1", etcd.clientPort(0));
        storeRelay = TcpRelay.start("127.0.0.1", etcd.clientPort(0));
    }

    @AfterEach
    void stop() throws Exception {
        pool.shutdownNow();
        memberRelay.restore();
        storeRelay.restore();
        for (int i = closing.size() - 1; i >= 0; i--) closing.get(i).close();
        memberRelay.close();
        storeRelay.close();
        etcd.close();
    }

    private record Node(TargetFixture fixture, Membership membership) {
    }

    /**
     * A node whose namespace 1 (ANA group 1) has resv_enable, its membership in etcd through
     * {@code memberUri}, its reservations through {@code storeUri}, following its membership.
     */
    private Node node(String name, String memberUri, String storeUri) throws Exception {
        EtcdClient memberClient = EtcdClient.create(memberUri, EtcdClient.Access.NONE, Duration.ofMillis(500));
        closing.add(memberClient);
        EtcdClient client = EtcdClient.create(storeUri, EtcdClient.Access.NONE, Duration.ofMillis(500));
        closing.add(client);
        Membership membership = new Membership(memberClient, name, MEMBER_LEASE_MS, Clock.SYSTEM);
        closing.add(membership);
        membership.start();
        Await.until(Duration.ofSeconds(10), () -> membership.fence().holds(), () -> name + " holds its lease");
        TargetFixture f = new TargetFixture();
        closing.add(f);
        f.target.reservations().use(EtcdReservationStore.following(client, name, membership), INTERVAL_MS, CONTACT_LEASE_MS);
        f.tree.write(NS + "/enable", "0");
        f.tree.write(NS + "/resv_enable", "1");
        f.tree.write(NS + "/enable", "1");
        f.awaitReservationRead();
        return new Node(f, membership);
    }

    private ReservationHost host(TargetFixture node, int id) throws Exception {
        ReservationHost h = new ReservationHost(node.port, TargetFixture.NQN, id);
        closing.add(h);
        return h;
    }

    /** Group 1's state on the ANA log page (read without RAE, so the next change raises an event again). */
    private static int group1(TestHost h) throws Exception {
        Completion c = h.getLogPage(0x0C, ANA_LOG_BYTES, 0, false);
        assertEquals(0, c.status());
        ByteBuffer log = ByteBuffer.wrap(c.data()).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(1, log.getInt(16), "the first descriptor is group 1");
        return log.get(32);
    }

    private Future<Completion> parkAer(TestHost h) {
        return pool.submit(() -> h.execute(h.sqe(0x0C, 0), null, 0, false));
    }

    /**
     * The first ANA change event from {@code first} on, parking the next request after any other
     * event (the reservation notice of A's preemption reaches node 1 when it reconnects).
     */
    private Completion anaEvent(TestHost h, Future<Completion> first) throws Exception {
        long deadlineNs = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(MEMBER_LEASE_MS * 5);
        for (Future<Completion> f = first;; f = parkAer(h)) {
            Completion c = f.get(Math.max(1, deadlineNs - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (c.result() == AEN_ANA_CHANGE) return c;
        }
    }

    @Test
    void shouldShowTheGroupInaccessibleWhileCutOffAndEnforceTheChangeMadeMeanwhileAfterTheRejoin() throws Exception {
        Node n1 = node("n1", "etcd://" + memberRelay.hostPort(), "etcd://" + storeRelay.hostPort());
        TargetFixture node1 = n1.fixture(), node2 = node("n2", etcd.uri(), etcd.uri()).fixture();
        ReservationHost a = host(node1, 0xA1);
        ReservationHost b = host(node2, 0xB2);
        assertEquals(0, a.admin.setFeatures(0x0B, 1 << 11).status(), "A asks for ANA change events");
        assertEquals(0, a.register(KEY_A));
        assertEquals(0, a.acquire(0, WE, KEY_A, 0));
        assertEquals(0, b.register(KEY_B));
        assertEquals(OPTIMIZED, group1(a.admin), "node 1 serves group 1");

        Future<Completion> fencedEvent = parkAer(a.admin);
        memberRelay.cut();
        storeRelay.cut();
        long cutNs = System.nanoTime();
        Completion event = anaEvent(a.admin, fencedEvent);
        long eventMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cutNs);
        assertEquals(AEN_ANA_CHANGE, event.result(), "an ANA change event when node 1 is fenced");
        assertEquals(INACCESSIBLE, group1(a.admin), "node 1's page sends the host elsewhere");
        assertEquals(Status.ANA_INACCESSIBLE, a.write(0, (byte) 0x11), "and its IO is refused as a path error");
        System.out.println("cut -> ANA change event and page Inaccessible: " + eventMs + " ms (lease " + MEMBER_LEASE_MS + " ms)");

        assertEquals(0, b.acquire(1, WE, KEY_B, KEY_A), "B preempts A through node 2 while node 1 is cut off");

        // A writes through node 1 all along the restore: none may succeed, before or after the re-join.
        AtomicBoolean writing = new AtomicBoolean(true);
        List<Integer> statuses = java.util.Collections.synchronizedList(new ArrayList<>());
        ReservationHost a2 = host(node1, 0xA1);
        Future<?> writer = pool.submit(() -> {
            while (writing.get()) statuses.add(a2.write(0, (byte) 0x22));
            return null;
        });
        ReservationHost c = host(node1, 0xC3);                      // reads the page while A's event request is parked
        Future<Completion> servedEvent = parkAer(a.admin);
        memberRelay.restore();                                       // node 1 re-joins, but cannot read the state yet
        Await.until(Duration.ofSeconds(10), () -> n1.membership().fence().holds(), () -> "node 1 re-joined with a new lease");
        Thread.sleep(2 * INTERVAL_MS);                               // A keeps writing through node 1 under the new lease
        synchronized (statuses) {
            assertTrue(statuses.size() > 10, "A wrote through node 1 meanwhile");
            for (int s : statuses) assertNotEquals(0, s, "node 1 used its copy from before the cut under its new lease: A's write succeeded");
        }
        assertEquals(INACCESSIBLE, group1(c.admin), "not read again yet: node 1's page still sends the host elsewhere");
        storeRelay.restore();
        long restoreNs = System.nanoTime();
        anaEvent(a.admin, servedEvent);                                // once node 1 serves again
        long servedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restoreNs);
        assertEquals(OPTIMIZED, group1(a.admin), "node 1's page is optimized again after the re-join and the re-read");
        System.out.println("restore -> ANA change event and page optimized: " + servedMs + " ms");
        Thread.sleep(300);                                           // A keeps writing through node 1 after the re-join
        writing.set(false);
        writer.get(30, TimeUnit.SECONDS);
        // The message is a supplier: built only on failure, since A's writes number tens of thousands
        // and a string of them made for each one took over a minute.
        for (int s : statuses) assertNotEquals(0, s, () -> "node 1 used its copy from before the cut: A's write succeeded; " + statuses);
        assertEquals(Status.RESERVATION_CONFLICT | Status.DNR, statuses.get(statuses.size() - 1), "node 1 enforces B's reservation");
        ReservationHost b1 = host(node1, 0xB2);
        assertEquals(0, b1.write(0, (byte) 0x33), "B writes through node 1");
    }
}
