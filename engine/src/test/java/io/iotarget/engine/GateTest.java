package io.iotarget.engine;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoGate;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A request's gate is asked again where it goes to its device: one that io.max held while the
 * gate closed ends with the gate's status and never reaches the backend; one let in is left once.
 */
class GateTest {
    /** A gate that lets requests in while {@link #open}, counting entries and leaves. */
    private static final class Switch implements IoGate {
        volatile boolean open = true;
        int entered, left;

        @Override
        public IoStatus enter(IoRequest io) {
            if (!open) return IoStatus.FORBIDDEN;
            entered++;
            return IoStatus.OK;
        }

        @Override
        public void leave(IoRequest io) {
            left++;
        }
    }

    @Test
    void shouldRefuseAHeldWriteAtTheGateWhenReleasedAndKeepItOffTheBackend() throws Exception {
        ManualClock clock = new ManualClock(1_000_000_000L);
        try (Engine engine = new Engine(clock, false)) {
            MemoryBackend backend = new MemoryBackend(1 << 20, 512, false);
            Device dev = engine.addDevice("m", backend, null, 64);
            engine.controller().mkdir("a");
            engine.controller().write("a/io.max", dev.number() + " wiops=2");
            Group a = engine.controller().group("a");
            Switch gate = new Switch();
            List<IoRequest> done = new ArrayList<>();
            List<IoRequest> ios = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                ByteBuffer data = ByteBuffer.allocateDirect(4096);
                for (int k = 0; k < 4096; k++) data.put(k, (byte) (i + 1));
                IoRequest io = new IoRequest().set(IoOp.WRITE, 0, (long) i * 4096, 4096, data).target(dev, a).callback(done::add, null, i).gate(gate);
                ios.add(io);
                engine.submit(io);
            }
            int passed = done.size();
            assertEquals(true, passed < 4, "io.max held some back");
            assertEquals(passed, gate.entered, "those that ran passed the gate");
            gate.open = false;                               // a reservation changed meanwhile
            for (int i = 0; i < 10; i++) {
                clock.advance(500_000_000L);
                engine.releaseDue();
            }
            assertEquals(4, done.size(), "every request ended");
            for (int i = passed; i < 4; i++) {
                assertEquals(IoStatus.FORBIDDEN, ios.get(i).status(), "held request " + i + " refused when released");
                ByteBuffer back = ByteBuffer.allocateDirect(4096);
                IoRequest read = new IoRequest().set(IoOp.READ, 0, (long) i * 4096, 4096, back).target(dev, a).callback(r -> { }, null, 0);
                engine.submitUncharged(read);
                assertEquals(0, back.get(0), "held write " + i + " never reached the backend");
            }
            assertEquals(gate.entered, gate.left, "each request the gate let in was left once");
        }
    }
}
