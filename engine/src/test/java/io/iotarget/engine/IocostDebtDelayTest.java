package io.iotarget.engine;

import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Metadata cannot wait behind its group's data: iocost lets it through as debt, and once the
 * debt runs far ahead of the device clock the engine holds the completion back (the kernel's
 * issuer delay), so an initiator that waits for its replies slows down.
 */
class IocostDebtDelayTest {
    private static final String MODEL = " ctrl=user model=linear rbps=1073741824 rseqiops=262144 rrandiops=262144"
                                        + " wbps=1073741824 wseqiops=262144 wrandiops=262144";

    @Test
    void shouldHoldTheCompletionOfMetadataIssuedDeepInDebt() throws Exception {
        ManualClock clock = new ManualClock(0);
        Engine engine = new Engine(clock, false);
        Device device = engine.addDevice("null0", new NullBackend(1L << 40, 512, false), null, 64);
        var c = engine.controller();
        c.write("cgroup.subtree_control", "+io");
        Group a = c.mkdir("a");
        c.write("io.cost.model", device.number() + MODEL);
        c.write("io.cost.qos", device.number() + " enable=1");
        Volume volume = engine.open("null0", a);
        ByteBuffer data = ByteBuffer.allocateDirect(1 << 20);

        // 1 MiB of metadata costs 1/1024 s; the group starts with 25 ms of budget. 64 such
        // writes run 39 ms ahead: in debt, but not 5 periods (250 ms) ahead, so no delay yet.
        List<CompletableFuture<IoStatus>> first = new ArrayList<>();
        for (int i = 0; i < 64; i++) first.add(volume.write((long) i << 20, data.duplicate(), IoFlags.META));
        for (CompletableFuture<IoStatus> f : first) assertEquals(IoStatus.OK, f.getNow(null), "metadata never waits");

        // 512 more. 25 of the 576 fit in the budget (25 ms / 0.977 ms); the other 551 are debt,
        // 551 × 2^27 vtime against vtime = −3435950000 + 25 × 2^27: 1075% of a period ahead,
        // so the delay is 250 + 249750 × (1075 − 500) / 24500 = 6111 µs. Each completion is held
        // for the delay in effect when it completes; the last one for the full 6111 µs.
        CompletableFuture<IoStatus> last = null;
        for (int i = 64; i < 576; i++) last = volume.write((long) i << 20, data.duplicate(), IoFlags.META);
        assertFalse(last.isDone(), "the issuer is delayed");
        while (!last.isDone()) {
            clock.set(engine.nextReleaseNs());
            engine.releaseDue();
        }
        assertEquals(6_111_000, clock.nanoTime());
        assertEquals(IoStatus.OK, last.get());
        assertEquals(device.number() + " rbytes=0 wbytes=603979776 rios=0 wios=576 dbytes=0 dios=0",
                c.read("a/io.stat").strip().replaceAll(" cost\\.usage=\\d+", ""));

        // A completion still held when the engine closes is reported then.
        CompletableFuture<IoStatus> held = volume.write(576L << 20, data.duplicate(), IoFlags.META);
        assertFalse(held.isDone());
        engine.close();
        assertEquals(IoStatus.OK, held.getNow(null));
    }
}
