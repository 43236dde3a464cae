package io.iotarget.cluster;

import io.iotarget.cluster.ShareStore.Report;
import io.iotarget.cluster.ShareStore.Share;
import io.iotarget.testkit.RedisServer;
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

/** rebalance.lua on a real redis-server: the numbers of the package documentation's example. */
class RedisShareStoreTest {
    private static final long LIMIT = 9000;
    private static final long LEASE_MS = 1000;
    private static final String KEY = "iotarget:/tenants/a:disk:riops";
    private static final long FLOOR = 150;

    @TempDir
    Path dir;
    private RedisServer redis;
    private RedisShareStore store;
    /** What each node enforces: its floor until its first answer, then the answers it applied. */
    private final java.util.Map<String, Long> held = new java.util.HashMap<>();

    @BeforeEach
    void start() throws Exception {
        redis = RedisServer.start(dir);
        store = new RedisShareStore(redis.uri(), Duration.ofMillis(500));
    }

    @AfterEach
    void stop() throws Exception {
        store.close();
        redis.close();
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

    /** One exchange of {@code node} whose answer never reaches it (a timeout after the script ran): it goes on holding what it held. */
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
    void shouldDropANodeWhoseLeaseRanOut() throws Exception {
        exchange("node3", LIMIT, 100);          // node 3 reports once with a short lease, then dies
        long[] before = rounds(1, LIMIT, LIMIT);
        assertTrue(before[0] + before[1] + 3000 <= LIMIT + 1, before[0] + " + " + before[1]);
        Thread.sleep(200);
        long[] after = rounds(2, LIMIT, LIMIT);
        assertEquals(List.of(4425L, 4425L), List.of(after[0], after[1]));            // node 3's floor stays reserved
    }

    @Test
    void shouldSayWhenTheStoreForgotTheNodeAndFailWhileItIsDown() throws Exception {
        assertFalse(exchange("node1", LIMIT).known());
        assertTrue(exchange("node1", LIMIT).known());
        redis.kill();
        assertThrows(ShareStore.StoreException.class, () -> exchange("node1", LIMIT));
        redis.restart();
        long deadline = System.nanoTime() + 5_000_000_000L;
        Share back = null;
        while (back == null) {
            try {
                back = exchange("node1", LIMIT);
            } catch (ShareStore.StoreException e) {
                assertTrue(System.nanoTime() < deadline, "no answer 5 s after the restart: " + e.getMessage());
                Thread.sleep(20);
            }
        }
        assertFalse(back.known(), "a restarted store has lost the node's entry");
    }
}
