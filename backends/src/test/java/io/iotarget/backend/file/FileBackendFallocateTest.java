package io.iotarget.backend.file;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** fallocate(2) support differs per mode: a file system lacking one must not lose the other. */
class FileBackendFallocateTest {
    private static final int MIB = 1 << 20;

    /**
     * tmpfs punches holes but has no FALLOC_FL_ZERO_RANGE: after a write-zeroes that must keep
     * its range allocated falls back to writing zeroes, a discard still frees its range.
     */
    @Test
    void shouldStillPunchHolesWhenOnlyZeroRangeIsUnsupported() throws IOException {
        Path f = Files.createTempFile(FileIoTest.shm(), "iotarget-fallocate", ".img");
        try {
            try (FileChannel ch = FileChannel.open(f, StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.allocate(1), 8L * MIB - 1);
            }
            try (FileBackend backend = FileBackend.open(f, 4096, false, false)) {
                ByteBuffer ones = ByteBuffer.allocate(MIB);
                while (ones.hasRemaining()) ones.put((byte) 1);
                backend.write(0, ones.clear(), false);
                backend.write(4L * MIB, ones.clear(), false);

                backend.writeZeroes(0, MIB, false);
                backend.discard(4L * MIB, MIB);

                boolean[] hole = {false};
                backend.mapExtents(4L * MIB, MIB, (length, isHole, zero) -> {
                    assertEquals(MIB, length, "one extent covers the discarded range");
                    hole[0] = isHole;
                    return false;
                });
                assertTrue(hole[0], "the discard punched a hole instead of writing zeroes");
            }
        } finally {
            Files.deleteIfExists(f);
        }
    }
}
