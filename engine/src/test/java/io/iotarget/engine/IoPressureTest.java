package io.iotarget.engine;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.pressure.Trigger;
import io.iotarget.model.Device;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * io.pressure through the engine: a volume held by io.max at QD32 is stalled all the time, an
 * unthrottled sibling never, and triggers fire for the first only. Manual clock, so the
 * averages are the kernel's arithmetic to the digit.
 */
class IoPressureTest {
    private static final long MS = 1_000_000L;
    private static final long PERIOD_NS = 2_004_000_000L;
    private static final int QD = 32;

    /** The kernel's avg after n periods of 100 % starting from 0 (calc_load with EXP_x), as io.pressure prints it. */
    private static String fullyStalledAvg(long exp, int periods) {
        long avg = 0;
        long active = 100L << 11;
        for (int i = 0; i < periods; i++) {
            long next = avg * exp + active * (2048 - exp);
            if (active >= avg) next += 2047;
            avg = next / 2048;
        }
        long frac = ((avg & 2047) * 100) >> 11;
        return (avg >> 11) + "." + (frac < 10 ? "0" : "") + frac;
    }

    private static String field(String text, String line, String key) {
        Matcher m = Pattern.compile("(?m)^" + line + " .*\\b" + key + "=(\\S+)").matcher(text);
        assertTrue(m.find(), key + " in " + text);
        return m.group(1);
    }

    @Test
    void shouldReadFullPressureForAHeldTenantAndNoneForItsSibling() throws Exception {
        ManualClock clock = new ManualClock(1_000_000_000L);
        try (Engine engine = new Engine(clock, false)) {
            Device dev = engine.addDevice("m", new MemoryBackend(1 << 24, 512, false), null, 64);
            engine.controller().mkdir("a");
            engine.controller().mkdir("b");
            engine.controller().write("a/io.max", dev.number() + " riops=1000");
            Group a = engine.controller().group("a");
            Group b = engine.controller().group("b");
            Volume held = engine.open("m", a);
            Volume free = engine.open("m", b);
            String idle = "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
            assertEquals(idle, engine.controller().read("a/io.pressure"), "nothing happened yet");

            List<Integer> resubmit = new ArrayList<>();
            int[] completed = {0};
            Runnable[] submitA = new Runnable[1];
            submitA[0] = () -> held.read(0, ByteBuffer.allocateDirect(4096)).thenAccept(status -> {
                assertEquals(IoStatus.OK, status);
                completed[0]++;
                resubmit.add(1);
            });
            long start = clock.nanoTime();
            for (int i = 0; i < QD; i++) submitA[0].run();
            Trigger onA = engine.controller().tree().watch("a/io.pressure", "some 150000 1000000");
            Trigger onB = engine.controller().tree().watch("b/io.pressure", "some 150000 1000000");
            long firedAtNs = -1;
            int bFired = 0;
            long heldNs = 12 * PERIOD_NS + 500 * MS;            // 12 whole periods of the held group's clock, and some
            long nextPollNs = start + onA.pollPeriodNs();
            while (clock.nanoTime() - start < heldNs) {
                clock.advance(MS);
                engine.releaseDue();
                int again = resubmit.size();
                resubmit.clear();
                for (int i = 0; i < again; i++) submitA[0].run();
                for (int i = 0; i < QD; i++) free.read(0, ByteBuffer.allocateDirect(4096));   // b: as fast as the device goes
                if (clock.nanoTime() >= nextPollNs) {
                    nextPollNs += onA.pollPeriodNs();
                    if (onA.poll(clock.nanoTime()) && firedAtNs < 0) firedAtNs = clock.nanoTime() - start;
                    if (onB.poll(clock.nanoTime())) bFired++;
                }
            }
            long elapsedNs = clock.nanoTime() - start;
            double iops = completed[0] / (elapsedNs / 1e9);
            assertTrue(Math.abs(iops - 1000) < 20, "io.max held a to 1000 IOPS: " + iops);

            String pa = engine.controller().read("a/io.pressure");
            System.out.printf("io.pressure, volume at QD32 held by riops=1000 for %d ms (manual clock), %.1f IOPS:%n%s"
                              + "trigger some 150000 1000000 fired after %d ms%n", elapsedNs / MS, iops, pa, firedAtNs / MS);
            String expected10 = fullyStalledAvg(1677, 12);
            assertEquals(expected10, field(pa, "some", "avg10"), pa);
            assertEquals(expected10, field(pa, "full", "avg10"), "one queue, always stalled: full as some\n" + pa);
            assertEquals(fullyStalledAvg(1981, 12), field(pa, "some", "avg60"), pa);
            assertEquals(fullyStalledAvg(2034, 12), field(pa, "some", "avg300"), pa);
            assertTrue(Double.parseDouble(expected10) >= 90, "12 periods of 100 % bring avg10 over 90: " + expected10);
            long totalUs = Long.parseLong(field(pa, "some", "total"));
            assertTrue(Math.abs(totalUs - elapsedNs / 1000) <= elapsedNs / 1000 / 20, "total " + totalUs + " us against " + elapsedNs / 1000 + " us held");
            assertTrue(Math.abs(totalUs - elapsedNs / 1000) <= 2000, "in fact to the millisecond: " + totalUs);
            assertEquals(idle, engine.controller().read("b/io.pressure"), "the unthrottled sibling never stalled");
            String root = engine.controller().read("io.pressure");
            assertEquals(field(pa, "some", "total"), field(root, "some", "total"), "hierarchical: the root sees a's stall\n" + root);

            assertTrue(firedAtNs >= 150 * MS && firedAtNs <= 1000 * MS, "the trigger on a fired within its window: " + firedAtNs / MS + " ms");
            assertEquals(0, bFired, "the trigger on b never fired");
            assertEquals(2, engine.controller().tree().pressure().triggerCount());
            onA.close();
            onB.close();
            onA.close();
            assertEquals(0, engine.controller().tree().pressure().triggerCount(), "closed triggers are gone");

            // a stops: what was parked drains, and the averages decay from there.
            submitA[0] = () -> { };
            for (int i = 0; i < 100; i++) {
                clock.advance(MS);
                engine.releaseDue();
            }
            long drainedTotal = Long.parseLong(field(engine.controller().read("a/io.pressure"), "some", "total"));
            clock.advance(10 * PERIOD_NS);
            String later = engine.controller().read("a/io.pressure");
            assertEquals(drainedTotal, Long.parseLong(field(later, "some", "total")), "no stall, no time");
            assertTrue(Double.parseDouble(field(later, "some", "avg10")) < 20, later);
            assertFalse(field(later, "some", "avg300").equals("0.00"), "avg300 remembers: " + later);
            held.close();
            free.close();
        }
    }
}
