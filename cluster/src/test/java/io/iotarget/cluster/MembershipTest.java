package io.iotarget.cluster;

import io.iotarget.model.Clock;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.TcpRelay;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Membership and its fence against a real three-member etcd cluster on loopback. */
class MembershipTest {
    private static final Duration TIMEOUT = Duration.ofMillis(300);

    @TempDir
    Path dir;
    private EtcdCluster etcd;
    private EtcdClient observer;
    private final List<AutoCloseable> closing = new CopyOnWriteArrayList<>();
    /** What the listener heard, in order. */
    private final List<String> heard = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"));
        observer = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(2));
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : closing.reversed()) c.close();
        observer.close();
        etcd.close();
    }

    private Membership join(String node, String uri, long leaseMs) throws Exception {
        EtcdClient client = EtcdClient.create(uri, EtcdClient.Access.NONE, TIMEOUT);
        closing.add(client);
        Membership m = new Membership(client, node, leaseMs, Clock.SYSTEM);
        closing.add(m);
        m.addListener(new Membership.Listener() {
            @Override
            public void fenced(long lease, String why) {
                heard.add("fenced " + Long.toHexString(lease));
            }

            @Override
            public void joined(long lease, boolean rejoin) {
                heard.add((rejoin ? "rejoined " : "joined ") + Long.toHexString(lease));
            }
        });
        m.start();
        Await.until(Duration.ofSeconds(10), () -> m.fence().holds(), () -> node + " never joined: " + heard);
        return m;
    }

    /** Whether the member key of {@code node} is in etcd, as another client reads it now. */
    private boolean present(String node) {
        java.io.IOException last = null;
        for (int i = 0; i < 2 * etcd.size(); i++) {
            try {
                return !observer.range(Membership.key(node)).kvs().isEmpty();
            } catch (java.io.IOException e) {
                last = e;                                            // a killed member: the client moved to the next
            }
        }
        throw new AssertionError(last);
    }

    /** Waits until the listener heard a re-join (it is told after the fence holds with the new lease). */
    private void awaitRejoin(Membership m, long oldLease) throws InterruptedException {
        Await.until(Duration.ofSeconds(20), () -> m.fence().holds() && m.fence().lease() != oldLease && heard.getLast().startsWith("rejoined "),
                    () -> "no re-join: " + heard);
    }

    /** Samples the fence every millisecond on a thread of its own; the first time it was seen false, or 0. */
    private static AtomicLong watchFence(Fence fence, List<AutoCloseable> closing) {
        AtomicLong firstFalseNs = new AtomicLong();
        Thread t = Thread.ofPlatform().daemon().start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                long now = System.nanoTime();
                if (!fence.holds(now)) {
                    firstFalseNs.compareAndSet(0, now);
                    return;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
        });
        closing.add(t::interrupt);
        return firstFalseNs;
    }

    @Test
    void aLeaseGivenUpFencesAtOnceTakesItsKeysWithItAndTheNodeRejoinsWithANewOne() throws Exception {
        Membership m = join("a", etcd.uri(), 10_000);                // a TTL of 10 s: keys gone sooner were revoked, not expired
        long lease = m.fence().lease();
        observer.put("/test/ack/a", "7".getBytes(java.nio.charset.StandardCharsets.UTF_8), lease);   // as a reservation acknowledgement
        long startNs = System.nanoTime();

        assertTrue(m.relinquish("test"));

        assertFalse(m.fence().holds(), "fenced before relinquish returned");
        Await.until(Duration.ofSeconds(5), () -> {
            try {
                return observer.range("/test/ack/a").kvs().isEmpty();
            } catch (java.io.IOException e) {
                return false;
            }
        }, () -> "the key on the given-up lease is still there");
        long goneMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs);
        assertTrue(goneMs < 5_000, "revoked, not expired: gone after " + goneMs + " ms");
        awaitRejoin(m, lease);
        assertTrue(heard.contains("fenced " + Long.toHexString(lease)), "the listeners heard it: " + heard);
        assertEquals(1, m.losses());
    }

    @Test
    void keepAlivesKeepTheLeaseAndTheMemberIsListedWithIt() throws Exception {
        Membership m = join("a", etcd.uri(), 1000);
        AtomicLong fenced = watchFence(m.fence(), closing);
        long lease = m.fence().lease();
        Await.until(Duration.ofSeconds(5), () -> m.members().containsKey("a"), () -> "members " + m.members());
        assertEquals(new Membership.Member("a", lease), m.members().get("a"));
        Thread.sleep(3_000);                                         // three TTLs: only keep-alives hold it
        assertEquals(0, fenced.get(), "fenced while keep-alives succeeded");
        assertEquals(lease, m.fence().lease());
        assertEquals(0, m.losses());
        assertTrue(present("a"));
        assertEquals(TimeUnit.SECONDS.toNanos(1), m.ttlNs(), "lease_ms 1000 is a TTL of 1 s");
    }

    @Test
    void nodeCutOffFromTheStoreIsFencedBeforeItsKeyDisappearsAndRejoinsWithANewLease() throws Exception {
        try (TcpRelay relay = TcpRelay.start("127.0.0.1", etcd.clientPort(0))) {
            Membership m = join("a", "etcd://" + relay.hostPort(), 1000);
            Await.until(Duration.ofSeconds(5), () -> present("a"), () -> "a's key never appeared");
            long lease = m.fence().lease();
            AtomicLong fencedNs = watchFence(m.fence(), closing);

            long cutNs = System.nanoTime();
            relay.cut();
            // Read the key until it is gone; note when the last read that still found it was sent.
            long lastPresentSentNs = 0;
            long goneNs = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (System.nanoTime() < deadline) {
                long sent = System.nanoTime();
                if (present("a")) {
                    lastPresentSentNs = sent;
                } else {
                    goneNs = System.nanoTime();
                    break;
                }
                Thread.sleep(2);
            }
            assertNotEquals(0, goneNs, "the key outlived its lease");
            assertNotEquals(0, fencedNs.get(), "not fenced although the key is gone");
            long fencedMs = TimeUnit.NANOSECONDS.toMillis(fencedNs.get() - cutNs);
            long stillThereMs = TimeUnit.NANOSECONDS.toMillis(lastPresentSentNs - cutNs);
            System.out.printf("cut-off node: fenced %d ms after the cut; its key still read at %d ms, gone at %d ms%n",
                              fencedMs, stillThereMs, TimeUnit.NANOSECONDS.toMillis(goneNs - cutNs));
            assertTrue(fencedNs.get() < lastPresentSentNs,
                       "fenced at " + fencedMs + " ms, but the key was last read present by a read sent at " + stillThereMs + " ms");

            relay.restore();
            awaitRejoin(m, lease);
            assertTrue(heard.contains("fenced " + Long.toHexString(lease)), heard.toString());
            Await.until(Duration.ofSeconds(5), () -> present("a"), () -> "the new key never appeared");
            assertEquals(1, m.losses());
        }
    }

    @Test
    void killingTheEtcdLeaderKeepsTheNodeUnfencedWhenANewLeaderIsElectedWithinTheTtl() throws Exception {
        Membership m = join("a", etcd.uri(), 2000);
        AtomicLong fenced = watchFence(m.fence(), closing);
        long lease = m.fence().lease();
        int leader = etcd.leader();
        long killNs = System.nanoTime();
        etcd.kill(leader);
        Await.until(Duration.ofSeconds(10), () -> {
            try {
                int now = etcd.leader();
                return now >= 0 && now != leader;
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }, () -> "no new leader");
        long electedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killNs);
        Thread.sleep(2_500);                                          // more than a TTL on the new leader
        System.out.printf("leader killed: new leader seen after %d ms; fenced: %s%n", electedMs, fenced.get() != 0);
        assertEquals(0, fenced.get(), "fenced although a new leader came " + electedMs + " ms after the kill");
        assertEquals(lease, m.fence().lease());
        assertTrue(present("a"));
    }

    @Test
    void losingTwoOfThreeMembersFencesTheNodeAndTheirReturnRejoinsItWithANewLease() throws Exception {
        Membership m = join("a", etcd.uri(), 1000);
        long lease = m.fence().lease();
        AtomicLong fencedNs = watchFence(m.fence(), closing);
        long killNs = System.nanoTime();
        etcd.kill(1);
        etcd.kill(2);
        Await.until(Duration.ofSeconds(5), () -> fencedNs.get() != 0, () -> "not fenced without a quorum");
        System.out.printf("quorum lost: fenced %d ms after%n", TimeUnit.NANOSECONDS.toMillis(fencedNs.get() - killNs));
        // A leader left without a quorum still renews leases (renewal is not a raft write) until it
        // steps down, an election timeout or two later; the lease then lasts a TTL from that renewal.
        long boundMs = 1000 + 2 * EtcdCluster.ELECTION_MS + 500;                  // + 500 ms for a loaded machine
        assertTrue(fencedNs.get() - killNs <= TimeUnit.MILLISECONDS.toNanos(boundMs),
                   "fenced " + TimeUnit.NANOSECONDS.toMillis(fencedNs.get() - killNs) + " ms after: later than a TTL after the last renewal possible");
        etcd.restart(1);
        etcd.restart(2);
        awaitRejoin(m, lease);
        assertTrue(heard.contains("fenced " + Long.toHexString(lease)), heard.toString());
        Await.until(Duration.ofSeconds(5), () -> present("a"), () -> "the new key never appeared");
    }
}
