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

    @TempDir
    Path dir;
    private RedisServer redis;
    private RedisShareStore store;

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

    private Share exchange(String node, long demand, long leaseMs) throws Exception {
        List<Share> shares = store.exchange(node, 3, leaseMs, List.of(new Report(KEY, LIMIT, demand)));
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
        long[] one = rounds(2, LIMIT, 0, 0);
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
