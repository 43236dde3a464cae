package io.iotarget.backend.file;

import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ViewSink;
import io.iotarget.testkit.Prerequisites;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Buffered reads answered with a page-cache range, only when every page is cached and the read is long enough. */
class FileRegionTest {
    private static final int SIZE = 4 << 20;

    @TempDir
    Path dir;

    /** Takes every region offered (when {@code accept}) and remembers it; views are not expected from files. */
    private static final class Regions implements ViewSink {
        final boolean accept;
        final List<long[]> offered = new ArrayList<>();
        FileChannel channel;

        Regions(boolean accept) {
            this.accept = accept;
        }

        @Override
        public void view(ByteBuffer bytes) {
            throw new AssertionError("a file backend shares no memory");
        }

        @Override
        public boolean region(FileChannel channel, long position, long length) {
            offered.add(new long[]{position, length});
            this.channel = channel;
            return accept;
        }
    }

    private Path file() throws IOException {
        Path f = dir.resolve("regions.img");
        byte[] bytes = new byte[SIZE];
        new Random(7).nextBytes(bytes);
        Files.write(f, bytes);
        FileIoTest.populate(f);
        return f;
    }

    private static IoStatus read(FileBackend backend, IoEngine engine, long offset, int length, ByteBuffer dst, ViewSink views) throws Exception {
        return Requests.run(backend, engine, new IoRequest().set(IoOp.READ, 0, offset, length, dst).views(views));
    }

    private static boolean cachestatAvailable(Path f) throws IOException {
        int fd = LinuxCalls.open(f, LinuxCalls.O_RDONLY);
        try {
            return LinuxCalls.cachestat(fd, 0, 4096) >= 0;
        } finally {
            LinuxCalls.close(fd);
        }
    }

