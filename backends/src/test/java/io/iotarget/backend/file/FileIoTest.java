package io.iotarget.backend.file;

import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoStatus;
import io.iotarget.testkit.Prerequisites;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.IntFunction;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * File IO through each IO engine, buffered and O_DIRECT, with every kind of buffer a caller
 * may hand in — heap, aligned direct, unaligned direct — byte-exact against the file as the
 * kernel sees it through another descriptor.
 */
class FileIoTest {
    private static final int SIZE = 4 << 20;

    @TempDir
    Path dir;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    static Stream<Arguments> engines() {
        List<Arguments> list = new ArrayList<>();
        for (IoEngine.Kind kind : List.of(IoEngine.Kind.IO_URING, IoEngine.Kind.THREADS)) {
            for (boolean direct : List.of(false, true)) list.add(Arguments.of(kind, direct));
        }
        return list.stream();
    }

    private IoEngine engine(IoEngine.Kind kind) throws IOException {
        IoEngine engine = IoEngine.open(kind);
        open.add(engine);
        return engine;
    }

    /** A file of {@link #SIZE} random bytes (seed 1) under {@code where}. */
    private Path file(Path where) throws IOException {
        Path f = Files.createTempFile(where, "fileio", ".img");
        byte[] bytes = random(SIZE, 1);
        Files.write(f, bytes);
        open.add(() -> Files.deleteIfExists(f));
        return f;
    }

    /** {@code /dev/shm}, the tmpfs the tests put files on: a prerequisite. */
    static Path shm() {
        Path shm = Path.of("/dev/shm");
        Prerequisites.require(Files.isDirectory(shm) && Files.isWritable(shm), "no writable tmpfs at /dev/shm");
        return shm;
    }

    /**
     * Tests that evict pages with posix_fadvise(DONTNEED) need a file system whose clean pages
     * can be dropped: not tmpfs, where the page cache is the file (java.io.tmpdir on a disk).
     */
    static void requireDroppablePageCache(Path dir) throws IOException {
        String type = Files.getFileStore(dir).type();
        Prerequisites.require(!type.equals("tmpfs") && !type.equals("ramfs"), dir + " is on " + type + ", whose pages cannot be dropped from the page cache");
    }

    /** Reads all of {@code f}: every page is then in the page cache, whatever happened to it since it was written. */
    static void populate(Path f) throws IOException {
        Files.readAllBytes(f);
    }

    private FileBackend backend(Path f, boolean direct) throws IOException {
        FileBackend backend = FileBackend.open(f, 4096, false, direct);
        open.add(0, backend);                 // closed after the engines are
        return backend;
    }

