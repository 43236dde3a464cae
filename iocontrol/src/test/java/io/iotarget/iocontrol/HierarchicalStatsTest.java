package io.iotarget.iocontrol;

import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * io.stat under concurrency: many threads charge many groups while readers flush; afterwards
 * every group's line is exact and every parent is the sum of its children, removed ones included.
 */
class HierarchicalStatsTest {
    private static final int THREADS = 8;
    private static final int IOS_PER_THREAD = 200_000;

    @Test
    void shouldSumChildrenExactlyUnderConcurrentIo() throws Exception {
        ControllerHarness h = new ControllerHarness();
        List<Group> leaves = new ArrayList<>();
        for (String p : List.of("t/a/x", "t/a/y", "t/b", "u/c")) leaves.add(h.group(p));
        long[][] expected = new long[leaves.size()][6];   // per leaf: rbytes wbytes rios wios dbytes dios

        AtomicBoolean running = new AtomicBoolean(true);
        // Threads' failures would be lost to JUnit in their own threads: they are kept and rethrown here.
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread reader = watched(failure, () -> {
            long seen = 0;
            while (running.get()) {
                long now = ios(h.controller.read("io.stat"));
                h.controller.read("t/io.stat");
                if (now < seen) throw new AssertionError("root io.stat went back from " + seen + " to " + now + " IOs");
                seen = now;
            }
        });
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        long[][][] perThread = new long[THREADS][leaves.size()][6];
        for (int t = 0; t < THREADS; t++) {
            int id = t;
            workers.add(watched(failure, () -> {
                go.await();
                ThreadLocalRandom rnd = ThreadLocalRandom.current();
                IoRequest io = new IoRequest();
                IoOp[] ops = {IoOp.READ, IoOp.WRITE, IoOp.DISCARD, IoOp.FLUSH};
                for (int i = 0; i < IOS_PER_THREAD; i++) {
                    int leaf = rnd.nextInt(leaves.size());
                    IoOp op = ops[rnd.nextInt(ops.length)];
                    long len = op == IoOp.FLUSH ? 0 : 512L * (1 + rnd.nextInt(256));
                    io.reset();
                    io.set(op, 0, 0, len, null).target(rnd.nextBoolean() ? h.dev0 : h.dev1, leaves.get(leaf));
                    h.controller.admit(io, 0);
                    long[] e = perThread[id][leaf];
                    switch (op.statBucket()) {
                        case READ -> { e[0] += len; e[2]++; }
                        case WRITE -> { e[1] += len; e[3]++; }
                        case DISCARD -> { e[4] += len; e[5]++; }
                    }
                }
            }));
        }
        go.countDown();
        for (Thread w : workers) w.join();
        running.set(false);
        reader.join();
        if (failure.get() != null) throw new AssertionError("a concurrent thread failed", failure.get());
        for (long[][] t : perThread) for (int l = 0; l < leaves.size(); l++) for (int f = 0; f < 6; f++) expected[l][f] += t[l][f];

        // Remove one leaf: its IO must stay in its ancestors.
        h.controller.rmdir("t/a/y");
        long[] ta = sum(expected[0], expected[1]);
        long[] t = sum(ta, expected[2]);
        long[] all = sum(t, expected[3]);
        assertEquals(line(expected[0]), bothDevices(h, "t/a/x"));
        assertEquals(line(ta), bothDevices(h, "t/a"));
        assertEquals(line(t), bothDevices(h, "t"));
        assertEquals(line(expected[3]), bothDevices(h, "u/c"));
        assertEquals(line(all), bothDevices(h, ""));
    }

    private interface Body {
        void run() throws Exception;
    }

    /** Starts {@code body} on a platform thread; its first failure (of all threads) lands in {@code failure}. */
    private static Thread watched(AtomicReference<Throwable> failure, Body body) {
        return Thread.ofPlatform().start(() -> {
            try {
                body.run();
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        });
    }

    /** rios + wios + dios over every line of an io.stat. */
    private static long ios(String stat) {
        long n = 0;
        for (String field : stat.split("[ \n]")) {
            if (field.startsWith("rios=") || field.startsWith("wios=") || field.startsWith("dios=")) {
                n += Long.parseLong(field.substring(field.indexOf('=') + 1));
            }
        }
        return n;
    }

    /** Sums the two device lines of a group's io.stat into one line's worth of counters. */
    private static String bothDevices(ControllerHarness h, String group) throws Exception {
        long[] total = new long[6];
        for (String l : h.controller.read(group.isEmpty() ? "io.stat" : group + "/io.stat").split("\n")) {
            String[] kv = l.split(" ");
            for (int i = 1; i < kv.length; i++) total[i - 1] += Long.parseLong(kv[i].substring(kv[i].indexOf('=') + 1));
        }
        return line(total);
    }

    private static String line(long[] v) {
        return "rbytes=" + v[0] + " wbytes=" + v[1] + " rios=" + v[2] + " wios=" + v[3] + " dbytes=" + v[4] + " dios=" + v[5];
    }

    private static long[] sum(long[] a, long[] b) {
        long[] r = new long[6];
        for (int i = 0; i < 6; i++) r[i] = a[i] + b[i];
        return r;
    }
}
