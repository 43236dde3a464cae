package io.iotarget.frontend.nbd;

import io.iotarget.buffer.BufferAccount;
import io.iotarget.engine.Engine;
import io.iotarget.model.Device;
import io.iotarget.testkit.Await;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tenant whose writes wait in io.max holds at most its share of the buffer pool: past it, its
 * connection stops being read (nothing is refused, nothing is lost), while another tenant's
 * IO goes on; the held writes complete in order as io.max lets them go.
 */
class BufferShareTest {
    /** The largest request a client may send by default (max_request). */
    private static final int BIG = NbdWire.DEFAULT_MAX_REQUEST;
    private static final long SHARE = 2L * BIG;

    @Test
    void aFloodingTenantIsStoppedAtItsShareAndTheOtherGoesOn() throws Exception {
        try (TestTarget t = new TestTarget(new Engine.Settings(4 * SHARE, SHARE, io.iotarget.backend.file.IoEngine.Kind.AUTO))) {
            Device flood = t.memoryExport("flood", 6L * BIG);
            Device other = t.memoryExport("other", 64L << 20);
            t.engine.controller().write("tenants/flood/io.max", flood.number() + " wiops=4");
            BufferAccount floodBuffers = t.engine.buffers().account(t.engine.controller().group("tenants/flood"));
            byte[] payload = new byte[BIG];
            new Random(9).nextBytes(payload);
            try (RawClient a = RawClient.connect(t.port, "flood", false); RawClient b = RawClient.connect(t.port, "other", false)) {
                // Six 64 MiB writes at wiops=4: the first pass, the others wait; the share holds two.
                Thread writer = Thread.startVirtualThread(() -> {
                    try {
                        for (int i = 0; i < 6; i++) a.write(0, i, (long) i * BIG, payload);
                        a.request(0, NbdWire.CMD_READ, 100, 0, 4096);
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                long peak = 0;
                for (int i = 0; i < 50; i++) {
                    b.request(0, NbdWire.CMD_READ, i, (long) i * 4096, 4096);
                    assertEquals(0, b.reply(4096).error(), "the other tenant is served meanwhile");
                    b.write(0, 1000 + i, (long) i * 4096, new byte[4096]);
                    assertEquals(0, b.reply(0).error());
                    peak = Math.max(peak, floodBuffers.inUseBytes());
                    Thread.sleep(10);                   // paces the other tenant's rounds over the flood's life
                }
                assertTrue(peak <= SHARE, "the flood held " + peak + " bytes, its share is " + SHARE);
                // Replies come in completion order: the read, not held by wiops, may overtake writes still in io.max.
                java.util.List<Long> writes = new java.util.ArrayList<>();
                for (int i = 0; i < 7; i++) {
                    RawClient.Reply r = a.reply(cookie -> cookie == 100 ? 4096 : 0);
                    assertEquals(0, r.error());
                    if (r.cookie() != 100) writes.add(r.cookie());
                }
                assertEquals(java.util.List.of(0L, 1L, 2L, 3L, 4L, 5L), writes, "held writes complete, in order");
                writer.join();
            }
            Await.until(Duration.ofSeconds(2), () -> floodBuffers.inUseBytes() == 0, () -> "the flood's buffers went back: " + floodBuffers.inUseBytes());
            assertEquals(6L * BIG, t.ioStat("tenants/flood", flood).get("wbytes"), "nothing was lost");
            assertEquals(0, t.server.unexpectedErrors());
        }
    }
}