    private static byte[] random(int length, long seed) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static byte[] onDisk(Path f, long offset, int length) throws IOException {
        try (FileChannel ch = FileChannel.open(f, StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(length);
            while (b.hasRemaining()) ch.read(b, offset + b.position());
            return b.array();
        }
    }

    /** Buffers of every kind, each {@code length} bytes between position and limit. */
    private static List<IntFunction<ByteBuffer>> bufferKinds() {
        return List.of(
                ByteBuffer::allocate,                                   // heap
                n -> aligned(n + 16).limit(n),                          // 4096-aligned direct
                n -> aligned(n + 512).position(512).slice().limit(n),   // 512-aligned direct
                n -> aligned(n + 7).position(7).limit(7 + n));          // odd address, position 7
    }

    /** A direct buffer of at least {@code capacity} bytes starting on a 4096-byte boundary. */
    private static ByteBuffer aligned(int capacity) {
        return ByteBuffer.allocateDirect(capacity + 8192).alignedSlice(4096);
    }

    @ParameterizedTest(name = "{0} direct={1}")
    @MethodSource("engines")
    void shouldWriteAndReadEveryBufferKindByteExact(IoEngine.Kind kind, boolean direct) throws Exception {
        IoEngine engine = engine(kind);
        Path f = file(dir);
        FileBackend backend = backend(f, direct);
        // O_DIRECT takes block-aligned ranges only; buffered files take any byte range.
        long[][] ranges = direct
                ? new long[][]{{0, 4096}, {8192, 256 * 1024 + 4096}, {SIZE - 4096, 4096}, {1 << 20, 1 << 20}}
                : new long[][]{{1, 4097}, {12_345, 300_001}, {SIZE - 3, 3}, {65_535, 131_073}};
        long seed = 10;
        for (IntFunction<ByteBuffer> kindOfBuffer : bufferKinds()) {
            for (long[] range : ranges) {
                int length = (int) range[1];
                byte[] data = random(length, seed++);
                ByteBuffer src = kindOfBuffer.apply(length);
                int position = src.position();
                src.put(position, data);
                assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.WRITE, 0, range[0], length, src));
                assertEquals(position, src.position(), "position unchanged");
                assertEquals(-1, ByteBuffer.wrap(data).mismatch(ByteBuffer.wrap(onDisk(f, range[0], length))),
                        "write at " + range[0] + "+" + length + " from " + src);

                ByteBuffer dst = kindOfBuffer.apply(length);
                assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.READ, 0, range[0], length, dst));
                assertEquals(-1, ByteBuffer.wrap(data).mismatch(dst.duplicate()), "read at " + range[0] + "+" + length + " into " + dst);
            }
        }
    }

    @ParameterizedTest(name = "{0} direct={1}")
    @MethodSource("engines")
    void shouldFlushAndHonourFuaAndPreflush(IoEngine.Kind kind, boolean direct) throws Exception {
        IoEngine engine = engine(kind);
        Path f = file(dir);
        FileBackend backend = backend(f, direct);
        byte[] data = random(8192, 3);
        ByteBuffer src = aligned(8192).put(0, data).limit(8192);
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.WRITE, IoFlags.FUA | IoFlags.PREFLUSH, 4096, 8192, src));
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.FLUSH, 0, 0, 0, null));
        assertEquals(-1, ByteBuffer.wrap(data).mismatch(ByteBuffer.wrap(onDisk(f, 4096, 8192))));
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.PASSTHROUGH_OUT, 0, 65536, 8192, src.clear().limit(8192)));
        ByteBuffer back = ByteBuffer.allocate(8192);
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.PASSTHROUGH_IN, 0, 65536, 8192, back));
        assertEquals(-1, ByteBuffer.wrap(data).mismatch(back));
    }

    @ParameterizedTest(name = "{0} direct={1}")
    @MethodSource("engines")
    void shouldZeroDiscardVerifyAndCompare(IoEngine.Kind kind, boolean direct) throws Exception {
        IoEngine engine = engine(kind);
        Path f = file(dir);
        FileBackend backend = backend(f, direct);
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.DISCARD, IoFlags.FUA, 64 * 1024, 128 * 1024, null));
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.WRITE_ZEROES, IoFlags.NO_UNMAP, 1 << 20, 8192, null));
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.WRITE_ZEROES, 0, 2 << 20, 4096, null));
        byte[] zeroes = new byte[128 * 1024];
        assertEquals(-1, ByteBuffer.wrap(zeroes).mismatch(ByteBuffer.wrap(onDisk(f, 64 * 1024, 128 * 1024))));
        assertEquals(-1, ByteBuffer.wrap(zeroes, 0, 8192).mismatch(ByteBuffer.wrap(onDisk(f, 1 << 20, 8192))));
        assertEquals(-1, ByteBuffer.wrap(zeroes, 0, 4096).mismatch(ByteBuffer.wrap(onDisk(f, 2 << 20, 4096))));
        assertEquals(-1, ByteBuffer.wrap(random(SIZE, 1), 0, 4096).mismatch(ByteBuffer.wrap(onDisk(f, 0, 4096))), "outside stays");

        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.VERIFY, 0, 0, 1 << 20, null));
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.CACHE, 0, 0, 1 << 20, null));
        ByteBuffer expected = ByteBuffer.wrap(onDisk(f, 0, 65536));
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.COMPARE, 0, 0, 65536, expected));
        expected.put(100, (byte) (expected.get(100) + 1));
        assertEquals(IoStatus.COMPARE_FAILED, Requests.run(backend, engine, IoOp.COMPARE, 0, 0, 65536, expected));
    }

    /** tmpfs refuses ZERO_RANGE: the ring hands the request to the pool, which writes zeroes; punching still works. */
    @ParameterizedTest(name = "{0} direct={1}")
    @MethodSource("engines")
    void shouldFallBackToWritingZeroesWhereFallocateIsRefused(IoEngine.Kind kind, boolean direct) throws Exception {
        Path shm = shm();
        IoEngine engine = engine(kind);
        Path f = file(shm);
        FileBackend backend = backend(f, direct);
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.WRITE_ZEROES, IoFlags.NO_UNMAP, 1 << 20, 1 << 20, null));
        assertEquals(-1, ByteBuffer.allocate(1 << 20).mismatch(ByteBuffer.wrap(onDisk(f, 1 << 20, 1 << 20))));
        assertEquals(false, backend.zeroesFast(), "ZERO_RANGE was refused and is not tried again");
        assertEquals(IoStatus.NOT_FAST, Requests.run(backend, engine, IoOp.WRITE_ZEROES, IoFlags.NO_UNMAP | IoFlags.FAST_ZERO, 0, 4096, null));
        assertEquals(IoStatus.OK, Requests.run(backend, engine, IoOp.DISCARD, 0, 0, 1 << 20, null));
        boolean[] hole = {false};
        backend.mapExtents(0, 1 << 20, (length, isHole, zero) -> {
            hole[0] = isHole;
            return false;
        });
        assertEquals(true, hole[0], "the discard punched a hole");
    }

    /** A buffered read the page cache can serve completes on the submitting thread; one that would wait for the disk goes to an IO thread. */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(value = IoEngine.Kind.class, names = {"IO_URING", "THREADS"})
    void shouldServeCachedBufferedReadsOnTheSubmittingThread(IoEngine.Kind kind) throws Exception {
        requireDroppablePageCache(dir);
        IoEngine engine = engine(kind);
        Path f = file(dir);
        FileBackend backend = backend(f, false);
        populate(f);
        ByteBuffer dst = aligned(65536).limit(65536);
        Requests.Done done = new Requests.Done();
        assertEquals(IoStatus.OK, backend.start(new io.iotarget.model.IoRequest().set(IoOp.READ, 0, 8192, 65536, dst), engine, done),
                "cached: done at once, no completion to wait for");
        assertEquals(-1, ByteBuffer.wrap(random(SIZE, 1), 8192, 65536).mismatch(dst));

        backend.flush();
        // RWF_NOWAIT starts readahead for pages it does not find; a device that completes it before
        // the read looks again (a RAM-backed disk, or a submitter preempted in between, as on a
        // loaded two-core machine) lets the read finish at once, correctly. So evicted ranges are
        // tried up to 32 times: one must go to the engine.
        byte[] content = random(SIZE, 1);
        int tries = 32;
        for (int i = 0; i < tries; i++) {
            long offset = (1 + i % 3) << 20;
            assertEquals(0, LinuxCalls.fadvise(backend.fd(), 0, SIZE, LinuxCalls.POSIX_FADV_DONTNEED));
            assertTrue(LinuxCalls.cachestat(backend.fd(), offset, 65536) != 1, "DONTNEED dropped the clean pages");
            dst = aligned(65536).limit(65536);
            IoStatus atOnce = backend.start(new io.iotarget.model.IoRequest().set(IoOp.READ, 0, offset, 65536, dst), engine, done);
            if (atOnce == null) {
                assertEquals(IoStatus.OK, done.get(10, java.util.concurrent.TimeUnit.SECONDS));
                assertEquals(true, done.thread != Thread.currentThread(), "completed on an IO thread");
            } else {
                assertEquals(IoStatus.OK, atOnce, "readahead had already brought the pages in");
            }
            assertEquals(-1, ByteBuffer.wrap(content, (int) offset, 65536).mismatch(dst));
            if (atOnce == null) return;
        }
        fail("evicted: none of " + tries + " reads waited for the disk, so none went to the IO engine (" + dir + " on "
             + Files.getFileStore(dir).type() + ", kernel " + System.getProperty("os.version") + ")");
    }

    /** tmpfs is memory: plain reads and writes complete on the submitting thread, as on the memory backend; FUA still goes to the IO engine. */
    @ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.EnumSource(value = IoEngine.Kind.class, names = {"IO_URING", "THREADS"})
    void shouldRunPlainTmpfsIoOnTheSubmittingThread(IoEngine.Kind kind) throws Exception {
        Path shm = shm();
        IoEngine engine = engine(kind);
        Path f = file(shm);
        FileBackend backend = backend(f, false);
        byte[] data = random(8192, 5);
        Requests.Done done = new Requests.Done();
        ByteBuffer src = aligned(8192).put(0, data).limit(8192);
        assertEquals(IoStatus.OK, backend.start(new io.iotarget.model.IoRequest().set(IoOp.WRITE, 0, 4096, 8192, src), engine, done));
        ByteBuffer dst = aligned(8192).limit(8192);
        assertEquals(IoStatus.OK, backend.start(new io.iotarget.model.IoRequest().set(IoOp.READ, 0, 4096, 8192, dst), engine, done));
        assertEquals(-1, ByteBuffer.wrap(data).mismatch(dst));
        assertEquals(-1, ByteBuffer.wrap(data).mismatch(ByteBuffer.wrap(onDisk(f, 4096, 8192))));
        assertEquals(null, backend.start(new io.iotarget.model.IoRequest().set(IoOp.WRITE, IoFlags.FUA, 4096, 8192, src.clear().limit(8192)), engine, done),
                "FUA waits for durability: asynchronous");
        assertEquals(IoStatus.OK, done.get(10, java.util.concurrent.TimeUnit.SECONDS));
    }
}
