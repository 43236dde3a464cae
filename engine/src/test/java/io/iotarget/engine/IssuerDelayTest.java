package io.iotarget.engine;

import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoCallback;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A completion that carries an issuer delay goes to an issuer that can pause itself at once,
 * with the delay ({@link IoCallback#delayIssuer}); the engine holds it only for issuers that
 * cannot. The delay here is iocost's, for metadata deep in debt (IocostDebtDelayTest's numbers).
 */
class IssuerDelayTest {
    private static final String MODEL = " ctrl=user model=linear rbps=1073741824 rseqiops=262144 rrandiops=262144"
                                        + " wbps=1073741824 wseqiops=262144 wrandiops=262144";

    @Test
    void shouldHandTheDelayToAnIssuerThatPausesItself() throws Exception {
        ManualClock clock = new ManualClock(0);
        try (Engine engine = new Engine(clock, false)) {
            Device device = engine.addDevice("null0", new NullBackend(1L << 40, 512, false), null, 64);
            var c = engine.controller();
            c.write("cgroup.subtree_control", "+io");
            Group a = c.mkdir("a");
            c.write("io.cost.model", device.number() + MODEL);
            c.write("io.cost.qos", device.number() + " enable=1");

            List<Long> delays = new ArrayList<>();
            int[] completed = {0};
            IoCallback pausing = new IoCallback() {
                @Override
                public void complete(IoRequest io) {
                    completed[0]++;
                }

                @Override
                public boolean delayIssuer(IoRequest io, long delayNs) {
                    delays.add(delayNs);
                    return true;
                }
            };
            ByteBuffer data = ByteBuffer.allocateDirect(1 << 20);
            var queue = engine.newQueue(a);
            for (int i = 0; i < 576; i++) {
                IoRequest io = new IoRequest().set(IoOp.WRITE, IoFlags.META, (long) i << 20, 1 << 20, data.duplicate())
                        .target(device, a).queue(queue).callback(pausing, null, i);
                engine.submit(io);
            }
            assertEquals(576, completed[0], "every completion is reported at once");
            assertEquals(6_111_000, delays.getLast(), "the last carries the full delay");
            clock.advance(20_000_000);
            assertEquals("some avg10=0.00 avg60=0.00 avg300=0.00 total=6111\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=6111\n",
                    c.read("a/io.pressure"), "io.pressure: the queue was stalled for the delay it owed, with nothing else to do");
        }
    }
}
