package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.Membership;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.model.Clock;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.TcpRelay;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static io.iotarget.frontend.nvmetcp.reservation.ReservationState.ACQUIRE;
import static io.iotarget.frontend.nvmetcp.reservation.ReservationState.PREEMPT;
import static io.iotarget.frontend.nvmetcp.reservation.ReservationState.REGISTER;
import static io.iotarget.frontend.nvmetcp.reservation.ReservationState.WRITE_EXCLUSIVE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The committing node's acknowledgement wait never answers success without proof, and a node
 * that cannot install a copy in time gives its lease up instead of acknowledging; keys that
 * prefix each other do not disturb each other. Two nodes' {@link Reservations} in this JVM, each
 * with its membership lease, on a three-member etcd; host A holds Write Exclusive, host B
 * preempts it through node 1. The bounds are shortened ({@link Reservations#bounds}): a drain
 * 1.5 s, so a node gives up after 1.5 + 1 + 1 s (its install bound, lease 1 s).
 */
class ReservationBoundsTest {
    private static final String NQN = "nqn.2026-12.io.iotarget:bounds";
    private static final long A = 0xA, B = 0xB, KEY_A = 0xAAAA, KEY_B = 0xBBBB;
    private static final long LEASE_MS = 1000, INTERVAL_MS = 100, DRAIN_MS = 1500;

    @TempDir
    Path dir;
    private EtcdCluster etcd;
    private final List<AutoCloseable> closing = new ArrayList<>();
    private final CountDownLatch unstall = new CountDownLatch(1);

    /** A node: its membership (the relays of its membership's client, when cut-able), its reservations and namespace 1 of {@link #NQN}. */
    private record Node(String name, Membership membership, Reservations reservations, NamespaceReservation ns, List<TcpRelay> relays) {
    }

    @BeforeEach
    void start() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"));
    }

    @AfterEach
    void stop() {
        unstall.countDown();
        for (int i = closing.size() - 1; i >= 0; i--) {
            try {
                closing.get(i).close();
            } catch (Exception e) {
                // closing anyway
            }
        }
        etcd.close();
    }

    /**
     * Node {@code name} with namespace 1 open and read. {@code follow}: the store follows the
     * membership (it can give its lease up), else it has only the fence. {@code relayed}: the
     * membership reaches etcd through relays the test can cut; the store has a client of its own.
     */
    private Node node(String name, boolean follow, boolean relayed, long ackWaitMs) throws Exception {
        List<TcpRelay> relays = new ArrayList<>();
        EtcdClient storeClient = client(etcd.uri());
        EtcdClient memberClient = storeClient;
        if (relayed) {
            List<String> hostPorts = new ArrayList<>();
            for (int i = 0; i < etcd.size(); i++) {
                TcpRelay r = TcpRelay.start("127.0.0.1", etcd.clientPort(i));
                closing.add(r);
                relays.add(r);
                hostPorts.add(r.hostPort());
            }
            memberClient = client("etcd://" + String.join(",", hostPorts));
        }
        Membership m = new Membership(memberClient, name, LEASE_MS, Clock.SYSTEM);
        closing.add(m);
        m.start();
        Await.until(Duration.ofSeconds(20), () -> m.fence().holds(), () -> name + " holds its lease");
        Reservations res = new Reservations((nqn, nsid, notices, abort) -> CompletableFuture.completedFuture(null));
        closing.add(res);
        res.bounds(DRAIN_MS, ackWaitMs);
        res.use(follow ? EtcdReservationStore.following(storeClient, name, m) : new EtcdReservationStore(storeClient, name, m.fence()), INTERVAL_MS, LEASE_MS);
        NamespaceReservation ns = res.open(NQN, 1);
        Await.until(Duration.ofSeconds(20), () -> ns.state() != null && !res.fenced(), () -> name + " read namespace 1");
        return new Node(name, m, res, ns, relays);
    }

    private EtcdClient client(String uri) throws Exception {
        EtcdClient c = EtcdClient.create(uri, EtcdClient.Access.NONE, Duration.ofMillis(Math.max(100, LEASE_MS / 3)));
        closing.add(c);
        return c;
    }

    /** What {@code node}'s reservations answered {@code command}, and the other node as it was at that moment. */
    private record Answer(int status, long otherLease, boolean otherFenced, long atNs) {
    }

    private static CompletableFuture<Answer> change(Node node, Node other, Function<ReservationState, ReservationState.Outcome> command) {
        CompletableFuture<Answer> answer = new CompletableFuture<>();
        node.reservations().change(status -> answer.complete(new Answer(status, other.membership().fence().lease(), other.reservations().fenced(), System.nanoTime())),
                                   node.ns(), command);
        return answer;
    }

    private static int run(Node node, Node other, Function<ReservationState, ReservationState.Outcome> command) throws Exception {
        return change(node, other, command).get(60, TimeUnit.SECONDS).status();
    }

    /** A holds Write Exclusive, B is registered, both through node 1; node 2 has installed it. */
    private void holdA(Node n1, Node n2) throws Exception {
        assertEquals(Status.SUCCESS, run(n1, n2, s -> s.register(A, A, REGISTER, false, 0, 0, KEY_A, false)));
        assertEquals(Status.SUCCESS, run(n1, n2, s -> s.acquire(A, A, ACQUIRE, false, WRITE_EXCLUSIVE, KEY_A, 0)));
        assertEquals(Status.SUCCESS, run(n1, n2, s -> s.register(B, B, REGISTER, false, 0, 0, KEY_B, false)));
        Await.until(Duration.ofSeconds(10), () -> n2.ns().state() != null && n2.ns().state().holds(A, A), () -> "node 2 installed A's reservation");
    }

    private static Function<ReservationState, ReservationState.Outcome> bPreemptsA() {
        return s -> s.acquire(B, B, PREEMPT, false, WRITE_EXCLUSIVE, KEY_B, KEY_A);
    }

    private static IoRequest write() {
        return new IoRequest().set(IoOp.WRITE, 0, 0, 512, null);
    }

    /** Blocks {@code node}'s copy lane until the test ends: its reservation thread for the namespace is stalled. */
    private void stallCopyLane(Node node) {
        node.ns().copy.execute(() -> {
            try {
                unstall.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
    }

    @Test
    void aNodeWhoseDrainCannotFinishGivesUpItsLeaseInsteadOfAcknowledging() throws Exception {
        Node n1 = node("n1", true, false, 20_000);
        Node n2 = node("n2", true, false, 20_000);
        holdA(n1, n2);
        long lease2 = n2.membership().fence().lease();
        // A's write passed node 2's gate and never leaves the backend (a request stuck in a device).
        assertEquals(IoStatus.OK, n2.ns().enter(A, A, write()));

        Answer answer = change(n1, n2, bPreemptsA()).get(60, TimeUnit.SECONDS);

        assertEquals(Status.SUCCESS, answer.status(), "the preempt completes once node 2's key went with its lease");
        assertNotEquals(lease2, answer.otherLease(), "node 2 gave its lease up before node 1 answered (it acknowledged with A's write in its backend before)");
        assertTrue(answer.otherFenced(), "node 2 refused the namespace's IO when node 1 answered");
        assertNotEquals(IoStatus.OK, n2.ns().enter(A, A, write()), "node 2 refuses A's next write (fenced, or re-joined with B's reservation)");
        assertTrue(n2.membership().losses() >= 1);
    }

    @Test
    void aNodeThatVanishedDuringTheWaitIsFencedAtTheStorageBeforeTheChangeIsAnswered() throws Exception {
        Node n1 = node("n1", true, false, 20_000);
        Node n2 = node("n2", true, false, 20_000);
        holdA(n1, n2);
        List<String> fencedBeforeAnswer = new java.util.concurrent.CopyOnWriteArrayList<>();
        ((EtcdReservationStore) n1.reservations().store()).fenceStorageWith(fencedBeforeAnswer::add);
        assertEquals(IoStatus.OK, n2.ns().enter(A, A, write()));           // stuck in node 2's backend: it gives its lease up

        Answer answer = change(n1, n2, bPreemptsA()).get(60, TimeUnit.SECONDS);

        assertEquals(Status.SUCCESS, answer.status());
        assertEquals(List.of("n2"), fencedBeforeAnswer, "node 2, whose key went with its lease, was fenced at the storage before the answer");
    }

    @Test
    void aChangeWhoseVanishedNodeCannotBeFencedAtTheStorageAnswersInternalErrorNotSuccess() throws Exception {
        Node n1 = node("n1", true, false, 20_000);
        Node n2 = node("n2", true, false, 20_000);
        holdA(n1, n2);
        ((EtcdReservationStore) n1.reservations().store()).fenceStorageWith(dead -> {
            throw new java.io.IOException("the monitors do not answer");
        });
        assertEquals(IoStatus.OK, n2.ns().enter(A, A, write()));

        assertEquals(Status.INTERNAL, change(n1, n2, bPreemptsA()).get(60, TimeUnit.SECONDS).status(),
                     "a write node 2 passed its gate with might still land: no success");
    }

    @Test
    void aNodeWhoseReservationLaneStallsGivesUpItsLeaseSoTheChangeCompletes() throws Exception {
        Node n1 = node("n1", true, false, 20_000);
        Node n2 = node("n2", true, false, 20_000);
        holdA(n1, n2);
        long lease2 = n2.membership().fence().lease();
        stallCopyLane(n2);
        long startNs = System.nanoTime();

        Answer answer = change(n1, n2, bPreemptsA()).get(60, TimeUnit.SECONDS);

        long tookMs = TimeUnit.NANOSECONDS.toMillis(answer.atNs() - startNs);
        assertEquals(Status.SUCCESS, answer.status(), "after " + tookMs + " ms");
        assertNotEquals(lease2, answer.otherLease(), "node 2, which never acknowledged, gave its lease up before node 1 answered");
        assertTrue(answer.otherFenced(), "node 2 was fenced when node 1 answered");
        assertTrue(tookMs < 15_000, "node 2 gave up within its install bound (3.5 s) and an interval, not the acknowledgement bound: " + tookMs + " ms");
        assertEquals(Status.ANA_INACCESSIBLE, n2.ns().check(A, A, true), "node 2 does not serve A's write with its old copy");
    }

    @Test
    void aCommitterThatLosesItsLeaseWhileWaitingAnswersAPathErrorNotSuccess() throws Exception {
        Node n1 = node("n1", true, true, 20_000);
        Node n2 = node("n2", false, false, 20_000);               // only a fence: it cannot give its lease up
        holdA(n1, n2);
        stallCopyLane(n2);
        long startNs = System.nanoTime();
        CompletableFuture<Answer> answer = change(n1, n2, bPreemptsA());
        Await.until(Duration.ofSeconds(10), () -> n1.ns().state().holds(B, B), () -> "node 1 committed and installed B's preempt");
        for (TcpRelay r : n1.relays()) r.cut();                    // node 1's membership loses etcd; its store still reaches it

        Answer a = answer.get(60, TimeUnit.SECONDS);

        long tookMs = TimeUnit.NANOSECONDS.toMillis(a.atNs() - startNs);
        assertEquals(Status.ANA_INACCESSIBLE, a.status(), "fenced while waiting: a path error, not success (after " + tookMs + " ms)");
        assertTrue(tookMs < 10_000, "answered when its fence ended, not at the acknowledgement bound: " + tookMs + " ms");
    }

    @Test
    void aWaitBeyondItsBoundAnswersInternalErrorNotSuccess() throws Exception {
        Node n1 = node("n1", true, false, 3_000);
        Node n2 = node("n2", false, false, 3_000);                // keeps its lease and never acknowledges
        holdA(n1, n2);
        stallCopyLane(n2);

        Answer a = change(n1, n2, bPreemptsA()).get(60, TimeUnit.SECONDS);

        assertEquals(Status.INTERNAL, a.status(), "no proof within the bound: Internal Error, never success");
        assertTrue(n2.membership().fence().holds(), "node 2 still held its lease: its key never went");
    }

    @Test
    void aChangeOfNamespace10DoesNotFailNamespace1sCompareAndSwap() throws Exception {
        EtcdClient c1 = client(etcd.uri()), c2 = client(etcd.uri());
        try (EtcdReservationStore s1 = new EtcdReservationStore(c1, "n1", null);
             EtcdReservationStore s2 = new EtcdReservationStore(c2, "n2", null)) {
            String ns1 = NQN + "/1", ns10 = NQN + "/10";
            s1.read(ns1);
            assertTrue(s1.replace(ns1, ReservationState.EMPTY.register(A, A, REGISTER, false, 0, 0, KEY_A, false).next(), List.of()));
            // Both namespaces exist; node 1 reads namespace 1, then node 2 changes namespace 10.
            s2.read(ns10);
            assertTrue(s2.replace(ns10, ReservationState.EMPTY.register(B, B, REGISTER, false, 0, 0, KEY_B, false).next(), List.of()));
            ReservationState one = s1.read(ns1);
            ReservationState before10 = s2.read(ns10);
            assertTrue(s2.replace(ns10, before10.register(A, A, REGISTER, false, 0, 0, KEY_A, false).next(), List.of()));

            assertTrue(s1.replace(ns1, one.register(B, B, REGISTER, false, 0, 0, KEY_B, false).next(), List.of()),
                       "namespace 1 is unchanged since node 1 read it: namespace 10's change is no conflict");
            assertEquals(2, s1.read(ns1).registrants().size(), "namespace 1 read as its own key");
            assertEquals(2, s2.read(ns10).registrants().size());
        }
    }

    @Test
    void theAcknowledgementWaitIsWokenByTheWatchAndFallsBackToReadingWithout() throws Exception {
        Node n1 = node("n1", true, false, 20_000);
        Node n2 = node("n2", true, false, 20_000);
        holdA(n1, n2);
        EtcdReservationStore s1 = (EtcdReservationStore) n1.reservations().store();
        // Node 2's lane is held up for 600 ms: node 1 waits that long for its acknowledgement.
        CountDownLatch held = new CountDownLatch(1);
        n2.ns().copy.execute(() -> {
            try {
                held.await(600, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        long readsBefore = s1.acknowledgementReads();
        assertEquals(Status.SUCCESS, run(n1, n2, s -> s.register(0x100, 0x100, REGISTER, false, 0, 0, 0x100, false)));
        long reads = s1.acknowledgementReads() - readsBefore;
        // One read, the watch waking the wait, and one every 250 ms besides; a poll every 2 ms made hundreds.
        assertTrue(reads <= 8, reads + " acknowledgement reads while waiting about 600 ms");

        // Without the watch (a store whose watch never started), the wait reads until the key holds the version.
        EtcdClient c = client(etcd.uri());
        try (EtcdReservationStore polling = new EtcdReservationStore(c, "n3", n1.membership().fence())) {
            long version = n1.ns().state().version() + 1;
            CompletableFuture<Integer> registered = new CompletableFuture<>();
            Thread.ofVirtual().start(() -> {
                try {
                    // What node 1 commits next, node 2 acknowledges; n3 waits for it without a watch.
                    registered.complete(run(n1, n2, s -> s.register(0x999, 0x999, REGISTER, false, 0, 0, 0x999, false)));
                } catch (Exception e) {
                    registered.completeExceptionally(e);
                }
            });
            assertEquals(ReservationStore.Acknowledged.ALL, polling.awaitAcknowledged(NQN + "/1", version, TimeUnit.SECONDS.toNanos(20)));
            assertTrue(n2.ns().state().version() >= version, "node 2 had installed the version the wait ended on");
            assertEquals(Status.SUCCESS, registered.get(30, TimeUnit.SECONDS));
        }
    }
}
