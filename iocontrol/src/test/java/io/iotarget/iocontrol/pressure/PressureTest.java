package io.iotarget.iocontrol.pressure;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.IoRequest;
import org.junit.jupiter.api.Test;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The tracker driven by hand: the definitions of some and full, the kernel's averages to the digit, triggers. */
class PressureTest {
    private static final long MS = 1_000_000L;
    private static final long S = 1_000 * MS;
    private static final long P = PressureGroup.PERIOD_NS;

    private final Pressure tracker = new Pressure();
    private final PressureGroup root = new PressureGroup(null);
    private final PressureGroup parent = new PressureGroup(root);
    private final PressureGroup a = new PressureGroup(parent);
    private final PressureGroup b = new PressureGroup(parent);

    private static IoRequest io(TenantQueue q) {
        return new IoRequest().queue(q);
    }

    private long total(PressureGroup g, boolean full, long now) {
        return tracker.totalNs(g, full, now);
    }

    private static String field(String text, String line, String key) {
        Matcher m = Pattern.compile("(?m)^" + line + " .*\\b" + key + "=(\\S+)").matcher(text);
        assertTrue(m.find(), key + " in " + text);
        return m.group(1);
    }

    @Test
    void shouldCountSomeWhenAnyQueueIsHeldAndFullWhenNoneIsProductive() {
        TenantQueue qa = tracker.newQueue(a);
        TenantQueue qb = tracker.newQueue(b);
        qb.begin(0);                                    // b busy: nothing counted, nothing is held anywhere
        assertFalse(tracker.armed);
        IoRequest held = io(qa);
        qa.begin(0);
        tracker.parked(held, 0);                        // the first stall arms the tracker: b's busy queue is counted now
        assertTrue(tracker.armed);
        assertEquals(S, total(a, false, S));
        assertEquals(S, total(a, true, S), "a's only queue is held: full");
        assertEquals(S, total(parent, false, S), "hierarchical");
        assertEquals(0, total(parent, true, S), "b is productive: the parent is not full");
        qb.end(S);                                      // b goes idle: now nobody in the parent makes progress
        assertEquals(2 * S, total(parent, false, 2 * S));
        assertEquals(S, total(parent, true, 2 * S));
        assertEquals(0, total(b, false, 2 * S));
        tracker.released(held, 2 * S);                  // a's request passes: a is productive until it completes
        assertEquals(2 * S, total(a, false, 3 * S));
        qa.end(3 * S);

        // An issuer delay stalls the queue even with nothing outstanding, and ends on its own.
        tracker.delayed(io(qb), 4 * S, 3 * S);
        assertEquals(S, total(b, false, 5 * S));
        assertEquals(S, total(b, true, 5 * S));
        assertEquals(3 * S, total(parent, false, 5 * S));
        assertEquals(2 * S, total(parent, true, 5 * S));

        // A quiet period disarms: busy queues cost nothing any more.
        qa.begin(5 * S);
        assertEquals(3 * S, total(root, false, 5 * S + P), "(the root saw both)");
        assertFalse(tracker.armed, "a period without stalls");
        qa.end(5 * S + P);
    }

    @Test
    void shouldForgetAClosedQueue() {
        TenantQueue q = tracker.newQueue(a);
        IoRequest held = io(q);
        q.begin(0);
        tracker.parked(held, 0);
        q.close(S);
        assertEquals(S, total(a, false, 10 * S), "stalled until it closed");
        tracker.released(held, 11 * S);
        q.end(11 * S);
        q.begin(12 * S);
        tracker.parked(io(q), 12 * S);
        assertEquals(S, total(a, false, 20 * S), "a closed queue counts nowhere");
    }

    /**
     * kernel/sched/psi.c's running averages of one group, written here from Linux 6.1 and not
     * taken from the code under test: update_averages and calc_avgs over loadavg's calc_load,
     * calc_load_n and fixed_power_int, printed as psi_show prints them. The averages worker
     * (psi_avgs_work) is first scheduled PSI_FREQ after the group's first event, runs at each
     * avg_next_update while the period it collected had non-idle time, and stops after a quiet
     * one; a read updates the averages when an update is due. The worker's timer is taken to
     * fire on avg_next_update (the kernel's fires up to a jiffy later, which moves each sample
     * by that much).
     */
    private static final class KernelPsi {
        static final int FSHIFT = 11;
        static final long FIXED_1 = 1L << FSHIFT;
        /** 1/exp(2s/10s), 1/exp(2s/60s), 1/exp(2s/300s) as fixed point. */
        static final long[] EXP = {1677, 1981, 2034};
        static final int HZ = 250;                                  // Debian's kernels
        /** PSI_FREQ = 2*HZ+1 jiffies. */
        static final long PSI_PERIOD_NS = (2L * HZ + 1) * (1_000_000_000L / HZ);

