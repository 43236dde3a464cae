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

    /** calc_load from 0 towards 100 % for n periods, then m idle ones zero-filled (calc_load_n), printed as the kernel prints. */
    private static String kernelAvg(long exp, int stalled, int idle) {
        long avg = 0;
        for (int i = 0; i < stalled; i++) avg = PressureGroup.calcLoad(avg, exp, 100 * PressureGroup.FIXED_1);
        if (idle > 0) avg = PressureGroup.calcLoad(avg, PressureGroup.fixedPower(exp, idle), 0);
        return (avg >> 11) + "." + String.format("%02d", ((avg & 2047) * 100) >> 11);
    }

    @Test
    void shouldAverageAsTheKernelDoes() {
        TenantQueue q = tracker.newQueue(a);
        IoRequest held = io(q);
        long t0 = 5 * S;
        q.begin(t0);
        tracker.parked(held, t0);
        String text = tracker.read(a, t0 + 5 * P + P / 2);
        assertEquals(kernelAvg(1677, 5, 0), field(text, "some", "avg10"), text);
        assertEquals("63.18", field(text, "some", "avg10"), "100 * (1 - (1677/2048)^5) in fixed point");
        assertEquals(kernelAvg(1981, 5, 0), field(text, "full", "avg60"));
        assertEquals(kernelAvg(2034, 5, 0), field(text, "some", "avg300"));
        assertEquals(Long.toString((5 * P + P / 2) / 1000), field(text, "some", "total"));

        // Half a period more of stall, then 7 idle periods: the kernel zero-fills them (calc_load_n).
        tracker.released(held, t0 + 6 * P);
        q.end(t0 + 6 * P);
        String later = tracker.read(a, t0 + 13 * P + 1);
        assertEquals(kernelAvg(1677, 6, 7), field(later, "some", "avg10"), later);
        assertEquals(kernelAvg(2034, 6, 7), field(later, "full", "avg300"), later);
        assertEquals(Long.toString(6 * P / 1000), field(later, "some", "total"));
        assertTrue(tracker.read(root, t0 + 13 * P + 1).startsWith("some avg10=" + kernelAvg(1677, 6, 7) + " "), "the root follows");
        assertEquals("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                tracker.read(b, t0 + 13 * P), "the sibling");
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
