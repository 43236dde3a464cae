package io.iotarget.control;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What top and ls -l make of two reads of iotarget.io.stat one second apart. */
class HeldAndLatencyTest {
    private static HeldAndLatency read(long atNs, long throttleUsec, long ios, long usec, long... bucketPairs) {
        TreeMap<Long, Long> buckets = new TreeMap<>();
        for (int i = 0; i < bucketPairs.length; i += 2) buckets.put(bucketPairs[i], bucketPairs[i + 1]);
        return new HeldAndLatency(Map.of("259:0", new HeldAndLatency.Line(new long[] {throttleUsec, 0, 0, 0}, ios, usec, buckets, 100, 0)), atNs);
    }

    @Test
    void shouldTellTheIntervalsAverageP99AndHeldTimePerSecond() {
        HeldAndLatency then = read(0, 1_000_000, 100, 50_000, 100, 100);
        // In the second between: 1000 requests, 990 at ≤ 1 ms and 10 at ≤ 8 ms; 4 s of waiting in io.max.
        HeldAndLatency now = read(1_000_000_000L, 5_000_000, 1100, 50_000 + 1_500_000, 100, 100, 1023, 990, 8191, 10);
        HeldAndLatency.Interval i = now.since(then, "259:0");
        assertEquals(1500.0, i.avgUsec());
        assertEquals(1023, i.p99Usec(), "the 990th of 1000 is in the 1 ms bucket");
        assertArrayEquals(new double[] {4.0, 0, 0, 0}, i.heldPerSecond());
        assertEquals("1.5ms", HeldAndLatency.duration(i.avgUsec()));
        assertEquals("4.0s", HeldAndLatency.held(i.heldPerSecond()[HeldAndLatency.THROTTLE]));
        assertEquals("0", HeldAndLatency.held(0));

        HeldAndLatency.Interval idle = now.since(now, "259:0");
        assertTrue(Double.isNaN(idle.avgUsec()));
        assertEquals("-", HeldAndLatency.duration(idle.avgUsec()));
        assertEquals("-", HeldAndLatency.duration(idle.p99Usec()));
    }

    @Test
    void shouldTakeTheHighestMovedBucketWhenTheBucketsLagTheCount() {
        HeldAndLatency then = read(0, 0, 0, 0);
        HeldAndLatency now = read(1_000_000_000L, 0, 10, 1000, 63, 5, 127, 4);   // 9 in buckets, 10 counted
        assertEquals(127, now.since(then, "259:0").p99Usec());
    }

    @Test
    void shouldTellWhetherIoMinWasMet() {
        String line = "259:0 throttle_usec=0 latency_usec=0 cost_usec=0 delay_usec=0 lat_ios=0 lat_usec=0 min_pct=%s min_ios=%d lat_hist=";
        HeldAndLatency then = HeldAndLatency.of(line.formatted("100.00", 10), 0);
        assertEquals("-", then.since(then, "259:0").minimum(), "no request went on a minimum in between");
        assertEquals("met", HeldAndLatency.of(line.formatted("100.00", 20), 1_000_000_000L).since(then, "259:0").minimum());
        assertEquals("71%", HeldAndLatency.of(line.formatted("71.42", 20), 1_000_000_000L).since(then, "259:0").minimum(),
                "minimums of 1.4 devices: each gets 1/1.4 of its own");
    }
}
