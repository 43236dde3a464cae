package io.iotarget.cluster;

import io.iotarget.cluster.ShareStore.Report;
import io.iotarget.cluster.ShareStore.Share;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rebalancing on a real three-member etcd cluster: the numbers of the package documentation's example. */
class EtcdShareStoreTest {
    private static final long LIMIT = 9000;
    private static final long LEASE_MS = 1000;
    private static final String KEY = "iotarget:/tenants/a:disk:riops";
    private static final long FLOOR = 150;

    @TempDir
    Path dir;
    private EtcdCluster etcd;
    private EtcdShareStore store;
    /** What each node enforces: its floor until its first answer, then the answers it applied. */
    private final java.util.Map<String, Long> held = new java.util.HashMap<>();

    @BeforeEach
    void start() throws Exception {
        etcd = EtcdCluster.start(dir);
        store = EtcdShareStore.connect(etcd.uri(), EtcdClient.Access.NONE, Duration.ofMillis(500));
    }

    @AfterEach
    void stop() throws Exception {
        store.close();
        etcd.close();
    }

    private Share exchange(String node, long demand) throws Exception {
        return exchange(node, demand, LEASE_MS);
    }

    /** One exchange of {@code node}, which then applies the answer. */
    private Share exchange(String node, long demand, long leaseMs) throws Exception {
        Share share = exchangeLost(node, demand, leaseMs);
        held.put(node, share.share());
        return share;
    }

    /** One exchange of {@code node} whose answer never reaches it (a timeout after the store applied it): it goes on holding what it held. */
    private Share exchangeLost(String node, long demand, long leaseMs) throws Exception {
        List<Share> shares = store.exchange(node, 3, leaseMs, List.of(new Report(KEY, LIMIT, demand, held.getOrDefault(node, FLOOR), FLOOR)));
        assertEquals(1, shares.size());
        return shares.getFirst();
    }

    /** Each node's share after every node exchanged {@code rounds} times with the same demands. */
    private long[] rounds(int rounds, long... demands) throws Exception {
        long[] shares = new long[demands.length];
        for (int r = 0; r < rounds; r++) {
            for (int n = 0; n < demands.length; n++) shares[n] = exchange("node" + (n + 1), demands[n]).share();
        }
        return shares;
    }

    @Test
    void shouldSplitEvenlyWhenAllAreSaturatedAndGiveOneNodeAllButTheFloors() throws Exception {
        assertEquals(new Share(150 + 8550, false), exchange("node1", LIMIT));        // alone so far: the others' floors kept
        long[] even = rounds(3, LIMIT, LIMIT, LIMIT);
        assertEquals(List.of(3000L, 3000L, 3000L), List.of(even[0], even[1], even[2]));
        // Three rounds: nodes 2 and 3 shrink at the first, the store counts it at the second, node 1 grows at the third.
        long[] one = rounds(3, LIMIT, 0, 0);
        assertEquals(List.of(8700L, 150L, 150L), List.of(one[0], one[1], one[2]));
        assertTrue(exchange("node1", LIMIT).known());
    }

    @Test
    void shouldNeverAnswerMoreThanTheOthersLeaveAndFollowDemandWithinTwoRounds() throws Exception {
        rounds(2, LIMIT, 0, 0);
        // The load moves to node 3: its first answer is what nodes 1 and 2 leave (150),
        long first = exchange("node3", LIMIT).share();
        assertEquals(150, first);
        // node 1 gives its share up at its next exchange, node 3 takes it at its own.
        long[] moved = rounds(2, 0, 0, LIMIT);
        assertEquals(List.of(150L, 150L, 8700L), List.of(moved[0], moved[1], moved[2]));
    }

    @Test
    void shouldCountWhatANodeHeldUntilItSaysItAppliedASmallerAnswer() throws Exception {
        rounds(2, LIMIT, 0, 0);
        assertEquals(8700, held.get("node1"));
        // Node 1 goes idle, but its answer is lost: it still enforces 8700, and says so next time.
        exchangeLost("node1", 0, LEASE_MS);
        assertEquals(150, exchange("node3", LIMIT).share(), "node 1 may still enforce 8700");
        assertEquals(150, exchange("node1", 0).share());
        assertEquals(150, exchange("node3", LIMIT).share(), "node 1 said it held 8700 when it took 150");
        exchange("node1", 0);
        assertEquals(8700, exchange("node3", LIMIT).share(), "node 1 said it applied 150");
    }

