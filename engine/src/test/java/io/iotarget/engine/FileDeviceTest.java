package io.iotarget.engine;

import io.iotarget.backend.file.FileBackend;
import io.iotarget.backend.file.IoEngine;
import io.iotarget.model.Clock;
import io.iotarget.model.Device;
import io.iotarget.model.IoStatus;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.Prerequisites;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** File devices through the engine on each IO engine: data, depth, removal and closing, and a full file system. */
class FileDeviceTest {
    @TempDir
    Path dir;

    private Path sparse(Path where, long size) throws IOException {
        Path f = where.resolve("disk.img");
        try (RandomAccessFile file = new RandomAccessFile(f.toFile(), "rw")) {
            file.setLength(size);
        }
        return f;
    }

    private static IoEngine.Kind expected(IoEngine.Kind asked) {
        return asked == IoEngine.Kind.THREADS ? IoEngine.Kind.THREADS : IoEngine.Kind.IO_URING;
    }

    private static ByteBuffer pattern(int length, int seed) {
        ByteBuffer b = ByteBuffer.allocateDirect(length);
        for (int i = 0; i < length; i++) b.put(i, (byte) (i * 7 + seed));
        return b;
    }

    @ParameterizedTest
    @EnumSource(IoEngine.Kind.class)
    void shouldRunFileIoOnTheChosenEngineAndLeaveNothingBehind(IoEngine.Kind kind) throws Exception {
        requireEngine(kind);
        long fdsBefore = openDescriptors();
        Path f = sparse(dir, 64 << 20);
        Engine engine = new Engine(Clock.SYSTEM, true, Engine.Settings.defaults().ioEngine(kind));
        assertEquals(expected(kind), engine.ioEngine());
        Device dev = engine.addDevice("file0", FileBackend.open(f, 4096, false, true), null, 32);
        engine.controller().mkdir("a");
        Volume v = engine.open("file0", engine.controller().group("a"));
        // 256 writes of 64 KiB at depth 32 from one thread that never waits in between.
        List<CompletableFuture<IoStatus>> writes = new ArrayList<>();
        for (int i = 0; i < 256; i++) writes.add(v.write((long) i * 65536, pattern(65536, i), 0));
        for (CompletableFuture<IoStatus> w : writes) assertEquals(IoStatus.OK, w.get(10, TimeUnit.SECONDS));
        assertEquals(IoStatus.OK, v.flush().get(10, TimeUnit.SECONDS));
        for (int i = 0; i < 256; i += 17) {
            ByteBuffer back = ByteBuffer.allocateDirect(65536);
            assertEquals(IoStatus.OK, v.read((long) i * 65536, back).get(10, TimeUnit.SECONDS));
            assertEquals(-1, pattern(65536, i).mismatch(back), "block " + i);
        }
        assertEquals(dev.number() + " rbytes=1048576 wbytes=16777216 rios=16 wios=257 dbytes=0 dios=0\n",
                engine.controller().read("a/io.stat"));

        // Remove the device with requests in flight: they finish, then its descriptor closes.
        List<CompletableFuture<IoStatus>> inFlight = new ArrayList<>();
        for (int i = 0; i < 128; i++) inFlight.add(v.read((long) i * 65536, ByteBuffer.allocateDirect(65536)));
        engine.removeDevice(dev);
        for (CompletableFuture<IoStatus> r : inFlight) {
            IoStatus s = r.get(10, TimeUnit.SECONDS);
            assertTrue(s == IoStatus.OK || s == IoStatus.ABORTED, s.toString());
        }
        assertEquals(IoStatus.ABORTED, v.read(0, ByteBuffer.allocateDirect(4096)).get(10, TimeUnit.SECONDS), "gone");
        engine.close();
        assertEquals(List.of(), ioThreads(), "no IO thread left");
        assertEquals(fdsBefore, openDescriptors(), "no ring or file descriptor left");
    }

    /**
     * A write that hits a full file system reports NO_SPACE (NBD ENOSPC, NVMe Capacity
     * Exceeded), not IO_ERROR: a 4 MiB device on a 1 MiB tmpfs mounted for the test.
     */
    @ParameterizedTest
    @EnumSource(value = IoEngine.Kind.class, names = {"IO_URING", "THREADS"})
    void shouldReportNoSpaceWhenTheFileSystemIsFull(IoEngine.Kind kind) throws Exception {
        requireEngine(kind);
        Prerequisites.require(isRoot(), "not root: mounting a small tmpfs to fill needs it");
        Path mount = Files.createDirectory(dir.resolve("small"));
        run("mount", "-t", "tmpfs", "-o", "size=1m", "iotarget-test", mount.toString());
        try {
            for (boolean direct : List.of(false, true)) {
                Path f = sparse(mount, 4 << 20);
                try (Engine engine = new Engine(Clock.SYSTEM, true, Engine.Settings.defaults().ioEngine(kind))) {
                    engine.addDevice("full", FileBackend.open(f, 4096, false, direct), null, 8);
                    Volume v = engine.open("full", null);
                    List<IoStatus> statuses = new ArrayList<>();
                    for (int i = 0; i < 64; i++) statuses.add(v.write((long) i * 65536, pattern(65536, i), 0).get(10, TimeUnit.SECONDS));
                    assertTrue(statuses.subList(0, 8).stream().allMatch(s -> s == IoStatus.OK), "the first 512 KiB fit: " + statuses);
                    assertEquals(IoStatus.NO_SPACE, statuses.getLast(), "direct=" + direct + ": " + statuses);
                    assertTrue(statuses.stream().allMatch(s -> s == IoStatus.OK || s == IoStatus.NO_SPACE), statuses.toString());
                }
                Files.delete(f);
            }
        } finally {
            run("umount", mount.toString());
        }
    }

    private static void run(String... command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.SECONDS) || p.exitValue() != 0) throw new IOException(String.join(" ", command) + ": " + out);
    }

    private static boolean isRoot() throws IOException {
        return Files.readAllLines(Path.of("/proc/self/status")).stream().anyMatch(l -> l.matches("Uid:\\s+0\\s.*"));
    }

    /** The io_uring engine needs io_uring: {@code kernel.io_uring_disabled} must be 0 (or absent, before Linux 6.6). */
    private static void requireEngine(IoEngine.Kind kind) throws IOException {
        if (kind == IoEngine.Kind.THREADS) return;
        Path knob = Path.of("/proc/sys/kernel/io_uring_disabled");
        Prerequisites.require(!Files.exists(knob) || Files.readString(knob).strip().equals("0"),
                "io_uring is disabled on this machine (sysctl kernel.io_uring_disabled=0 enables it)");
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
