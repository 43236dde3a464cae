package io.iotarget.iocontrol.stat;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Many writers and a reader folding all the while: every sample arrives once, in the pair and its parent. */
class LatencyStatsTest {
    @Test
    void shouldFoldEverySampleExactlyOnceWhileWritersRun() throws Exception {
        LatencyStats parent = new LatencyStats(null);
        LatencyStats child = new LatencyStats(parent);
        int threads = 4, perThread = 200_000;
        List<Thread> writers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            writers.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < perThread; i++) child.record(1_000 + (i % 1000) * 1_000L);   // 1 µs .. 1 ms
            }));
        }
        long lastCount = 0;
        while (writers.stream().anyMatch(Thread::isAlive)) {
            child.fold();
            assertTrue(child.count() >= lastCount, "totals only grow");
            lastCount = child.count();
        }
        for (Thread w : writers) w.join();
        child.fold();
        long n = (long) threads * perThread;
        long sumNs = threads * (perThread / 1000) * (1000L * 1_000 + 1_000L * 999 * 1000 / 2);
        assertEquals(n, child.count());
        assertEquals(sumNs, child.sumNs());
        assertEquals(n, parent.count());
        assertEquals(sumNs, parent.sumNs());
        long[] inBuckets = {0};
        child.forEachBucket((highestNs, count) -> inBuckets[0] += count);
        assertEquals(n, inBuckets[0]);
        long half = child.countAtOrBelow(500_000);
        assertTrue(Math.abs(half - n / 2) <= n / 20, "half the samples are at or below 500 µs, within a bucket: " + half);
        assertEquals(n, child.countAtOrBelow(LatencyStats.HIGHEST_NS));
    }

    @Test
    void shouldClampWhatIsPastTheRange() {
        LatencyStats s = new LatencyStats(null);
        s.record(Long.MAX_VALUE / 2);
        s.record(-5);
        s.fold();
        assertEquals(2, s.count());
        assertEquals(1, s.countAtOrBelow(LatencyStats.LOWEST_NS));
        assertEquals(Long.MAX_VALUE / 2, s.sumNs());
    }
}