    @Test
    void shouldOfferCachedRangesAsRegionsThatSendTheFileBytes() throws Exception {
        Path f = file();
        Prerequisites.require(cachestatAvailable(f), "cachestat(2) needs Linux 6.5");
        try (IoEngine engine = IoEngine.open(IoEngine.Kind.AUTO); FileBackend backend = FileBackend.open(f, 4096, false, false)) {
            Regions regions = new Regions(true);
            ByteBuffer untouched = ByteBuffer.allocate(FileBackend.REGION_MIN_BYTES + 1);
            assertEquals(IoStatus.OK, read(backend, engine, 4095, FileBackend.REGION_MIN_BYTES + 1, untouched, regions));
            assertEquals(1, regions.offered.size());
            assertEquals(4095, regions.offered.getFirst()[0]);
            assertEquals(FileBackend.REGION_MIN_BYTES + 1, regions.offered.getFirst()[1]);
            assertEquals(0, untouched.position());
            assertEquals(-1, ByteBuffer.allocate(untouched.capacity()).mismatch(untouched), "the buffer was not filled");

            // What the receiver sends with transferTo is the file's bytes.
            Path sent = dir.resolve("sent");
            try (FileChannel out = FileChannel.open(sent, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                long done = 0;
                while (done < FileBackend.REGION_MIN_BYTES + 1) done += regions.channel.transferTo(4095 + done, FileBackend.REGION_MIN_BYTES + 1 - done, out);
            }
            byte[] expected = java.util.Arrays.copyOfRange(Files.readAllBytes(f), 4095, 4095 + FileBackend.REGION_MIN_BYTES + 1);
            assertEquals(-1, ByteBuffer.wrap(expected).mismatch(ByteBuffer.wrap(Files.readAllBytes(sent))));
        }
    }

    @Test
    void shouldReadNormallyWhenShortUncachedRefusedOrDirect() throws Exception {
        FileIoTest.requireDroppablePageCache(dir);
        Path f = file();
        Prerequisites.require(cachestatAvailable(f), "cachestat(2) needs Linux 6.5");
        byte[] bytes = Files.readAllBytes(f);
        try (IoEngine engine = IoEngine.open(IoEngine.Kind.AUTO); FileBackend backend = FileBackend.open(f, 4096, false, false)) {
            Regions regions = new Regions(true);
            ByteBuffer dst = ByteBuffer.allocateDirect(FileBackend.REGION_MIN_BYTES - 1);
            assertEquals(IoStatus.OK, read(backend, engine, 0, dst.capacity(), dst, regions));
            assertEquals(0, regions.offered.size(), "below the threshold: a copy is cheaper");
            assertEquals(-1, ByteBuffer.wrap(bytes, 0, dst.capacity()).mismatch(dst));

            Regions refusing = new Regions(false);
            dst = ByteBuffer.allocateDirect(256 * 1024);
            assertEquals(IoStatus.OK, read(backend, engine, 8192, dst.capacity(), dst, refusing));
            assertEquals(1, refusing.offered.size(), "offered");
            assertEquals(-1, ByteBuffer.wrap(bytes, 8192, dst.capacity()).mismatch(dst), "refused: read into the buffer");

            // Drop [1 MiB, 2 MiB) from the page cache: a range touching it is read, not offered.
            backend.flush();
            assertEquals(0, LinuxCalls.fadvise(backend.fd(), 1 << 20, 1 << 20, LinuxCalls.POSIX_FADV_DONTNEED));
            assertEquals(0, LinuxCalls.cachestat(backend.fd(), 1 << 20, 1 << 20), "DONTNEED dropped the clean pages");
            regions.offered.clear();
            dst = ByteBuffer.allocateDirect(128 * 1024);
            assertEquals(IoStatus.OK, read(backend, engine, (1 << 20) - 64 * 1024, dst.capacity(), dst, regions));
            assertEquals(0, regions.offered.size(), "partly evicted: the sender would wait for the disk");
            assertEquals(-1, ByteBuffer.wrap(bytes, (1 << 20) - 64 * 1024, dst.capacity()).mismatch(dst));
        }
        try (IoEngine engine = IoEngine.open(IoEngine.Kind.AUTO); FileBackend direct = FileBackend.open(f, 4096, false, true)) {
            Regions regions = new Regions(true);
            ByteBuffer dst = ByteBuffer.allocateDirect(256 * 1024);
            assertEquals(IoStatus.OK, read(direct, engine, 0, dst.capacity(), dst, regions));
            assertTrue(regions.offered.isEmpty(), "O_DIRECT files bypass the page cache: no regions");
            assertEquals(-1, ByteBuffer.wrap(bytes, 0, dst.capacity()).mismatch(dst));
        }
    }
    /**
     * Issue 29, hole 4: a file cut underneath its backend. A read that reaches past the new end
     * fails with EIO (IO_ERROR) on every path — buffered through RWF_NOWAIT and the ring,
     * O_DIRECT through the ring, and on the thread engine — never zeroes, never a hang, and
     * never a region a sender would find short: a range past the end is not cached.
     */
    @Test
    void shouldFailReadsPastTheEndOfAFileCutUnderneathWithIoError() throws Exception {
        for (IoEngine.Kind kind : new IoEngine.Kind[]{IoEngine.Kind.AUTO, IoEngine.Kind.THREADS}) {
            for (boolean direct : new boolean[]{false, true}) {
                Path f = file();
                try (IoEngine engine = IoEngine.open(kind); FileBackend backend = FileBackend.open(f, 4096, false, direct)) {
                    try (FileChannel cut = FileChannel.open(f, StandardOpenOption.WRITE)) {
                        cut.truncate(SIZE / 4);
                    }
                    String where = kind + (direct ? " O_DIRECT" : " buffered");
                    Regions regions = new Regions(true);
                    ByteBuffer past = ByteBuffer.allocateDirect(2 * FileBackend.REGION_MIN_BYTES).alignedSlice(4096);
                    assertEquals(IoStatus.IO_ERROR, read(backend, engine, SIZE / 2, FileBackend.REGION_MIN_BYTES, past, direct ? null : regions), where + ": wholly past the end");
                    assertEquals(IoStatus.IO_ERROR, read(backend, engine, SIZE / 4 - 4096, FileBackend.REGION_MIN_BYTES, past, direct ? null : regions), where + ": across the end");
                    assertTrue(regions.offered.isEmpty(), where + ": no region past the end");
                    assertEquals(IoStatus.OK, read(backend, engine, 0, 4096, past.clear().limit(4096), null), where + ": inside the file");
                }
            }
        }
    }
}
