package io.iotarget.engine;

import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoCallback;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@link IoRequest#admitNs} is when the request reached its device's queue (the kernel's
 * {@code rq->alloc_time_ns}), where iocost's rq_wait and latency samples start: a data-later
 * write that waited for its data did not wait for the device meanwhile.
 */
class QueueArrivalTimeTest {
    @Test
    void shouldStampADataLaterWriteWhenItsDataArrivesNotWhenItWasAdmitted() throws Exception {
        ManualClock clock = new ManualClock(1_000_000);
        try (Engine engine = new Engine(clock, false)) {
            Device device = engine.addDevice("null0", new NullBackend(1L << 30, 512, false), null, 4);
            var c = engine.controller();
            c.write("cgroup.subtree_control", "+io");
            Group a = c.mkdir("a");
            c.write("io.cost.qos", device.number() + " enable=1");

            List<IoRequest> admitted = new ArrayList<>();
            List<IoRequest> completed = new ArrayList<>();
            IoCallback creator = new IoCallback() {
                @Override
                public void complete(IoRequest io) {
                    completed.add(io);
                }

                @Override
                public void admitted(IoRequest io) {
                    admitted.add(io);
                }
            };
            IoRequest io = new IoRequest().set(IoOp.WRITE, 0, 0, 4096, null).dataLater()
                    .target(device, a).queue(engine.newQueue(a)).callback(creator, null, 0);
            engine.submit(io);
            assertEquals(List.of(io), admitted, "iocost let it go at once");
            clock.advance(3_000_000);       // the data takes 3 ms to arrive
            engine.dispatchAdmitted(io.data(ByteBuffer.allocateDirect(4096)));
            assertEquals(List.of(io), completed);
            assertEquals(1_000_000, io.submitNs());
            assertEquals(4_000_000, io.admitNs(), "reached the device's queue with its data");
            assertEquals(4_000_000, io.issueNs(), "and found a free slot: no rq_wait");
        }
    }
}
