package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.ControllerHarness;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How io.max spaces requests out, on a manual clock driven like the engine drives it: the
 * releaser wakes exactly at {@code nextReleaseNs}, the device completes each request
 * {@link #SERVICE_NS} after dispatch with no limit on parallelism, and a closed-loop client
 * keeps 32 requests outstanding, as fio at QD32 over one connection. Asserted: issue 11's
 * targets — the average within 0.5% of the limit, p99 latency at most 2 × (QD / limit) + 1 ms,
 * no 100 ms window above 115% of the limit, the first second within 110%.
 */
class ThrottlePacingTest {
    private static final long MS = 1_000_000L;
    private static final long SEC = 1_000_000_000L;
    private static final long SERVICE_NS = 200_000L;
    private static final int DEPTH = 32;
    private static final long RUN_NS = 10 * SEC;
    private static final long WINDOW_NS = 100 * MS;

    @ParameterizedTest(name = "{0}={1}, {2}-byte {3}")
    @CsvSource({
            "riops, 20000, 4096, READ",
            "wiops, 20000, 4096, WRITE",
            "riops, 3000, 4096, READ",
            "rbps, 104857600, 65536, READ",
            "wbps, 104857600, 65536, WRITE",
            "rbps, 10485760, 1048576, READ",
    })
    void shouldSpaceRequestsEvenlyAtTheLimit(String key, long limit, int size, IoOp op) throws Exception {
        ControllerHarness h = new ControllerHarness();
        Group a = h.group("a");
        h.controller.write("a/io.max", "259:0 " + key + "=" + limit);
        boolean bytes = key.endsWith("bps");
        double unitsPerRequest = bytes ? size : 1;

        long start = h.clock.nanoTime();
        long end = start + RUN_NS;
        Map<IoRequest, Long> submittedAt = new IdentityHashMap<>();
        PriorityQueue<long[]> completions = new PriorityQueue<>((x, y) -> Long.compare(x[0], y[0]));
        List<IoRequest> byIndex = new ArrayList<>();
        List<Long> latencies = new ArrayList<>();
        long[] perMs = new long[(int) (RUN_NS / MS)];
        for (int i = 0; i < DEPTH; i++) {
            IoRequest io = h.request(op, size, h.dev0, a);
            byIndex.add(io);
            submittedAt.put(io, start);
            h.submit(io);
        }
        while (true) {
            long now = h.clock.nanoTime();
            for (IoRequest io : h.dispatched) {
                int ms = (int) ((now - start) / MS);
                if (ms < perMs.length) perMs[ms]++;
                completions.add(new long[]{now + SERVICE_NS, byIndex.indexOf(io)});
            }
            h.dispatched.clear();
            long next = Math.min(h.controller.nextReleaseNs(), completions.isEmpty() ? Long.MAX_VALUE : completions.peek()[0]);
            if (next >= end) break;
            if (next > now) h.clock.advance(next - now);
            now = h.clock.nanoTime();
            while (!completions.isEmpty() && completions.peek()[0] <= now) {
                IoRequest io = byIndex.get((int) completions.poll()[1]);
                latencies.add(now - submittedAt.get(io));
                submittedAt.put(io, now);
                io.reset();
                io.set(op, 0, 0, size, null).target(h.dev0, a);
                h.submit(io);
            }
            h.release();
        }

        long total = Arrays.stream(perMs).sum();
        double ratio = total * unitsPerRequest / (limit * (double) RUN_NS / SEC);
        long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
        double p50Ms = sorted[sorted.length / 2] / 1e6;
        double p99Ms = sorted[(int) (sorted.length * 0.99)] / 1e6;
        long busiest = 0;
        long window = 0;
        int windowMs = (int) (WINDOW_NS / MS);
        for (int ms = 0; ms < perMs.length; ms++) {
            window += perMs[ms] - (ms >= windowMs ? perMs[ms - windowMs] : 0);
            busiest = Math.max(busiest, window);
        }
        double limitPerWindow = limit * (double) WINDOW_NS / SEC / unitsPerRequest;
        double busiestPct = 100 * busiest / limitPerWindow;
        long firstSecond = Arrays.stream(perMs, 0, 1000).sum();
        double firstSecondPct = 100 * firstSecond * unitsPerRequest / limit;
        double perRequestMs = 1e3 * unitsPerRequest / limit;
        double p99BoundMs = 2 * DEPTH * perRequestMs + 1;
        System.out.printf("io.max %s=%d %d-byte %s: ratio %.4f, p50 %.2f ms, p99 %.2f ms (bound %.2f), busiest 100 ms %.1f%%, first second %.1f%%%n",
                key, limit, size, op, ratio, p50Ms, p99Ms, p99BoundMs, busiestPct, firstSecondPct);
        assertTrue(Math.abs(ratio - 1) <= 0.005, "ratio " + ratio);
        assertTrue(p99Ms <= p99BoundMs, "p99 " + p99Ms + " ms");
        assertTrue(busiestPct <= 115, "busiest 100 ms window " + busiestPct + "%");
        assertTrue(firstSecondPct <= 110, "first second " + firstSecondPct + "%");
    }
}
