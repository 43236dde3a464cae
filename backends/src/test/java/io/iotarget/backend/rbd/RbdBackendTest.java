package io.iotarget.backend.rbd;

import io.iotarget.backend.Backend;
import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.Completion;
import io.iotarget.backend.ErrnoException;
import io.iotarget.backend.file.IoEngine;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.testkit.CephCluster;
import io.iotarget.testkit.Prerequisites;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The rbd backend on a real one-host Ceph (testkit's CephCluster): every call against librbd, checked on the image's data. */
class RbdBackendTest {
    private static final long MiB = 1 << 20;
    private static final AtomicInteger IMAGES = new AtomicInteger();

    @TempDir
    static Path dir;
    private static CephCluster ceph;
    private static IoEngine engine;

    @BeforeAll
    static void startCluster() throws Exception {
        Prerequisites.require(RbdBackend.unavailable() == null, "librbd1 cannot be loaded: " + RbdBackend.unavailable());
        ceph = CephCluster.start(dir.resolve("ceph"));
        engine = IoEngine.open(IoEngine.Kind.THREADS);
    }

    @AfterAll
    static void stopCluster() throws IOException {
        if (engine != null) engine.close();
        if (ceph != null) ceph.close();
    }

    private static String newImage() {
        return "img" + IMAGES.incrementAndGet();
    }

    private static RbdBackend open(String image, long createBytes) throws IOException {
        return RbdBackend.open(new RbdBackend.Options("rbd", image, null, null, ceph.conf(), null, null, createBytes, 512, false));
    }

    /** Settles with the status dispatch would report, and the thread it was reported on. */
    private static final class Done extends CompletableFuture<IoStatus> implements Completion {
        volatile Thread thread;

        @Override
        public void completed(IoRequest io, IoStatus status) {
            thread = Thread.currentThread();
            if (!complete(status)) throw new AssertionError("completed twice: " + io);
        }

        @Override
        public void failed(IoRequest io, IOException cause) {
            thread = Thread.currentThread();
            if (!complete(BackendErrors.status(BackendErrors.errno(cause)))) throw new AssertionError("completed twice: " + io);
        }
    }

    private static IoStatus run(Backend backend, IoOp op, int flags, long offset, long length, ByteBuffer data) throws Exception {
        return run(backend, new IoRequest().set(op, flags, offset, length, data), new Done());
    }

    private static IoStatus run(Backend backend, IoRequest io, Done done) throws Exception {
        IoStatus now;
        try {
            now = backend.start(io, engine, done);
        } catch (IOException e) {
            return BackendErrors.status(BackendErrors.errno(e));
        }
        return now != null ? now : done.get(60, TimeUnit.SECONDS);
    }

    private static byte[] random(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private static byte[] readAsync(Backend backend, long offset, int length, boolean direct) throws Exception {
        ByteBuffer dst = direct ? ByteBuffer.allocateDirect(length) : ByteBuffer.allocate(length);
        assertEquals(IoStatus.OK, run(backend, IoOp.READ, 0, offset, length, dst));
        byte[] out = new byte[length];
        dst.get(0, out);
        return out;
    }

    /** The image's bytes as `rbd export` sees them: another client, so what landed in RADOS. */
    private static byte[] export(String image) throws Exception {
        Path file = dir.resolve(image + ".export");
        Files.deleteIfExists(file);
        ceph.rbd("export", "rbd/" + image, file.toString());
        return Files.readAllBytes(file);
    }

    @Test
    void createMakesAnImageOfTheSizeAskedForWithLayeringOnly() throws Exception {
        String image = newImage();
        try (RbdBackend b = open(image, 8 * MiB)) {
            assertEquals(8 * MiB, b.sizeBytes());
            assertEquals("rbd", b.kind());
            assertTrue(b.blocking());
        }
        String info = ceph.rbd("info", "rbd/" + image);
        assertTrue(info.contains("size 8 MiB"), info);
        assertTrue(info.contains("features: layering\n"), info);
    }

    @Test
    void blockStatusAfterCloseFailsAtOnceInsteadOfUsingTheClosedImage() throws Exception {
        RbdBackend b = open(newImage(), 4 * MiB);
        extents(b, 0, 4 * MiB);
        b.close();
        java.util.concurrent.CompletableFuture<IOException> ended = new java.util.concurrent.CompletableFuture<>();
        b.startMapExtents(0, 4 * MiB, (n, hole, zero) -> true, ended::complete);
        IOException failure = ended.get(60, TimeUnit.SECONDS);
        assertTrue(failure != null && failure.getMessage().contains("closed"), String.valueOf(failure));
    }

    @Test
    void openingAMissingImageWithoutASizeFailsWithEnoent() {
        ErrnoException e = assertThrows(ErrnoException.class, () -> open("no-such-image", 0));
        assertEquals(2, e.errno(), e.getMessage());
    }

    @Test
    void connectingToAClusterThatDoesNotAnswerFailsWithEtimedoutWithinItsTimeout() throws Exception {
        int port;
        try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        Path conf = dir.resolve("silent.conf");
        Files.writeString(conf, Files.readString(ceph.conf()).replaceAll("mon host = .*", "mon host = [v2:127.0.0.1:" + port + "]"));
        // A timeout of a few seconds instead of open(Options)'s 30 (the same setting, client_mount_timeout): the test
        // shows that it is set and honoured, and waiting out the production value cost the build 30 s.
        int timeoutSeconds = 3;
        long start = System.nanoTime();
        ErrnoException e = assertThrows(ErrnoException.class, () -> RbdBackend.open(
                new RbdBackend.Options("rbd", "any", null, null, conf, null, null, 0, 512, false), timeoutSeconds));
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
        assertEquals(110, e.errno(), e.getMessage());
        assertTrue(seconds >= timeoutSeconds - 1 && seconds < timeoutSeconds + 30, seconds + " s");
    }

    @Test
    void asynchronousWritesLandInTheImageAndReadBackOnLibrbdsThread() throws Exception {
        String image = newImage();
        byte[] heap = random(64 * 1024, 1);
        byte[] direct = random(4096, 2);
        try (RbdBackend b = open(image, 4 * MiB)) {
            assertEquals(IoStatus.OK, run(b, IoOp.WRITE, 0, 8192, heap.length, ByteBuffer.wrap(heap)));
            ByteBuffer d = ByteBuffer.allocateDirect(direct.length).put(direct).flip();
            Done done = new Done();
            assertEquals(IoStatus.OK, run(b, new IoRequest().set(IoOp.WRITE, IoFlags.FUA, 3 * MiB, direct.length, d), done));
            // The callback ran on librbd's thread, not on the engine's IO threads and not on this one.
            assertNotSame(Thread.currentThread(), done.thread);
            assertFalse(done.thread.getName().startsWith("iotarget-io"), done.thread.getName());
            assertEquals(IoStatus.OK, run(b, IoOp.FLUSH, 0, 0, 0, null));
            assertArrayEquals(heap, readAsync(b, 8192, heap.length, true));
            assertArrayEquals(direct, readAsync(b, 3 * MiB, direct.length, false));
        }
        byte[] exported = export(image);
        assertEquals(4 * MiB, exported.length);
        assertArrayEquals(heap, java.util.Arrays.copyOfRange(exported, 8192, 8192 + heap.length));
        assertArrayEquals(direct, java.util.Arrays.copyOfRange(exported, (int) (3 * MiB), (int) (3 * MiB) + direct.length));
        assertTrue(allZero(exported, 0, 8192));
    }

    @Test
    void manyRequestsInFlightAllCompleteWithTheirOwnData() throws Exception {
        String image = newImage();
        int count = 64;
        try (RbdBackend b = open(image, 4 * MiB)) {
            // Odd blocks through heap buffers, whose native copies librbd may finish with before its aio call returned here.
            for (int round = 0; round < 4; round++) {
                List<Done> writes = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    Done done = new Done();
                    ByteBuffer data = (i % 2 == 0 ? ByteBuffer.allocateDirect(4096) : ByteBuffer.allocate(4096)).put(random(4096, round * 1000 + i)).flip();
                    assertEquals(null, b.start(new IoRequest().set(IoOp.WRITE, 0, i * 4096L, 4096, data), engine, done));
                    writes.add(done);
                }
                for (Done d : writes) assertEquals(IoStatus.OK, d.get(60, TimeUnit.SECONDS));
                List<Done> reads = new ArrayList<>();
                List<ByteBuffer> buffers = new ArrayList<>();
                for (int i = 0; i < count; i++) {
                    Done done = new Done();
                    ByteBuffer dst = i % 2 == 0 ? ByteBuffer.allocateDirect(4096) : ByteBuffer.allocate(4096);
                    assertEquals(null, b.start(new IoRequest().set(IoOp.READ, 0, i * 4096L, 4096, dst), engine, done));
                    reads.add(done);
                    buffers.add(dst);
                }
                for (int i = 0; i < count; i++) {
                    assertEquals(IoStatus.OK, reads.get(i).get(60, TimeUnit.SECONDS));
                    byte[] got = new byte[4096];
                    buffers.get(i).get(0, got);
                    assertArrayEquals(random(4096, round * 1000 + i), got, "round " + round + " block " + i);
                }
            }
        }
    }

    /**
     * librbd dispatches on the caller's thread (an NBD loop's): with the cluster paused, more
     * writes than the objecter's default budget (100 MiB) are all started without the caller
     * waiting for one to end; they complete once the cluster resumes.
     */
    @Test
    void startDoesNotWaitForTheObjectersBudgetWhenTheClusterHoldsTheWrites() throws Exception {
        String image = newImage();
        int count = 30;                                 // 30 x 4 MiB in flight: 120 MiB
        byte[] data = random((int) (4 * MiB), 13);
        ByteBuffer src = ByteBuffer.allocateDirect(data.length).put(data).flip();
        List<Done> writes = new ArrayList<>();
        try (RbdBackend b = open(image, 4 * MiB)) {
            ceph.ceph("osd", "pause");
            CompletableFuture<Void> started;
            try {
                b.awaitLatestOsdMap();                  // from here on the client holds every write, its budget taken
                started = CompletableFuture.runAsync(() -> {
                    for (int i = 0; i < count; i++) {
                        Done done = new Done();
                        synchronized (writes) {
                            writes.add(done);
                        }
                        try {
                            assertEquals(null, b.start(new IoRequest().set(IoOp.WRITE, 0, 0, data.length, src.duplicate()), engine, done));
                        } catch (IOException e) {
                            throw new java.io.UncheckedIOException(e);
                        }
                    }
                });
                started.get(60, TimeUnit.SECONDS);      // with the budget on, the 26th start would wait for the cluster
            } finally {
                ceph.ceph("osd", "unpause");
            }
            synchronized (writes) {
                assertEquals(count, writes.size());
                for (Done d : writes) assertEquals(IoStatus.OK, d.get(60, TimeUnit.SECONDS));
            }
            assertArrayEquals(data, readAsync(b, 0, data.length, true));
        }
    }

    @Test
    void discardAndWriteZeroesReadAsZeroesAndBlockStatusSeesWhatIsAllocated() throws Exception {
        String image = newImage();
        try (RbdBackend b = open(image, 16 * MiB)) {
            byte[] data = random((int) (2 * MiB), 3);
            assertEquals(IoStatus.OK, run(b, IoOp.WRITE, 0, 4 * MiB, data.length, ByteBuffer.wrap(data)));
            assertEquals(IoStatus.OK, run(b, IoOp.WRITE, 0, 12 * MiB, data.length, ByteBuffer.wrap(data)));
            List<long[]> extents = extents(b, 0, 16 * MiB);
            assertExtent(extents, 0, 0, 4 * MiB, true);
            assertExtent(extents, 1, 4 * MiB, 2 * MiB, false);
            assertExtent(extents, 2, 6 * MiB, 6 * MiB, true);
            assertExtent(extents, 3, 12 * MiB, 2 * MiB, false);
            assertExtent(extents, 4, 14 * MiB, 2 * MiB, true);
            assertEquals(5, extents.size());

            assertEquals(IoStatus.OK, run(b, IoOp.DISCARD, 0, 4 * MiB, 1 * MiB, null));
            assertEquals(IoStatus.OK, run(b, IoOp.WRITE_ZEROES, 0, 12 * MiB + 4096, 8192, null));
            assertEquals(IoStatus.OK, run(b, IoOp.WRITE_ZEROES, IoFlags.NO_UNMAP, 13 * MiB, 4096, null));
            assertEquals(IoStatus.OK, run(b, IoOp.WRITE_ZEROES, IoFlags.FUA, 13 * MiB + 8192, 4096, null));
            byte[] first = readAsync(b, 4 * MiB, (int) (2 * MiB), true);
            assertTrue(allZero(first, 0, (int) MiB));
            assertArrayEquals(java.util.Arrays.copyOfRange(data, (int) MiB, data.length), java.util.Arrays.copyOfRange(first, (int) MiB, first.length));
            byte[] second = readAsync(b, 12 * MiB, (int) (2 * MiB), false);
            assertTrue(allZero(second, 4096, 4096 + 8192));
            assertTrue(allZero(second, (int) MiB, (int) MiB + 4096));
            assertTrue(allZero(second, (int) MiB + 8192, (int) MiB + 12288));
            assertArrayEquals(java.util.Arrays.copyOfRange(data, 0, 4096), java.util.Arrays.copyOfRange(second, 0, 4096));
            // A discard inside an object zeroes it (above) and may leave it allocated; one of a whole object removes it: a hole.
            assertEquals(IoStatus.OK, run(b, IoOp.DISCARD, 0, 4 * MiB, 4 * MiB, null));
            List<long[]> after = extents(b, 0, 16 * MiB);
            assertExtent(after, 0, 0, 12 * MiB, true);
            assertExtent(after, 1, 12 * MiB, 2 * MiB, false);
            assertTrue(allZero(readAsync(b, 4 * MiB, (int) (4 * MiB), true), 0, (int) (4 * MiB)));
        }
    }

    /**
     * {offset, length, hole} of every extent the map reports, through startMapExtents as an NBD
     * loop calls it: the extents arrive and the end is heard on one of the image's own threads.
     */
    private static List<long[]> extents(Backend b, long offset, long length) throws Exception {
        List<long[]> out = new ArrayList<>();
        long[] at = {offset};
        java.util.concurrent.CompletableFuture<String> ended = new java.util.concurrent.CompletableFuture<>();
        b.startMapExtents(offset, length, (n, hole, zero) -> {
            assertEquals(hole, zero);
            if (!out.isEmpty() && (out.getLast()[2] == 1) == hole) out.getLast()[1] += n;
            else out.add(new long[] {at[0], n, hole ? 1 : 0});
            at[0] += n;
            return true;
        }, failure -> {
            if (failure != null) ended.completeExceptionally(failure);
            else ended.complete(Thread.currentThread().getName());
        });
        assertTrue(ended.get(60, java.util.concurrent.TimeUnit.SECONDS).startsWith("rbd-map "), "mapped on the image's own thread, not the caller's");
        assertEquals(offset + length, at[0], describe(out));
        return out;
    }

    private static void assertExtent(List<long[]> extents, int i, long offset, long length, boolean hole) {
        assertTrue(i < extents.size(), describe(extents));
        long[] e = extents.get(i);
        assertEquals(offset, e[0], describe(extents));
        assertEquals(length, e[1], describe(extents));
        assertEquals(hole, e[2] == 1, describe(extents));
    }

    private static String describe(List<long[]> extents) {
        StringBuilder b = new StringBuilder();
        for (long[] e : extents) b.append(e[0]).append('+').append(e[1]).append(e[2] == 1 ? " hole; " : " data; ");
        return b.toString();
    }

    private static boolean allZero(byte[] b, int from, int to) {
        for (int i = from; i < to; i++) if (b[i] != 0) return false;
        return true;
    }

    @Test
    void revalidatedSizeSeesAResizeMadeElsewhereAndResizeImageGrowsIt() throws Exception {
        String image = newImage();
        try (RbdBackend b = open(image, 4 * MiB)) {
            ceph.rbd("resize", "--size", "8M", "rbd/" + image);
            assertEquals(8 * MiB, b.revalidatedSize(4 * MiB));
            assertEquals(4 * MiB, b.sizeBytes(), "the engine takes the new size; until then IO sees the old one");
            b.resize(8 * MiB);
            assertEquals(8 * MiB, b.sizeBytes());
            b.resizeImage(12 * MiB);
            assertEquals(12 * MiB, b.revalidatedSize(8 * MiB));
            byte[] tail = random(4096, 4);
            assertEquals(IoStatus.OK, run(b, IoOp.WRITE, 0, 12 * MiB - 4096, 4096, ByteBuffer.wrap(tail)));
            assertArrayEquals(tail, readAsync(b, 12 * MiB - 4096, 4096, true));
        }
        assertTrue(ceph.rbd("info", "rbd/" + image).contains("size 12 MiB"));
    }

    @Test
    void aSnapshotIsReadOnlyAndKeepsItsData() throws Exception {
        String image = newImage();
        byte[] before = random(4096, 5);
        try (RbdBackend b = open(image, 4 * MiB)) {
            assertEquals(IoStatus.OK, run(b, IoOp.WRITE, 0, 0, 4096, ByteBuffer.wrap(before)));
        }
        ceph.rbd("snap", "create", "rbd/" + image + "@s1");
        try (RbdBackend head = open(image, 0);
             RbdBackend snap = RbdBackend.open(new RbdBackend.Options("rbd", image, null, "s1", ceph.conf(), "admin", ceph.adminKeyring(),
                                                                      0, 4096, false))) {
            assertTrue(snap.readOnly());
            assertFalse(head.readOnly());
            assertEquals(IoStatus.OK, run(head, IoOp.WRITE, 0, 0, 4096, ByteBuffer.wrap(random(4096, 6))));
            assertArrayEquals(before, readAsync(snap, 0, 4096, true));
            assertEquals(IoStatus.READ_ONLY, run(snap, IoOp.WRITE, 0, 0, 4096, ByteBuffer.wrap(random(4096, 7))));
            assertEquals(IoStatus.READ_ONLY, run(snap, IoOp.DISCARD, 0, 0, 4096, null));
            assertEquals(IoStatus.READ_ONLY, run(snap, IoOp.WRITE_ZEROES, 0, 0, 4096, null));
            ErrnoException e = assertThrows(ErrnoException.class, () -> snap.write(0, ByteBuffer.wrap(random(4096, 8)), false));
            assertEquals(BackendErrors.EROFS, e.errno());
            assertEquals(IoStatus.OK, run(snap, IoOp.FLUSH, 0, 0, 0, null));
            assertArrayEquals(before, readAsync(snap, 0, 4096, false));
        }
    }

    @Test
    void aBlocklistedClientsWritesFailAndDoNotReachTheImage() throws Exception {
        String image = newImage();
        byte[] first = random(4096, 9);
        try (RbdBackend fenced = open(image, 4 * MiB); RbdBackend survivor = open(image, 0)) {
            assertEquals(IoStatus.OK, run(fenced, IoOp.WRITE, 0, 0, 4096, ByteBuffer.wrap(first)));
            java.util.concurrent.atomic.AtomicInteger told = new java.util.concurrent.atomic.AtomicInteger();
            fenced.onBlocklisted(told::incrementAndGet);
            String address = fenced.clientAddress();
            assertNotEquals(address, survivor.clientAddress());
            survivor.blocklist(address);
            assertTrue(ceph.ceph("osd", "blocklist", "ls").contains(address.replaceAll("^\\[?(v2:)?|[,\\]].*$", "")),
                       ceph.ceph("osd", "blocklist", "ls") + " / " + address);
            IoStatus late = run(fenced, IoOp.WRITE, 0, 0, 4096, ByteBuffer.wrap(random(4096, 10)));
            assertEquals(IoStatus.IO_ERROR, late, "EBLOCKLISTED is an IO error to the initiator");
            assertEquals(IoStatus.IO_ERROR, run(fenced, IoOp.WRITE, 0, 4096, 4096, ByteBuffer.wrap(random(4096, 12))));
            assertEquals(1, told.get(), "the backend tells of its blocklisting once");
            IOException sync = assertThrows(IOException.class, () -> fenced.write(8192, ByteBuffer.wrap(random(4096, 11)), false));
            assertEquals(IoStatus.IO_ERROR, BackendErrors.status(BackendErrors.errno(sync)), sync.getMessage());
            assertArrayEquals(first, readAsync(survivor, 0, 4096, true));
            assertTrue(allZero(readAsync(survivor, 8192, 4096, true), 0, 4096));
        }
        byte[] exported = export(image);
        assertArrayEquals(first, java.util.Arrays.copyOfRange(exported, 0, 4096));
        assertTrue(allZero(exported, 8192, 8192 + 4096));
    }
}
