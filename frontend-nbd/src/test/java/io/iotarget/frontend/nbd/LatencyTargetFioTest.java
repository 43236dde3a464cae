package io.iotarget.frontend.nbd;

import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.backend.PacedBackend;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * io.latency judged by fio over NBD, on a device that completes one 4 KiB read per 260 µs in
 * arrival order (queue depth 32): export {@code b} is flooded by fio at QD128, export {@code a}
 * read by fio at QD1. fio's p90 completion latency for a is far above 8 ms without a target (it
 * waits behind b's 128, ~33 ms) and under it with {@code target=8000}; once a's fio ends, b's
 * depth is unlimited again. The device is slow on purpose: a's latency is then the device's
 * doing, not the few milliseconds a loaded two-core machine can add to any request. About 20 s.
 */
class LatencyTargetFioTest {
    private static final long TARGET_US = 8000;
    private static final Pattern P90 = Pattern.compile("\"clat_ns\"\\s*:\\s*\\{.*?\"90\\.000000\"\\s*:\\s*(\\d+)", Pattern.DOTALL);
    private static final Pattern DEPTH = Pattern.compile(" depth=(\\d+|max)");

    @Test
    void shouldHoldTheProtectedExportsP90UnderItsTargetWhileFioFloodsItsSibling() throws Exception {
        Tools.requireFioNbd();
        System.setProperty(IoPolicy.DEBUG_STATS_PROPERTY, "true");
        TestTarget t;
        try {
            t = new TestTarget();
        } finally {
            System.clearProperty(IoPolicy.DEBUG_STATS_PROPERTY);
        }
        try (t) {
            t.engine.addDevice("paced0", new PacedBackend(new NullBackend(1L << 30, 512, false), 260_000, 1L << 40), null, 32);
            IoController c = t.engine.controller();
            for (String name : List.of("a", "b")) {
                c.mkdir("tenants/" + name);
                t.server.tree().mkdir("exports/" + name);
                t.server.tree().write("exports/" + name + "/backend", "paced0");
                t.server.tree().write("exports/" + name + "/cgroup", "tenants/" + name);
                t.server.tree().write("exports/" + name + "/enable", "1");
            }
            Process flood = fio(t, "b", 128, 40).start();
            try {
                Thread.sleep(1_000);                                        // the flood ramps up to its full depth first
                long untargeted = p90(run(fio(t, "a", 1, 4)));
                c.write("tenants/a/io.latency", "paced0 target=" + TARGET_US);
                run(fio(t, "a", 1, 2));                                     // settling
                List<Integer> depths = new ArrayList<>();
                Thread sampler = Thread.startVirtualThread(() -> {
                    try {
                        while (!Thread.currentThread().isInterrupted()) {
                            depths.add(depth(c));
                            Thread.sleep(100);                      // the sampling interval
                        }
                    } catch (InterruptedException e) {
                        // done
                    }
                });
                long targeted = p90(run(fio(t, "a", 1, 8)));
                sampler.interrupt();
                sampler.join();
                int lowest = depths.stream().min(Integer::compare).orElseThrow();

                // a's fio has ended: b's depth is unlimited again at once if the cookie was back at
                // its default then, else 5 s after the last move and a few timer steps
                // (LatencyTargetTest stops its tenant while b is held, to show that walk).
                int depthAtStop = depth(c);
                long idleSince = System.nanoTime();
                while (depth(c) != Integer.MAX_VALUE && System.nanoTime() - idleSince < TimeUnit.SECONDS.toNanos(20)) Thread.sleep(100);
                long recoveredMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - idleSince);
                int finalDepth = depth(c);
                System.out.printf("io.latency over NBD (fio): a's p90 %d us without a target, %d us with target=%d;"
                                  + " b's depth lowest %d, %s when a stopped, unlimited %d ms later%n",
                        untargeted / 1000, targeted / 1000, TARGET_US, lowest,
                        depthAtStop == Integer.MAX_VALUE ? "max" : Integer.toString(depthAtStop), recoveredMs);
                assertTrue(untargeted > 3 * TARGET_US * 1000, "without a target: p90 " + untargeted + " ns");
                assertTrue(targeted < TARGET_US * 1000, "with target=" + TARGET_US + ": p90 " + targeted + " ns");
                assertTrue(lowest <= 16, "b's depth fell: lowest " + lowest);
                assertEquals(Integer.MAX_VALUE, finalDepth, "b's depth recovered");
            } finally {
                flood.destroy();
                flood.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    private static ProcessBuilder fio(TestTarget t, String export, int depth, int seconds) {
        return new ProcessBuilder("fio", "--name=" + export, "--ioengine=nbd", "--uri=" + t.uri(export),
                "--rw=randread", "--bs=4k", "--size=256m", "--iodepth=" + depth, "--time_based", "--runtime=" + seconds,
                "--output-format=json")
                .redirectError(ProcessBuilder.Redirect.DISCARD)
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectOutput(ProcessBuilder.Redirect.DISCARD);
    }

    /** Runs fio to its end; its JSON report. */
    private static String run(ProcessBuilder fio) throws Exception {
        Process p = fio.redirectOutput(ProcessBuilder.Redirect.PIPE).start();
        String out = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "fio ended");
        assertEquals(0, p.exitValue(), out);
        return out;
    }

    private static long p90(String fioJson) {
        Matcher m = P90.matcher(fioJson);
        assertTrue(m.find(), fioJson);
        return Long.parseLong(m.group(1));
    }

    private static int depth(IoController c) {
        try {
            Matcher m = DEPTH.matcher(c.read("tenants/b/io.stat"));
            if (!m.find()) return Integer.MAX_VALUE;
            return m.group(1).equals("max") ? Integer.MAX_VALUE : Integer.parseInt(m.group(1));
        } catch (io.iotarget.model.ControlException e) {
            throw new AssertionError(e);
        }
    }
}
