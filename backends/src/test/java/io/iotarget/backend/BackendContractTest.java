package io.iotarget.backend;

import io.iotarget.backend.file.FileBackend;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.backend.nullblk.NullBackend;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What every storing backend promises: bytes round-trip, zeroing reads back zeroes, extents tell holes truthfully. */
class BackendContractTest {
    private static final long SIZE = 16L << 20;

    @TempDir
    Path dir;

    private Backend open(String kind) throws IOException {
        return switch (kind) {
            case "memory" -> new MemoryBackend(SIZE, 512, false);
            case "file", "file-direct" -> {
                Path f = dir.resolve("disk.img");
                try (FileChannel ch = FileChannel.open(f, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                    ch.truncate(0);
                    ch.write(ByteBuffer.allocate(1), SIZE - 1);
                }
                yield FileBackend.open(f, 4096, false, kind.equals("file-direct"));
            }
            default -> throw new IllegalArgumentException(kind);
        };
    }

    private static ByteBuffer random(int length, long seed) {
        byte[] b = new byte[length];
        new Random(seed).nextBytes(b);
        return ByteBuffer.wrap(b);
    }

    private static ByteBuffer read(Backend backend, long offset, int length) throws IOException {
        ByteBuffer dst = ByteBuffer.allocate(length);
        backend.read(offset, dst);
        assertEquals(0, dst.position(), "position unchanged");
        return dst;
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "file", "file-direct"})
    void shouldRoundTripBytesAcrossChunkBoundaries(String kind) throws IOException {
        try (Backend backend = open(kind)) {
            ByteBuffer data = random(256 * 1024, 1);
            backend.write(MemoryBackend.CHUNK_BYTES - 4096, data, false);
            assertEquals(0, data.position(), "position unchanged");
            assertEquals(-1, data.mismatch(read(backend, MemoryBackend.CHUNK_BYTES - 4096, 256 * 1024)));
            assertEquals(-1, ByteBuffer.allocate(4096).mismatch(read(backend, SIZE - 4096, 4096)), "never written: zeroes");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "file"})
    void shouldReadZeroesAfterDiscardAndWriteZeroes(String kind) throws IOException {
        try (Backend backend = open(kind)) {
            backend.write(0, random(1 << 20, 2), false);
            backend.discard(128 * 1024, 256 * 1024);
            backend.writeZeroes(512 * 1024, 4096, false);
            assertEquals(-1, ByteBuffer.allocate(256 * 1024).mismatch(read(backend, 128 * 1024, 256 * 1024)));
            assertEquals(-1, ByteBuffer.allocate(4096).mismatch(read(backend, 512 * 1024, 4096)));
            ByteBuffer around = read(backend, 0, 128 * 1024);
            assertEquals(-1, random(1 << 20, 2).limit(128 * 1024).mismatch(around), "the bytes before the discard stay");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "file"})
    void shouldMapHolesAndDataTruthfully(String kind) throws IOException {
        try (Backend backend = open(kind)) {
            backend.write(1 << 20, random(128 * 1024, 3), false);
            List<long[]> extents = new ArrayList<>();
            backend.mapExtents(0, 4 << 20, (length, hole, zero) -> extents.add(new long[]{length, hole ? 1 : 0, zero ? 1 : 0}));
            long total = extents.stream().mapToLong(e -> e[0]).sum();
            assertEquals(4 << 20, total, "extents cover the range exactly");
            // Wherever an extent says "zero", the bytes must be zero.
            long at = 0;
            for (long[] e : extents) {
                if (e[2] == 1) assertEquals(-1, ByteBuffer.allocate((int) e[0]).mismatch(read(backend, at, (int) e[0])), "zero extent at " + at);
                at += e[0];
            }
            assertTrue(extents.getFirst()[1] == 1, "the start was never written: a hole");
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"memory", "null"})
    void shouldShareTheSameBytesAReadWouldCopy(String kind) throws IOException {
        try (Backend backend = kind.equals("null") ? new NullBackend(SIZE, 512, false) : open(kind)) {
            if (kind.equals("memory")) backend.write(100_000, random(200_000, 5), false);
            for (long[] range : new long[][]{{0, 4096}, {99_000, 300_000}, {MemoryBackend.CHUNK_BYTES - 7, 1 << 20}}) {
                ByteBuffer joined = ByteBuffer.allocate((int) range[1]);
                assertTrue(backend.readViews(range[0], (int) range[1], v -> {
                    assertTrue(v.isReadOnly(), "shared memory is read-only");
                    joined.put(v);
                }));
                assertEquals(range[1], joined.position(), "views cover the range exactly");
                assertEquals(-1, joined.flip().mismatch(read(backend, range[0], (int) range[1])), "views hold what read copies");
            }
        }
    }

    @org.junit.jupiter.api.Test
    void shouldKeepMemorySparse() throws IOException {
        try (MemoryBackend m = new MemoryBackend(1L << 30, 512, false)) {
            m.write(1L << 29, random(4096, 4), false);
            assertEquals(MemoryBackend.CHUNK_BYTES, m.allocatedBytes());
            m.discard((1L << 29) & ~(MemoryBackend.CHUNK_BYTES - 1L), MemoryBackend.CHUNK_BYTES);
            assertEquals(0, m.allocatedBytes(), "a whole discarded chunk is freed");
            m.writeZeroes(0, MemoryBackend.CHUNK_BYTES, false);
            assertEquals(MemoryBackend.CHUNK_BYTES, m.allocatedBytes(), "write-zeroes without unmap keeps the range allocated");
        }
    }

    /** 100 TiB would need a 6.4 GB chunk table and could never be filled: refused, not an OutOfMemoryError. */
    @org.junit.jupiter.api.Test
    void shouldRefuseAMemoryBackendLargerThanItCouldEverHold() {
        MemoryBackend.SizeLimit limit = MemoryBackend.sizeLimit();
        assertTrue(limit.bytes() <= Runtime.getRuntime().maxMemory() || limit.reason().contains("MemTotal"), limit.toString());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new MemoryBackend(100L << 40, 512, false));
        assertEquals("a memory backend of " + (100L << 40) + " bytes is larger than " + limit.reason() + ", " + limit.bytes() + " bytes",
                e.getMessage());
    }
}