    @Test
    void shouldShrinkTheOthersWhenANodeSaysItHoldsMoreThanTheStoreKnew() throws Exception {
        long[] two = rounds(3, LIMIT, LIMIT);
        assertEquals(List.of(4425L, 4425L), List.of(two[0], two[1]));
        // Node 3 was cut off and fell back to limit / nodes; the store had dropped it.
        held.put("node3", 3000L);
        assertEquals(150, exchange("node3", LIMIT).share());
        assertEquals(9000 - 4425 - 3000, exchange("node1", LIMIT).share(), "node 3 still holds 3000 until it says otherwise");
    }

    @Test
    void shouldWaterFillSmallDemandsFirst() throws Exception {
        // node 1 uses 2000 (demand 2500 with headroom), nodes 2 and 3 want everything.
        long[] s = rounds(3, 2500, LIMIT, LIMIT);
        assertEquals(2500, s[0]);
        assertEquals(3250, s[1]);
        assertEquals(3250, s[2]);
        assertEquals(LIMIT, s[0] + s[1] + s[2]);
    }

    @Test
    void shouldDropANodeWhoseLeaseRanOutWithinALeasePlusEtcdsSweepPlusTwoIntervals() throws Exception {
        exchange("node3", LIMIT);               // node 3 reports once, then dies
        long lastNs = System.nanoTime();
        long[] before = rounds(1, LIMIT, LIMIT);
        assertTrue(before[0] + before[1] + 3000 <= LIMIT + 1, before[0] + " + " + before[1]);
        // Nodes 1 and 2 exchange every interval (200 ms) until they hold node 3's share, node 3's floor kept.
        long[] after = new long[2];
        Await.until(Duration.ofSeconds(10), () -> {
            try {
                long[] s = rounds(1, LIMIT, LIMIT);
                after[0] = s[0];
                after[1] = s[1];
                if (s[0] == 4425 && s[1] == 4425) return true;
                Thread.sleep(200);
                return false;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }, () -> "shares " + after[0] + ", " + after[1]);
        long tookMs = (System.nanoTime() - lastNs) / 1_000_000;
        System.out.printf("node 3's share taken over %d ms after its last exchange (lease %d ms)%n", tookMs, LEASE_MS);
        // The lease, etcd's sweep of expired leases (every 500 ms), two intervals to see it, and room for a loaded machine.
        assertTrue(tookMs <= LEASE_MS + 500 + 2 * 200 + 1000, "took " + tookMs + " ms");
    }

    @Test
    void shouldFailWhileTheStoreIsDownAndKeepTheNodeThroughARestartOfEveryMember() throws Exception {
        assertFalse(exchange("node1", LIMIT).known());
        assertTrue(exchange("node1", LIMIT).known());
        for (int i = 0; i < etcd.size(); i++) etcd.kill(i);
        assertThrows(ShareStore.StoreException.class, () -> exchange("node1", LIMIT));
        for (int i = 0; i < etcd.size(); i++) etcd.restart(i);
        for (int i = 0; i < etcd.size(); i++) etcd.awaitHealthy(i);
        Share back = null;
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (back == null) {
            try {
                back = exchange("node1", LIMIT);
            } catch (ShareStore.StoreException e) {
                assertTrue(System.nanoTime() < deadline, "no answer 5 s after the restart: " + e.getMessage());
                Thread.sleep(20);
            }
        }
        assertTrue(back.known(), "etcd keeps what it acknowledged, and a restart renews the leases it had");
    }

    @Test
    void shouldSayWhenTheStoreForgotTheNodeBecauseItsEntryExpired() throws Exception {
        assertFalse(exchange("node1", LIMIT).known());
        assertTrue(exchange("node1", LIMIT).known());
        Await.until(Duration.ofSeconds(10), () -> {
            try {
                return observerSees("node1") == 0;
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        }, () -> "node 1's entry never expired");
        assertFalse(exchange("node1", LIMIT).known(), "the entry expired with the lease: the store no longer knew the node");
    }

    /** How many entries of {@code node} another client reads now. */
    private int observerSees(String node) throws Exception {
        try (EtcdClient c = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(2))) {
            int n = 0;
            for (EtcdClient.KeyValue kv : c.range(EtcdShareStore.PREFIX).kvs()) if (kv.key().endsWith("/" + node)) n++;
            return n;
        }
    }
}
