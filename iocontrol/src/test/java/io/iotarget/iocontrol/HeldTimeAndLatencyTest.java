package io.iotarget.iocontrol;

import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** iotarget.io.stat: the time io.max held each request and every completion's latency, per pair and up the tree. */
class HeldTimeAndLatencyTest {
    private final ControllerHarness h = new ControllerHarness();

    /** One device line of iotarget.io.stat as key → value. */
    private Map<String, String> line(String group) throws Exception {
        String text = h.controller.read(group + "/iotarget.io.stat");
        Map<String, String> keys = new HashMap<>();
        for (String l : text.lines().toList()) {
            if (!l.startsWith("259:0 ")) continue;
            for (String kv : l.substring(6).split(" ")) keys.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        }
        return keys;
    }

    private IoRequest submit(Group g) {
        IoRequest io = h.request(IoOp.READ, 4096, h.dev0, g);
        io.submitNs(h.clock.nanoTime());
        h.submit(io);
        return io;
    }

    private void complete(IoRequest io) {
        io.status(IoStatus.OK);
        h.controller.complete(io, h.clock.nanoTime(), h::dispatch);
    }

    @Test
    void shouldCountTimeHeldByIoMaxAndLatencyFromEnteringTheController() throws Exception {
        Group a = h.group("tenants/a");
        Group b = h.group("tenants/b");
        h.controller.write("tenants/a/io.max", "259:0 riops=10");
        List<IoRequest> ofA = new ArrayList<>();
        for (int i = 0; i < 4; i++) ofA.add(submit(a));
        IoRequest ofB = submit(b);
        h.clock.advance(50_000);
        complete(ofB);
        h.runUntil(h.clock.nanoTime() + 1_000_000_000L, 1_000_000);
        assertTrue(h.dispatched.containsAll(ofA), "io.max released every request within a second");

        long heldNs = 0;
        long latencyNs = 0;
        h.clock.advance(100_000);
        for (IoRequest io : ofA) {
            heldNs += io.admitNs() - io.submitNs();
            latencyNs += h.clock.nanoTime() - io.submitNs();
            complete(io);
        }
        assertTrue(heldNs > 200_000_000L, "riops=10 spaces 4 requests ~100 ms apart: held " + heldNs);

        Map<String, String> la = line("tenants/a");
        assertEquals(String.valueOf(heldNs / 1000), la.get("throttle_usec"));
        assertEquals("0", la.get("cost_usec"));
        assertEquals("4", la.get("lat_ios"));
        assertEquals(String.valueOf(latencyNs / 1000), la.get("lat_usec"));
        assertEquals(4, Arrays.stream(la.get("lat_hist").split(",")).mapToLong(b1 -> Long.parseLong(b1.split(":")[1])).sum());

        Map<String, String> lb = line("tenants/b");
        assertEquals("0", lb.get("throttle_usec"));
        assertEquals("1", lb.get("lat_ios"));
        assertEquals("50", lb.get("lat_usec"));
        long top = Long.parseLong(lb.get("lat_hist").split(":")[0]);
        assertTrue(top >= 50 && top <= 53, "50 µs lands in a bucket topped within its precision: " + lb.get("lat_hist"));

        // Hierarchical, like io.stat, and a removed group's share stays in its parent.
        h.controller.rmdir("tenants/b");
        Map<String, String> parent = line("tenants");
        assertEquals(String.valueOf(heldNs / 1000), parent.get("throttle_usec"));
        assertEquals("5", parent.get("lat_ios"));
        assertEquals(String.valueOf((latencyNs + 50_000) / 1000), parent.get("lat_usec"));
        assertFalse(h.controller.read("tenants/a/io.stat").contains("usec"), "io.stat stays Linux's");
    }

    @Test
    void shouldCountTimeIocostHeldIncludingARequestCancelledWhileWaiting() throws Exception {
        Group c = h.group("c");
        h.controller.write("io.cost.model", "259:0 ctrl=user model=linear rbps=1048576 rseqiops=256 rrandiops=256"
                                            + " wbps=1048576 wseqiops=256 wrandiops=256");
        h.controller.write("io.cost.qos", "259:0 enable=1");
        List<IoRequest> sent = new ArrayList<>();
        for (int i = 0; i < 20; i++) sent.add(submit(c));
        IoRequest cancelled = sent.removeLast();
        assertFalse(h.dispatched.contains(cancelled), "over iocost's budget");
        h.clock.advance(1_000_000);
        assertTrue(h.controller.cancel(cancelled, h.clock.nanoTime(), h::dispatch));
        long heldNs = h.clock.nanoTime() - cancelled.submitNs();
        h.runUntil(h.clock.nanoTime() + 2_000_000_000L, 1_000_000);
        assertTrue(h.dispatched.containsAll(sent), "iocost let every request go within 2 s");
        for (IoRequest io : sent) heldNs += io.admitNs() - io.submitNs();
        assertTrue(heldNs > 100_000_000L, "19 reads at 256 IOPS waited: " + heldNs);
        Map<String, String> lc = line("c");
        assertEquals(String.valueOf(heldNs / 1000), lc.get("cost_usec"));
        assertEquals("0", lc.get("throttle_usec"));
        assertEquals(lc.get("cost_usec"), line("").get("cost_usec"), "the root counts its children's");
    }

    @Test
    void abortedRequestsAreNotSamples() throws Exception {
        Group a = h.group("a");
        IoRequest io = submit(a);
        io.status(IoStatus.ABORTED);
        h.controller.complete(io, h.clock.nanoTime(), h::dispatch);
        assertEquals("0", line("a").get("lat_ios"));
        assertEquals("", line("a").get("lat_hist"));
    }
}
