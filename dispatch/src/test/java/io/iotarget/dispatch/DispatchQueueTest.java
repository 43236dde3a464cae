package io.iotarget.dispatch;

import io.iotarget.backend.Backend;
import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.ErrnoException;
import io.iotarget.backend.ForwardingBackend;
import io.iotarget.backend.file.IoEngine;
import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.model.Clock;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoGroup;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.testkit.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Depth, FIFO order, closing under load and error statuses, for inline and asynchronous backends. */
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
    private static final Device DEVICE = new Device(0, new DeviceNumber(259, 0), "gated", 1 << 20, 512, false, 1);

    private final IoEngine ioEngine = open();

    private static IoEngine open() {
        try {
            return IoEngine.open(IoEngine.Kind.THREADS);
        } catch (java.io.IOException e) {
            throw new AssertionError(e);
        }
    }

    @AfterEach
    void closeEngine() {
        ioEngine.close();
    }

    /**
     * A null backend whose reads wait at a gate, so requests can be held on the backend; it
     * records the order and the number of calls in progress.
     */
    private static final class GatedBackend extends ForwardingBackend {
        final boolean blocking;
        final Semaphore gate = new Semaphore(0);
        final AtomicInteger running = new AtomicInteger();
        final AtomicInteger mostRunning = new AtomicInteger();
        final List<Long> order = new CopyOnWriteArrayList<>();
        final CountDownLatch entered = new CountDownLatch(1);
        volatile boolean closed;
        volatile boolean usedAfterClose;

        GatedBackend(boolean blocking) {
            super(new NullBackend(1 << 20, 512, false));
            this.blocking = blocking;
        }

        @Override
        public boolean blocking() {
            return blocking;
        }

        @Override
        public void read(long offset, ByteBuffer dst) {
            if (closed) usedAfterClose = true;
            order.add(offset);
            mostRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
            entered.countDown();
            gate.acquireUninterruptibly();
            running.decrementAndGet();
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    /** Records every completion with its thread; counts them per request. */
    private static final class Recorder implements DispatchQueue.Listener {
        final List<IoStatus> statuses = new CopyOnWriteArrayList<>();
        final Map<IoRequest, Integer> times = new ConcurrentHashMap<>();
        final List<Thread> threads = new CopyOnWriteArrayList<>();
        final Semaphore done = new Semaphore(0);

        @Override
        public void issued(IoRequest io) {
        }

        @Override
        public void completed(IoRequest io, IoStatus status) {
            statuses.add(status);
            times.merge(io, 1, Integer::sum);
            threads.add(Thread.currentThread());
            done.release();
        }

        void await(int n) throws InterruptedException {
            assertTrue(done.tryAcquire(n, 10, TimeUnit.SECONDS), "completions: " + statuses.size() + " of " + n);
        }
    }

    private static IoRequest read(long offset) {
        return new IoRequest().set(IoOp.READ, 0, offset, 512, ByteBuffer.allocate(512)).target(DEVICE, GROUP);
    }

    private DispatchQueue queue(Backend backend, int depth, Recorder recorder) {
        return new DispatchQueue(DEVICE, backend, depth, recorder, ioEngine, Clock.SYSTEM);
    }

    @Test
    void shouldWaitForRunningRequestsAndAbortTheRestWhenClosed() throws Exception {
        GatedBackend backend = new GatedBackend(false);
        Recorder done = new Recorder();
        DispatchQueue queue = queue(backend, 1, done);
        Thread submitter = Thread.ofPlatform().start(() -> queue.dispatch(read(0)));
        assertTrue(backend.entered.await(5, TimeUnit.SECONDS));
        queue.dispatch(read(512));   // waits for the slot
        assertEquals(Map.of(DispatchCounter.BACKEND_ERRORS, 0L, DispatchCounter.ABORTED, 0L, DispatchCounter.UNCHARGED, 0L, DispatchCounter.IN_FLIGHT, 1L, DispatchCounter.WAITING, 1L),
                queue.counters().snapshot());
        Thread closer = Thread.ofPlatform().start(() -> {
            queue.close();
            backend.close();
        });
        Thread.sleep(100);                  // time for close to return if it did not wait: that it does not is the point
        assertTrue(closer.isAlive(), "close waits for the request on the backend");
        assertEquals(List.of(IoStatus.ABORTED), done.statuses, "the waiting request failed at once");
        backend.gate.release();
        closer.join(5_000);
        submitter.join(5_000);
        queue.dispatch(read(0));
        assertEquals(List.of(IoStatus.ABORTED, IoStatus.OK, IoStatus.ABORTED), done.statuses);
        assertEquals(2, queue.counters().counter(DispatchCounter.ABORTED));
        assertEquals(0, queue.counters().counter(DispatchCounter.IN_FLIGHT));
        assertFalse(backend.usedAfterClose, "nothing reached the backend after close");
    }

    /** A blocking backend: the submitter returns at once, at most depth run, the rest start in FIFO order on IO threads. */
    @Test
    void shouldRunBlockingBackendsOffTheSubmitterAtMostDepthAtOnceInFifoOrder() throws Exception {
        GatedBackend backend = new GatedBackend(true);
        Recorder done = new Recorder();
        DispatchQueue queue = queue(backend, 4, done);
        for (int i = 0; i < 40; i++) queue.dispatch(read(i * 512L));        // returns without waiting for the gate
        assertTrue(backend.entered.await(5, TimeUnit.SECONDS));
        // Four reach the gate; mostRunning, checked below, shows no fifth ever did.
        Await.until(Duration.ofSeconds(5), () -> backend.running.get() == 4, () -> backend.running.get() + " on the backend");
        assertEquals(4, backend.running.get(), "depth 4: four on the backend");
        assertEquals(4, queue.inFlight());
        assertEquals(0, done.statuses.size());
        backend.gate.release(40);
        done.await(40);
        assertEquals(4, backend.mostRunning.get(), "never more than depth");
        assertTrue(done.statuses.stream().allMatch(s -> s == IoStatus.OK));
        assertTrue(done.threads.stream().noneMatch(t -> t == Thread.currentThread()), "completions on IO threads");
        assertEquals(List.of(0L, 512L, 1024L, 1536L), backend.order.subList(0, 4).stream().sorted().toList(), "the first four");
        assertEquals(0, queue.inFlight());
    }

    @Test
    void shouldStartWaitingRequestsInArrivalOrder() throws Exception {
        GatedBackend backend = new GatedBackend(true);
        Recorder done = new Recorder();
        DispatchQueue queue = queue(backend, 1, done);
        List<Long> expected = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            queue.dispatch(read(i * 512L));
            expected.add(i * 512L);
        }
        backend.gate.release(30);
        done.await(30);
        assertEquals(expected, backend.order);
    }

    @Test
    void shouldFinishOrAbortEveryRequestOnceWhenClosedUnderLoad() throws Exception {
        GatedBackend backend = new GatedBackend(true);
        Recorder done = new Recorder();
        DispatchQueue queue = queue(backend, 8, done);
        List<Thread> submitters = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            long base = t * 100_000L;
            submitters.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 50; i++) queue.dispatch(read(base + i * 512L));
            }));
        }
        for (Thread t : submitters) t.join();
        Thread closer = Thread.ofPlatform().start(() -> {
            queue.close();
            backend.close();
        });
        Thread.sleep(50);                   // time for close to return if it did not wait: that it does not is the point
        assertTrue(closer.isAlive(), "close waits for the eight on the backend");
        backend.gate.release(200);
        closer.join(5_000);
        assertFalse(closer.isAlive());
        done.await(200);
        assertEquals(200, done.times.size());
        assertTrue(done.times.values().stream().allMatch(n -> n == 1), "each request completed exactly once");
        assertEquals(8, done.statuses.stream().filter(s -> s == IoStatus.OK).count(), "the eight on the backend finished");
        assertEquals(192, done.statuses.stream().filter(s -> s == IoStatus.ABORTED).count(), "the waiting ones were aborted");
        assertFalse(backend.usedAfterClose);
    }

    /** Errnos become statuses that mean something, inline and asynchronously, and every failure is counted. */
    @ParameterizedTest(name = "blocking={0}")
    @ValueSource(booleans = {false, true})
    void shouldMapBackendErrnosToStatuses(boolean blocking) throws Exception {
        Map<Integer, IoStatus> expected = Map.of(
                BackendErrors.ENOSPC, IoStatus.NO_SPACE,
                BackendErrors.EDQUOT, IoStatus.NO_SPACE,
                BackendErrors.EIO, IoStatus.IO_ERROR,
                BackendErrors.EROFS, IoStatus.READ_ONLY,
                BackendErrors.EINVAL, IoStatus.INVALID,
                BackendErrors.EOPNOTSUPP, IoStatus.NOT_SUPPORTED);
        for (var e : expected.entrySet()) {
            Backend failing = new ForwardingBackend(new NullBackend(1 << 20, 512, false)) {
                @Override
                public boolean blocking() {
                    return blocking;
                }

                @Override
                public void write(long offset, ByteBuffer src, boolean fua) throws ErrnoException {
                    throw new ErrnoException("pwrite", e.getKey());
                }
            };
            Recorder done = new Recorder();
            DispatchQueue queue = queue(failing, 4, done);
            queue.dispatch(new IoRequest().set(IoOp.WRITE, 0, 0, 512, ByteBuffer.allocate(512)).target(DEVICE, GROUP));
            done.await(1);
            assertEquals(List.of(e.getValue()), done.statuses, BackendErrors.name(e.getKey()));
            assertEquals(1, queue.counters().counter(DispatchCounter.BACKEND_ERRORS));
            if (blocking) assertNotSame(Thread.currentThread(), done.threads.getFirst());
            else assertSame(Thread.currentThread(), done.threads.getFirst());
        }
    }

    /** Many threads at once, inline and asynchronously: each request completes exactly once, and the count is exact. */
    @ParameterizedTest(name = "blocking={0}")
    @ValueSource(booleans = {false, true})
    void shouldCompleteEveryRequestOnceFromConcurrentSubmitters(boolean blocking) throws Exception {
        Backend backend = new ForwardingBackend(new NullBackend(1 << 30, 512, false)) {
            @Override
            public boolean blocking() {
                return blocking;
            }
        };
        Recorder done = new Recorder();
        DispatchQueue queue = queue(backend, 16, done);
        List<Thread> submitters = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            submitters.add(Thread.ofPlatform().start(() -> {
                for (int i = 0; i < 1000; i++) queue.dispatch(read(i * 512L));
            }));
        }
        for (Thread t : submitters) t.join();
        done.await(8000);
        assertEquals(8000, done.times.size());
        assertTrue(done.times.values().stream().allMatch(n -> n == 1));
        assertEquals(0, queue.inFlight());
    }

    /**
     * A backend call that throws an Error (out of memory in a backend's own allocation, a
     * StackOverflowError) fails its request with IO_ERROR; it must not keep the queue slot, or
     * after {@code depth} such calls the device would run nothing ever again.
     */
    @Test
    void shouldFailARequestWhoseBackendCallThrowsAnErrorAndKeepItsSlotFree() {
        Device device = new Device(0, new DeviceNumber(259, 0), "failing", 1 << 20, 512, false, 1);
        ForwardingBackend backend = new ForwardingBackend(new NullBackend(1 << 20, 512, false)) {
            private boolean failed;

            @Override
            public void write(long offset, ByteBuffer src, boolean fua) {
                if (!failed) {
                    failed = true;
                    throw new OutOfMemoryError("simulated: the backend cannot allocate");
                }
            }
        };
        List<IoStatus> done = new CopyOnWriteArrayList<>();
        DispatchQueue queue = new DispatchQueue(device, backend, 1, new DispatchQueue.Listener() {
            @Override
            public void issued(IoRequest io) {
            }

            @Override
            public void completed(IoRequest io, IoStatus status) {
                done.add(status);
            }
        }, ioEngine, Clock.SYSTEM);
        for (int i = 0; i < 2; i++) {
            queue.dispatch(new IoRequest().set(IoOp.WRITE, 0, 0, 512, ByteBuffer.allocate(512)).target(device, GROUP));
        }
        assertEquals(List.of(IoStatus.IO_ERROR, IoStatus.OK), done);
        assertEquals(0, queue.inFlight());
        assertEquals(1, queue.counters().counter(DispatchCounter.BACKEND_ERRORS));
    }
}
