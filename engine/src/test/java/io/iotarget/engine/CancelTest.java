package io.iotarget.engine;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.policy.cost.CostCounter;
import io.iotarget.model.Counters;
import io.iotarget.model.Device;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A request whose issuer went away leaves the policy that holds it at once, and nothing else changes. */
class CancelTest {
    private static List<IoRequest> submit(Engine engine, Device dev, Group g, int n, List<IoRequest> done) {
        List<IoRequest> list = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            IoRequest io = new IoRequest().set(IoOp.READ, 0, (long) i * 4096, 4096, ByteBuffer.allocateDirect(4096))
                    .target(dev, g).callback(done::add, null, i);
            list.add(io);
            engine.submit(io);
        }
        return list;
    }

    @Test
    void shouldDropRequestsParkedInIoMaxAndIocostAndLeaveTheRest() throws Exception {
        ManualClock clock = new ManualClock(1_000_000_000L);
        try (Engine engine = new Engine(clock, false)) {
            Device dev = engine.addDevice("m", new MemoryBackend(1 << 20, 512, false), null, 64);
            engine.controller().mkdir("a");
            engine.controller().write("a/io.max", dev.number() + " riops=2");
            Group a = engine.controller().group("a");
            List<IoRequest> done = new ArrayList<>();
            List<IoRequest> ios = submit(engine, dev, a, 4, done);
            int passed = done.size();
            assertTrue(passed < 4, "io.max held some back");
            IoRequest last = ios.get(3);
            assertTrue(engine.cancel(last), "the parked last request is dropped");
            assertEquals(IoStatus.ABORTED, last.status());
            assertFalse(engine.cancel(ios.getFirst()), "a request that already ran is not cancelled");
            for (int i = 0; i < 10; i++) {
                clock.advance(500_000_000L);
                engine.releaseDue();
            }
            assertEquals(4, done.size(), "the others were released as usual, the cancelled one once");
            assertEquals(3, ios.stream().filter(io -> io.status() == IoStatus.OK).count());
            assertTrue(engine.controller().read("a/io.stat").contains("rios=3"), engine.controller().read("a/io.stat"));

            // iocost: a waiter for budget leaves its queue too.
            engine.controller().write("io.cost.qos", dev.number() + " enable=1 ctrl=user min=1.00 max=1.00");
            engine.controller().write("io.cost.model", dev.number() + " ctrl=user model=linear rbps=4096 rseqiops=1 rrandiops=1 wbps=4096 wseqiops=1 wrandiops=1");
            engine.controller().write("a/io.max", dev.number() + " riops=max");
            done.clear();
            List<IoRequest> costed = submit(engine, dev, a, 8, done);
            IoRequest waiting = costed.getLast();
            assertTrue(waiting.status() == null, "iocost holds the last one");
            Counters<CostCounter> cost = engine.controller().policyCounters(dev).get("cost").as(CostCounter.class);
            long held = costed.stream().filter(io -> io.status() == null).count();
            assertEquals(held, cost.counter(CostCounter.WAITING));
            assertEquals(held, cost.counter(CostCounter.WAITED));
            assertTrue(engine.cancel(waiting));
            assertEquals(IoStatus.ABORTED, waiting.status());
            assertEquals(held - 1, cost.counter(CostCounter.WAITING), "the cancelled one waits no more");
        }
    }
}
