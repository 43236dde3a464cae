package io.iotarget.frontend.nbd;

import io.iotarget.model.Device;
import io.iotarget.testkit.Await;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A client that floods writes against a tight io.max and then goes away leaves nothing
 * behind: what io.max still holds is dropped at once (never acknowledged, so nothing is lost),
 * its buffers go back to the pool, and the export's device is free.
 */
class ClientGoneTest {
    @Test
    void shouldDropWhatIoMaxHoldsWhenTheClientGoesAway() throws Exception {
        try (TestTarget target = new TestTarget()) {
            Device dev = target.memoryExport("flood", 64 << 20);
            target.engine.controller().write("tenants/flood/io.max", dev.number() + " wbps=1048576");
            byte[] mib = new byte[1 << 20];
            new Random(5).nextBytes(mib);
            RawClient c = RawClient.connect(target.port, "flood", false);
            for (int i = 0; i < 48; i++) c.write(0, i, (long) i << 20, mib);
            var account = target.engine.buffers().account(target.engine.controller().group("tenants/flood"));
            Await.until(Duration.ofSeconds(5), () -> account.inUseBytes() >= 32L << 20, () -> "the server took the writes in: " + account.inUseBytes());
            c.abort();                                    // RST: the client is gone, its replies unread
            long t0 = System.nanoTime();
            Await.within(Duration.ofSeconds(5), () -> account.inUseBytes() == 0 && target.server.connectionCount() == 0);
            long tookMs = (System.nanoTime() - t0) / 1_000_000;
            assertEquals(0, account.inUseBytes(), "the flood's buffers went back");
            assertEquals(0, target.server.connectionCount());
            assertTrue(tookMs < 1_000, "dropped in " + tookMs + " ms, not at the tenant's 1 MiB/s");
            long written = target.ioStat("tenants/flood", dev).get("wbytes");
            assertTrue(written <= 4L << 20, "only what io.max let through before the client left was charged: " + written);
            target.server.tree().write("exports/flood/enable", "0");
            assertEquals(0, target.engine.users(dev), "nothing holds the device");
            assertEquals(0, target.server.unexpectedErrors());
        }
    }
}
