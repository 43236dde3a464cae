package io.iotarget.dispatch;

import io.iotarget.backend.ForwardingBackend;
import io.iotarget.backend.NullBackend;
import io.iotarget.model.Clock;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoGroup;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Depth limits and closing: nothing touches a backend after its queue is closed. */
class DispatchQueueTest {
    private static final IoGroup GROUP = new IoGroup() {
        @Override
        public long id() {
            return 1;
        }

        @Override
        public String path() {
            return "/";
        }
    };

    /** A null backend whose reads wait at a gate, so a request can be held on the backend. */
    private static final class GatedBackend extends ForwardingBackend {
        final CountDownLatch entered = new CountDownLatch(1);
        final CountDownLatch gate = new CountDownLatch(1);
        volatile boolean closed;
        volatile boolean usedAfterClose;

        GatedBackend() {
            super(new NullBackend(1 << 20, 512, false));
        }

        @Override
        public void read(long offset, ByteBuffer dst) {
            if (closed) usedAfterClose = true;
            entered.countDown();
            try {
                gate.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    @Test
    void shouldWaitForRunningRequestsAndAbortTheRestWhenClosed() throws Exception {
        GatedBackend backend = new GatedBackend();
        Device device = new Device(0, new DeviceNumber(259, 0), "gated", 1 << 20, 512, false, 1);
        List<IoStatus> done = new CopyOnWriteArrayList<>();
        DispatchQueue queue = new DispatchQueue(device, backend, 1, new DispatchQueue.Listener() {
            @Override
            public void issued(IoRequest io) {
            }

            @Override
            public void completed(IoRequest io, IoStatus status) {
                done.add(status);
            }
        }, null, Clock.SYSTEM);
        IoRequest running = new IoRequest().set(IoOp.READ, 0, 0, 512, ByteBuffer.allocate(512)).target(device, GROUP);
        Thread submitter = Thread.ofPlatform().start(() -> queue.dispatch(running));
        assertTrue(backend.entered.await(5, TimeUnit.SECONDS));
        queue.dispatch(new IoRequest().set(IoOp.READ, 0, 0, 512, ByteBuffer.allocate(512)).target(device, GROUP));   // waits for the slot
        Thread closer = Thread.ofPlatform().start(() -> {
            queue.close();
            backend.close();
        });
        Thread.sleep(100);
        assertTrue(closer.isAlive(), "close waits for the request on the backend");
        assertEquals(List.of(IoStatus.ABORTED), done, "the waiting request failed at once");
        backend.gate.countDown();
        closer.join(5_000);
        submitter.join(5_000);
        queue.dispatch(new IoRequest().set(IoOp.READ, 0, 0, 512, ByteBuffer.allocate(512)).target(device, GROUP));
        assertEquals(List.of(IoStatus.ABORTED, IoStatus.OK, IoStatus.ABORTED), done);
        assertFalse(backend.usedAfterClose, "nothing reached the backend after close");
    }
}
