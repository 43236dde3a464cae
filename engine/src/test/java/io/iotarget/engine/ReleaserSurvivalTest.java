package io.iotarget.engine;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The releaser is the one thread that waits for time on behalf of every parked request: if it
 * died, every throttled request of every tenant would wait for ever. Whatever a completion
 * callback throws on it — here an OutOfMemoryError, as a front end that cannot allocate a reply
 * would — it must log, count, and go on releasing.
 */
class ReleaserSurvivalTest {
    private final Engine engine = new Engine();

    @AfterEach
    void tearDown() {
        engine.close();
    }

    @Test
    void shouldKeepReleasingParkedRequestsAfterACallbackThrowsAnError() throws Exception {
        Device device = engine.addDevice("mem0", new MemoryBackend(1 << 20, 512, false), null, 64);
        Group a = engine.controller().mkdir("a");
        engine.controller().write("a/io.max", "259:0 riops=100");
        int requests = 30;
        CountDownLatch completed = new CountDownLatch(requests);
        AtomicBoolean thrown = new AtomicBoolean();
        for (int i = 0; i < requests; i++) {
            IoRequest io = new IoRequest().set(IoOp.READ, 0, 0, 512, ByteBuffer.allocateDirect(512)).target(device, a)
                    .callback(r -> {
                        assertEquals(IoStatus.OK, r.status());
                        completed.countDown();
                        if (Thread.currentThread().getName().equals("iotarget-releaser") && thrown.compareAndSet(false, true)) {
                            throw new OutOfMemoryError("simulated: no memory for the reply");
                        }
                    }, null, 0);
            engine.submit(io);
        }
        // 30 reads at 100 IOPS: ~0.3 s, plus the releaser's pause after the Error.
        assertTrue(completed.await(10, TimeUnit.SECONDS), "parked requests still released: " + completed.getCount() + " left");
        assertTrue(thrown.get(), "the releaser ran a callback that threw");
        assertEquals(1, engine.unexpectedErrors());
    }
}
