package io.iotarget.backend.file;

import io.iotarget.backend.Completion;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.testkit.Await;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The ring under more load than it has slots, from many threads at once, plugged, and closing. */
class IoRingTest {
    private static final int BLOCK = 4096;

    @TempDir
    Path dir;

    private FileBackend sparseFile(long size, boolean direct) throws IOException {
        Path f = dir.resolve("ring.img");
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            ch.truncate(0);
            ch.write(ByteBuffer.allocate(1), size - 1);
        }
        return FileBackend.open(f, 4096, false, direct);
    }

    /** Block {@code i}'s content: every int is {@code i}, so a block written to the wrong place shows. */
    private static ByteBuffer block(int i) {
        ByteBuffer b = ByteBuffer.allocateDirect(BLOCK * 2).alignedSlice(BLOCK).limit(BLOCK);
        for (int at = 0; at < BLOCK; at += 4) b.putInt(at, i);
        return b;
    }

    /**
     * 8 slots, 4 threads, 4000 writes and 4000 reads with up to 64 in flight: the SQ and CQ
     * wrap around hundreds of times, requests beyond 8 wait in the backlog, and every request
     * completes exactly once with the right bytes.
     */
    @Test
    void shouldCompleteEveryRequestOnceWithMoreRequestsThanSlotsFromManyThreads() throws Exception {
        int threads = 4;
        int perThread = 1000;
        int blocks = threads * perThread;
        try (FileBackend file = sparseFile((long) blocks * BLOCK, true); IoEngine engine = IoEngine.withRing(8)) {
            assertEquals(8, engine.ring().entries());
            Semaphore inFlight = new Semaphore(64);
            Set<IoRequest> completed = ConcurrentHashMap.newKeySet();
            AtomicInteger failures = new AtomicInteger();
            Completion done = new Completion() {
                @Override
                public void completed(IoRequest io, IoStatus status) {
                    if (status != IoStatus.OK || !completed.add(io)) failures.incrementAndGet();
                    inFlight.release();
                }

                @Override
                public void failed(IoRequest io, IOException cause) {
                    failures.incrementAndGet();
                    inFlight.release();
                }
            };
            for (IoOp op : List.of(IoOp.WRITE, IoOp.READ)) {
                List<IoRequest> all = new ArrayList<>();
                List<Thread> submitters = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int first = t * perThread;
                    List<IoRequest> mine = new ArrayList<>();
                    for (int i = first; i < first + perThread; i++) {
                        ByteBuffer data = op == IoOp.WRITE ? block(i) : ByteBuffer.allocateDirect(BLOCK * 2).alignedSlice(BLOCK).limit(BLOCK);
                        mine.add(new IoRequest().set(op, 0, (long) i * BLOCK, BLOCK, data));
                    }
                    all.addAll(mine);
                    submitters.add(Thread.ofPlatform().start(() -> {
                        for (IoRequest io : mine) {
                            inFlight.acquireUninterruptibly();
                            IoStatus now = engine.ring().start(file, io, done);
                            if (now != null) failures.incrementAndGet();
                        }
                    }));
                }
                for (Thread t : submitters) t.join();
                assertTrue(inFlight.tryAcquire(64, 20, TimeUnit.SECONDS), "every request completed");
                inFlight.release(64);
                assertEquals(0, failures.get());
                assertEquals(blocks, completed.size(), op + ": each request completed once");
                completed.clear();
                if (op == IoOp.READ) {
                    for (int i = 0; i < blocks; i++) {
                        assertEquals(-1, block(i).mismatch(all.get(i).data()), "block " + i);
                    }
                }
            }
        }
    }

    @Test
    void shouldGatherPluggedSubmissionsIntoOneEnter() throws Exception {
        try (FileBackend file = sparseFile(1 << 20, false); IoEngine engine = IoEngine.withRing(64)) {
            IoRing ring = engine.ring();
            CountDownLatch done = new CountDownLatch(48);
            Completion count = new Completion() {
                @Override
                public void completed(IoRequest io, IoStatus status) {
                    done.countDown();
                }

                @Override
                public void failed(IoRequest io, IOException cause) {
                    throw new AssertionError(cause);
                }
            };
            long before = ring.submitCalls();
            for (int i = 0; i < 16; i++) ring.start(file, read(i), count);
            assertEquals(before + 16, ring.submitCalls(), "unplugged: one io_uring_enter per request");

            before = ring.submitCalls();
            try (var _ = engine.plug()) {
                for (int i = 0; i < 8; i++) ring.start(file, read(i), count);
                try (var _ = engine.plug()) {
                    for (int i = 8; i < 16; i++) ring.start(file, read(i), count);
                }
                assertEquals(before, ring.submitCalls(), "closing a nested plug submits nothing");
                for (int i = 16; i < 32; i++) ring.start(file, read(i), count);
                assertEquals(before, ring.submitCalls(), "nothing submitted while plugged");
            }
            assertEquals(before + 1, ring.submitCalls(), "the outermost close submits all 32 in one call");
            assertTrue(done.await(10, TimeUnit.SECONDS));
        }
    }

    private static IoRequest read(int block) {
        return new IoRequest().set(IoOp.READ, 0, (long) block * BLOCK, BLOCK, ByteBuffer.allocateDirect(BLOCK * 2).alignedSlice(BLOCK).limit(BLOCK));
    }

    @Test
    void shouldLeaveNoThreadAndNoDescriptorBehindWhenClosed() throws Exception {
        long fdsBefore = openDescriptors();
        try (FileBackend file = sparseFile(1 << 20, true)) {
            for (IoEngine.Kind kind : List.of(IoEngine.Kind.IO_URING, IoEngine.Kind.THREADS)) {
                IoEngine engine = IoEngine.open(kind);
                List<Requests.Done> all = new ArrayList<>();
                for (int i = 0; i < 100; i++) {
                    Requests.Done done = new Requests.Done();
                    assertEquals(null, file.start(read(i % 256), engine, done));
                    all.add(done);
                }
                for (Requests.Done d : all) assertEquals(IoStatus.OK, d.get(10, TimeUnit.SECONDS));
                assertTrue(all.stream().noneMatch(d -> d.thread == Thread.currentThread()), "completions ran on IO threads");
                engine.close();
                assertEquals(List.of(), ioThreads(), kind + ": no IO thread left");
                assertEquals(IoStatus.ABORTED, file.start(read(0), engine, new Requests.Done()), "a closed engine refuses");
            }
        }
        assertEquals(fdsBefore, openDescriptors(), "ring and file descriptors closed");
    }

    /** The IO threads still alive, once there are none or after 5 s (a closed engine's threads end just after close returns). */
    private static List<String> ioThreads() throws InterruptedException {
        Await.within(Duration.ofSeconds(5), () -> liveIoThreads().isEmpty());
        return liveIoThreads();
    }

    private static List<String> liveIoThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive).map(Thread::getName)
                .filter(n -> n.startsWith("iotarget-io") || n.startsWith("iotarget-uring")).toList();
    }

    private static long openDescriptors() throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }
}
