package io.iotarget.frontend.nbd;

import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * io.max.burst on the real clock, through NBD with fio (QD32, 4 KiB random reads): io.max
 * riops=1000 and io.max.burst riops=5000 len=2, the package documentation's example
 * (iocontrol.policy.throttle, section 10). The first 2 s run at 5000, then 1000: 14000 IOs in
 * 6 s; after 8 s idle the credit is full again and a second run bursts as the first.
 *
 * <p>What a loaded 2-core machine meets (fio's 100 ms IOPS log at the client): a shared machine
 * may not run 5000 IOPS throughout, and then the credit lasts longer, so the test checks what
 * io.max.burst decides rather than the machine's speed: never above 5000 (+5%) while credit
 * lasts, within 2% of 1000 from 0.5 s after it ran out, and 8000 IOs above 1000 a second over
 * the run (±3%). bench/iomax-burst.sh measures the targets (first 2 s at 5000 ±5%, the
 * rest at 1000 ±1% once the credit is spent, 14000 ±3% in 6 s) on a quieter machine
 * (bench/results/iomax-burst.md).
 * About 30 s.
 */
class BurstFioTest {
    @TempDir
    Path dir;

    @Test
    void burstsAtFiveThousandForTwoSecondsThenHoldsToOneThousandAndRefillsWhenIdle() throws Exception {
        Tools.requireFioNbd();
        try (TestTarget target = new TestTarget()) {
            var device = target.memoryExport("a", 256L << 20);
            // Unlimited first, not measured: a cold JIT would measure the machine, not the burst.
            fio(target, "warm", 3);
            target.engine.controller().write("tenants/a/io.max", device.number() + " riops=1000");
            target.engine.controller().write("tenants/a/io.max.burst", device.number() + " riops=5000 len=2");
            String full = device.number() + " riops=8000/8000\n";
            assertEquals(full, target.engine.controller().read("tenants/a/io.max.burst.stat"), "io.max from max: full credit");

            Run first = fio(target, "first", 6);
            System.out.println("first run:  " + first);
            first.check();
            Thread.sleep(8_000);                            // idle time refills the credit: the time passing is the point
            assertEquals(full, target.engine.controller().read("tenants/a/io.max.burst.stat"), "full again after 8 s idle");
            Run second = fio(target, "second", 6);
            System.out.println("second run: " + second);
            second.check();
            assertEquals(0, target.server.unexpectedErrors());
        }
    }

    /**
     * One fio run: total IOs, runtime, and IOPS per 100 ms window.
     *
     * @param windows IOPS of each 100 ms window, from the start
     */
    private record Run(long ios, long runtimeMs, List<Long> windows) {
        /** The first window below 2000 IOPS: the credit has run out. */
        int creditGone() {
            for (int i = 1; i < windows.size(); i++) if (windows.get(i) < 2000) return i;
            return windows.size();
        }

        double average(int from, int to) {
            return windows.subList(from, to).stream().mapToLong(Long::longValue).average().orElseThrow();
        }

        /**
         * Whether the machine could run the whole burst at 5000 or not: never above 5000, well
         * above 1000 while credit lasts, 1000 once it is gone, and 8000 IOs more than 1000 a
         * second over the run.
         */
        void check() {
            int gone = creditGone();
            assertTrue(gone <= 45, "the credit ran out by 4.5 s: " + this);
            assertTrue(average(0, gone) <= 5000 * 1.05, "at most 5000 while credit lasts: " + this);
            assertTrue(average(0, gone) >= 2000, "a burst well above 1000: " + this);
            assertWithin(1000, average(gone + 5, windows.size() - 1), 0.02, "1000 from 0.5 s after the credit ran out: " + this);
            assertWithin(8000 + runtimeMs, ios, 0.03, "8000 + 1000 a second in all: " + this);
        }

        @Override
        public String toString() {
            return ios + " IOs in " + runtimeMs + " ms; credit gone at window " + creditGone() + "; windows " + windows;
        }
    }

    private Run fio(TestTarget target, String name, int seconds) throws IOException, InterruptedException {
        Path log = dir.resolve(name);
        String json = Tools.ok(seconds + 60, "fio", "--output-format=json", "--ioengine=nbd", "--rw=randread", "--bs=4k",
                "--iodepth=32", "--size=256M", "--time_based", "--runtime=" + seconds, "--name=" + name,
                "--uri=" + target.uri("a"), "--write_iops_log=" + log, "--log_avg_msec=100");
        List<Long> windows;
        try (Stream<Path> files = Files.list(dir)) {
            Path file = files.filter(p -> p.getFileName().toString().startsWith(name + "_iops")).findFirst().orElseThrow();
            windows = Files.readAllLines(file).stream().filter(l -> !l.isBlank()).map(l -> Long.parseLong(l.split(",")[1].strip())).toList();
        }
        return new Run(RealClientsTest.jsonLong(json, "read", "total_ios"), RealClientsTest.jsonLong(json, "read", "runtime"), windows);
    }

    private static void assertWithin(double expected, double actual, double tolerance, String what) {
        assertTrue(Math.abs(actual / expected - 1) <= tolerance,
                String.format("%s: %.0f, expected %.0f ± %.0f%%", what, actual, expected, tolerance * 100));
    }
}