        private final long[] avg = new long[3];
        private final long[][] stalls;
        private long avgTotal;
        private long avgLastUpdate;
        private long avgNextUpdate;

        /** A group whose first event is at {@code startNs}, stalled over each {from, to} of {@code stalls} (in order). */
        KernelPsi(long startNs, long[][] stalls) {
            this.stalls = stalls;
            avgLastUpdate = startNs;
            avgNextUpdate = startNs + PSI_PERIOD_NS;
        }

        static long calcLoad(long load, long exp, long active) {
            long newload = load * exp + active * (FIXED_1 - exp);
            if (active >= load) newload += FIXED_1 - 1;
            return newload / FIXED_1;
        }

        static long fixedPowerInt(long x, int fracBits, long n) {
            long result = 1L << fracBits;
            while (n != 0) {
                if ((n & 1) != 0) {
                    result *= x;
                    result += 1L << (fracBits - 1);
                    result >>= fracBits;
                }
                n >>= 1;
                if (n == 0) break;
                x *= x;
                x += 1L << (fracBits - 1);
                x >>= fracBits;
            }
            return result;
        }

        static long calcLoadN(long load, long exp, long active, long n) {
            return calcLoad(load, fixedPowerInt(exp, FSHIFT, n), active);
        }

        private void calcAvgs(long missedPeriods, long timeNs, long periodNs) {
            if (missedPeriods > 0) for (int w = 0; w < 3; w++) avg[w] = calcLoadN(avg[w], EXP[w], 0, missedPeriods);
            long pct = timeNs * 100 / periodNs * FIXED_1;
            for (int w = 0; w < 3; w++) avg[w] = calcLoad(avg[w], EXP[w], pct);
        }

        private void updateAverages(long nowNs) {
            long expires = avgNextUpdate;
            long missed = nowNs - expires >= PSI_PERIOD_NS ? (nowNs - expires) / PSI_PERIOD_NS : 0;
            avgNextUpdate = expires + (1 + missed) * PSI_PERIOD_NS;
            long period = nowNs - (avgLastUpdate + missed * PSI_PERIOD_NS);
            avgLastUpdate = nowNs;
            long sample = Math.min(stalledUntil(nowNs) - avgTotal, period);
            avgTotal += sample;
            calcAvgs(missed, sample, period);
        }

        /** Stall time from the start to {@code nowNs}. */
        private long stalledUntil(long nowNs) {
            long t = 0;
            for (long[] s : stalls) t += Math.max(0, Math.min(nowNs, s[1]) - s[0]);
            return t;
        }

        /** What a read at {@code readNs} prints: "avg10 avg60 avg300" as %lu.%02lu. */
        String read(long startNs, long readNs) {
            long collected = startNs;
            for (long worker = startNs + PSI_PERIOD_NS; worker <= readNs; ) {
                if (worker >= avgNextUpdate) updateAverages(worker);
                boolean nonidle = stalledUntil(worker) > stalledUntil(collected);     // the queue is busy only while stalled here
                collected = worker;
                if (!nonidle) break;
                worker = avgNextUpdate;
            }
            if (readNs >= avgNextUpdate) updateAverages(readNs);
            StringBuilder sb = new StringBuilder();
            for (long a : avg) sb.append(sb.isEmpty() ? "" : " ").append(a >> FSHIFT).append('.').append(String.format("%02d", ((a & (FIXED_1 - 1)) * 100) >> FSHIFT));
            return sb.toString();
        }
    }

    /** The three averages of {@code line} in a read. */
    private static String averages(String text, String line) {
        return field(text, line, "avg10") + " " + field(text, line, "avg60") + " " + field(text, line, "avg300");
    }

