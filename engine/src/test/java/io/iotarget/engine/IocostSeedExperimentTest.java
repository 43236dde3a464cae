package io.iotarget.engine;

import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Seed 000, the experiment of the passthrough-charging RFC: with iocost enabled and vrate
 * pinned to its 1% floor, a sustained 128 MiB write by a group — also when issued as
 * passthrough — must be paced to about 1% of the unthrottled rate and show in the group's
 * io.stat. Through the engine's embedded API, on a manual clock: the device's unthrottled
 * rate is what io.cost.model says, 1 GiB/s of sequential 128 KiB writes (each costs 1/8192 s
 * of device time), so 128 MiB takes 0.125 s at vrate 100% and 12.5 s at 1%.
 */
class IocostSeedExperimentTest {
    private static final long MIB = 1 << 20;
    private static final long TOTAL = 128 * MIB;
    private static final int CHUNK = 128 * 1024;
    private static final String MODEL = " ctrl=user model=linear rbps=1073741824 rseqiops=262144 rrandiops=262144"
                                        + " wbps=1073741824 wseqiops=262144 wrandiops=262144";

    private final ManualClock clock = new ManualClock(0);
    private Engine engine;
    private Device device;

    @BeforeEach
    void setUp() throws ControlException {
        engine = new Engine(clock, false);
        device = engine.addDevice("null0", new NullBackend(1L << 40, 512, false), null, 64);
        engine.controller().write("cgroup.subtree_control", "+io");
        engine.controller().mkdir("tenants");
        engine.controller().write("tenants/cgroup.subtree_control", "+io");
        engine.controller().write("io.cost.model", device.number() + MODEL);
    }

    @Test
    void shouldPaceSustainedWritesAndPassthroughToOnePercent() throws Exception {
        engine.controller().write("io.cost.qos", device.number() + " enable=1 ctrl=user min=1.00 max=1.00");
        // vrate walks from 100% to its pinned 1% in 4% steps per 50 ms period (≈113 periods)
        // while someone is throttled; a warm-up group provides that.
        Group warm = engine.controller().mkdir("tenants/warm");
        while (!vrate().equals("1.00")) write(warm, IoOp.WRITE, 8 * MIB);
        clock.advance(200_000_000L);                 // warm goes idle and is deactivated
        engine.releaseDue();

        long writeNs = write(engine.controller().mkdir("tenants/writer"), IoOp.WRITE, TOTAL);
        long passthroughNs = write(engine.controller().mkdir("tenants/passthrough"), IoOp.PASSTHROUGH_OUT, TOTAL);

        // 1% of 1 GiB/s: 12.5 s for 128 MiB, give or take the initial budget and vrate's
        // 1374/1375 (vtime per µs) oscillation around 1% of 137438.
        assertEquals(12.5, writeNs / 1e9, 0.1, "Volume.write");
        assertEquals(12.5, passthroughNs / 1e9, 0.1, "Volume.submit(PASSTHROUGH_OUT)");
        assertEquals(device.number() + " rbytes=0 wbytes=134217728 rios=0 wios=1024 dbytes=0 dios=0 cost.usage=",
                usageless(engine.controller().read("tenants/writer/io.stat")));
        assertEquals(device.number() + " rbytes=0 wbytes=134217728 rios=0 wios=1024 dbytes=0 dios=0 cost.usage=",
                usageless(engine.controller().read("tenants/passthrough/io.stat")));
        // cost.usage counts device time at the vrate in effect: each group had the (paced)
        // device for its whole 12.5 s.
        assertUsageNear(12_500_000, "tenants/writer/io.stat");
        assertUsageNear(12_500_000, "tenants/passthrough/io.stat");
    }

    @Test
    void shouldRunAtTheModelsRateWithVratePinnedAtFull() throws Exception {
        engine.controller().write("io.cost.qos", device.number() + " enable=1 ctrl=user min=100.00 max=100.00");
        long ns = write(engine.controller().mkdir("tenants/writer"), IoOp.PASSTHROUGH_OUT, TOTAL);
        // 0.125 s, less the 25 ms of budget a group starts with (half a period).
        assertEquals(0.100, ns / 1e9, 0.002);
    }

    /**
     * Writes {@code total} bytes sequentially as {@code group}, eight 128 KiB requests
     * outstanding, moving the clock only when every outstanding request is waiting.
     *
     * @return the time it took, ns
     */
    private long write(Group group, IoOp op, long total) throws Exception {
        Volume volume = engine.open("null0", group);
        ByteBuffer data = ByteBuffer.allocateDirect(CHUNK);
        ArrayDeque<CompletableFuture<IoStatus>> outstanding = new ArrayDeque<>();
        long start = clock.nanoTime();
        long offset = 0;
        while (offset < total || !outstanding.isEmpty()) {
            for (var it = outstanding.iterator(); it.hasNext(); ) {
                CompletableFuture<IoStatus> f = it.next();
                if (!f.isDone()) continue;
                assertEquals(IoStatus.OK, f.get());
                it.remove();
            }
            while (offset < total && outstanding.size() < 8) {
                outstanding.add(volume.submit(op, 0, offset, CHUNK, data.duplicate()));
                offset += CHUNK;
            }
            if (!outstanding.isEmpty() && outstanding.stream().noneMatch(CompletableFuture::isDone)) {
                clock.set(Math.max(engine.nextReleaseNs(), clock.nanoTime()));
                engine.releaseDue();
            }
        }
        return clock.nanoTime() - start;
    }

    private String vrate() throws ControlException {
        Matcher m = Pattern.compile("cost\\.vrate=(\\d+\\.\\d\\d)").matcher(engine.controller().read("io.stat"));
        assertTrue(m.find());
        return m.group(1);
    }

    private static String usageless(String stat) {
        return stat.strip().replaceAll("cost\\.usage=\\d+", "cost.usage=");
    }

    private void assertUsageNear(long expectedUs, String file) throws ControlException {
        // cost.usage is folded in at period ends: run one more so the last requests count.
        clock.advance(100_000_000L);
        engine.releaseDue();
        Matcher m = Pattern.compile("cost\\.usage=(\\d+)").matcher(engine.controller().read(file));
        assertTrue(m.find());
        long usage = Long.parseLong(m.group(1));
        assertTrue(Math.abs(usage - expectedUs) <= expectedUs / 50, file + " cost.usage=" + usage);
    }
}
