package io.iotarget.backend.file;

import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.uring.LoopRing;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * File requests started on a thread that owns an event-loop ring ({@link LoopRing}) go on that
 * ring and complete on that thread, inside its reap: no other thread carries them.
 */
class LoopSlotsTest {
    private static final int BLOCK = 4096;

    @TempDir
    Path dir;

    private FileBackend file(int blocks) throws Exception {
        Path f = dir.resolve("loop.img");
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            for (int i = 0; i < blocks; i++) {
                ByteBuffer b = ByteBuffer.allocate(BLOCK);
                while (b.hasRemaining()) b.putInt(i);
                ch.write(b.flip(), (long) i * BLOCK);
            }
        }
        return FileBackend.open(f, BLOCK, false, true);
    }

    private static ByteBuffer aligned() {
        return ByteBuffer.allocateDirect(BLOCK * 2).alignedSlice(BLOCK).limit(BLOCK);
    }

    @Test
    void shouldCompleteOnTheRingsOwnThreadWhenStartedThere() throws Exception {
        try (FileBackend backend = file(64); IoEngine engine = IoEngine.withRing(8)) {
            LoopRing ring = LoopRing.open(64);
            try {
                List<Requests.Done> done = new ArrayList<>();
                List<ByteBuffer> buffers = new ArrayList<>();
                // More requests than the shared ring has slots, and a flushed write among them.
                for (int i = 0; i < 32; i++) {
                    Requests.Done d = new Requests.Done();
                    ByteBuffer b = aligned();
                    IoRequest io = i == 5
                            ? new IoRequest().set(IoOp.WRITE, IoFlags.FUA | IoFlags.PREFLUSH, 63L * BLOCK, BLOCK, fill(b, 99))
                            : new IoRequest().set(IoOp.READ, 0, (long) i * BLOCK, BLOCK, b);
                    assertEquals(null, backend.start(io, engine, d));
                    done.add(d);
                    buffers.add(b);
                }
                assertFalse(done.get(0).isDone(), "nothing goes to the kernel before the ring's owner enters");
                long deadline = System.nanoTime() + 20_000_000_000L;
                while (!done.stream().allMatch(Requests.Done::isDone) && System.nanoTime() < deadline) {
                    ring.enter(100_000_000L);
                    ring.reap();
                }
                for (int i = 0; i < done.size(); i++) {
                    Requests.Done d = done.get(i);
                    assertTrue(d.isDone(), "request " + i + " completed");
                    assertEquals(IoStatus.OK, d.get());
                    assertSame(Thread.currentThread(), d.thread, "request " + i + " completed on the ring's owner");
                    if (i != 5) assertEquals(i, buffers.get(i).getInt(BLOCK - 4), "request " + i + " read its own block");
                }
                assertEquals(0, engine.ring().submitCalls(), "the shared ring was not used");
            } finally {
                ring.close();
            }
            assertEquals(null, LoopRing.current(), "a closed ring is no thread's any more");
            // Off the loop's thread the shared ring carries the request, completing on its own thread.
            ByteBuffer b = aligned();
            Requests.Done d = new Requests.Done();
            assertEquals(null, backend.start(new IoRequest().set(IoOp.READ, 0, 63L * BLOCK, BLOCK, b), engine, d));
            assertEquals(IoStatus.OK, d.get(20, java.util.concurrent.TimeUnit.SECONDS));
            assertEquals(99, b.getInt(0), "the FUA write on the loop ring reached the file");
            assertFalse(d.thread == Thread.currentThread());
        }
    }

    private static ByteBuffer fill(ByteBuffer b, int value) {
        for (int at = 0; at < BLOCK; at += 4) b.putInt(at, value);
        return b;
    }
}