    @Test
    void shouldAverageAsTheKernelDoes() {
        assertEquals(KernelPsi.PSI_PERIOD_NS, P, "PSI_FREQ at HZ=250");
        TenantQueue q = tracker.newQueue(a);
        IoRequest held = io(q);
        long t0 = 5 * S;
        q.begin(t0);
        tracker.parked(held, t0);
        long read = t0 + 5 * P + P / 2;
        String text = tracker.read(a, read);
        long[][] stalled = {{t0, Long.MAX_VALUE}};
        String expected = new KernelPsi(t0, stalled).read(t0, read);
        assertEquals("63.18 15.32 3.37", expected, "100 * (1 - e^5) in fixed point: the model itself");
        assertEquals(expected, averages(text, "some"), text);
        assertEquals(expected, averages(text, "full"), "one queue, held: full as well");
        assertEquals(Long.toString((5 * P + P / 2) / 1000), field(text, "some", "total"));

        // Half a period more of stall, then 7 idle periods: the worker samples the first quiet
        // one and stops; the read zero-fills the periods it slept through (calc_load_n).
        tracker.released(held, t0 + 6 * P);
        q.end(t0 + 6 * P);
        long later = t0 + 13 * P + 1;
        String text2 = tracker.read(a, later);
        String expected2 = new KernelPsi(t0, new long[][]{{t0, t0 + 6 * P}}).read(t0, later);
        assertEquals(expected2, averages(text2, "some"), text2);
        assertEquals(expected2, averages(text2, "full"), text2);
        assertEquals(Long.toString(6 * P / 1000), field(text2, "some", "total"));
        assertEquals(averages(text2, "some"), averages(tracker.read(root, later), "some"), "the root follows");
        assertEquals("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                tracker.read(b, later), "the sibling");
    }

    /** Stalls of part of each period: the samples are what calc_avgs' integer percent makes of them. */
    @Test
    void shouldAveragePartialStallsAsTheKernelDoes() {
        TenantQueue q = tracker.newQueue(a);
        long t0 = S;
        long[][] stalls = {{t0, t0 + P / 3}, {t0 + P, t0 + P + 3 * P / 4}, {t0 + 2 * P + P / 10, t0 + 3 * P}, {t0 + 3 * P, t0 + 3 * P + 1}};
        q.begin(t0);
        for (long[] s : stalls) {
            IoRequest held = io(q);
            tracker.parked(held, s[0]);
            tracker.released(held, s[1]);
        }
        long read = t0 + 4 * P + 5;
        String text = tracker.read(a, read);
        String expected = new KernelPsi(t0, stalls).read(t0, read);
        assertEquals(expected, averages(text, "some"), text);
        q.end(read);
    }

    @Test
    void shouldReadTriggersAsPsiTriggerCreateDoes() throws ControlException {
        for (String ok : new String[]{"some 150000 1000000", "full 1 500000", "some 10000000 10000000", "some 150000 1000000\n",
                                      "some150000 1000000", "some \t 150000\n1000000", "some 150000 1000000 ignored", "full 1 500000x"}) {
            Pressure.check(ok);
        }
        for (String bad : new String[]{"", "\n", "some", "some 150000", "some 0 500000", "some 1 499999", "some 1 10000001",
                                       "some 500001 500000", "Some 1 500000", " some 1 500000", "som 1 500000", "some +1 500000",
                                       "some -1 500000", "some 1 0x500000", "some x 500000", "both 1 500000",
                                       "some 4294967297 500000", "some 1 4295467296"}) {
            ControlException e = assertThrows(ControlException.class, () -> Pressure.check(bad), bad);
            assertEquals(Errno.EINVAL, e.errno(), bad);
        }
    }

    @Test
    void shouldFireOnceTheStallGrowsByTheThresholdWithinTheWindowAndAtMostOncePerWindow() throws ControlException {
        TenantQueue q = tracker.newQueue(a);
        Trigger t = tracker.watch(a, "some 100000 500000", 0);
        assertEquals(50 * MS, t.pollPeriodNs());
        assertFalse(t.poll(50 * MS), "nothing stalled");
        q.begin(60 * MS);
        tracker.parked(io(q), 60 * MS);
        StringBuilder fired = new StringBuilder();
        for (long now = 100 * MS; now <= 1_200 * MS; now += 50 * MS) if (t.poll(now)) fired.append(now / MS).append(' ');
        // The first poll that sees the stall starts the window (100 ms); 100 ms of growth is there at 200 ms;
        // then at most one event per 500 ms window, each as soon as the window allows.
        assertEquals("200 700 1200 ", fired.toString());
        Trigger other = tracker.watch(b, "full 100000 500000", 0);
        for (long now = 1_250 * MS; now <= 3_000 * MS; now += 50 * MS) assertFalse(other.poll(now), "b never stalls");
        assertEquals(2, tracker.triggerCount());
        t.close();
        t.close();
        other.close();
        assertEquals(0, tracker.triggerCount());
        assertFalse(t.poll(3_050 * MS), "a closed trigger never fires");
    }
}
