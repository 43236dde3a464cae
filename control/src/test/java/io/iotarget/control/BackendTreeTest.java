package io.iotarget.control;

import io.iotarget.control.tree.BackendTree;
import io.iotarget.engine.Engine;
import io.iotarget.engine.Lease;
import io.iotarget.engine.Volume;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;
import io.iotarget.model.IoStatus;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Backends as an operator configures them: a refused enable changes nothing. */
class BackendTreeTest {
    private final Engine engine = new Engine();
    private final BackendTree tree = new BackendTree(engine);

    @TempDir
    Path dir;

    @AfterEach
    void close() {
        engine.close();
    }

    @Test
    void shouldCreateAFileBackendAndRemoveTheFileWhenEnablingFails() throws Exception {
        tree.mkdir("a");
        tree.write("a/type", "memory");
        tree.write("a/size", "1M");
        tree.write("a/device", "259:5");
        tree.write("a/enable", "1");
        Path file = dir.resolve("b.img");
        tree.mkdir("b");
        tree.write("b/type", "file");
        tree.write("b/path", file.toString());
        tree.write("b/create", "1");
        tree.write("b/size", "4M");
        tree.write("b/device", "259:5");                  // taken by a
        assertEquals(Errno.EEXIST, assertThrows(ControlException.class, () -> tree.write("b/enable", "1")).errno());
        assertFalse(Files.exists(file), "the file create=1 made is gone again");
        tree.write("b/device", "");
        tree.write("b/enable", "1");
        assertEquals(4 << 20, Files.size(file));
        assertEquals("4194304\n", tree.read("b/size"));
        assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> tree.write("b/size", "8M")).errno(), "fixed while enabled");
        tree.write("b/enable", "0");
        tree.rmdir("b");
        assertTrue(Files.exists(file), "disabling keeps the data");
    }

    /**
     * Online resize (issue 23 item 3): a memory backend given a larger size and a file grown on
     * disk are picked up on revalidate_size, data kept; shrinking is refused while in use and
     * allowed once idle; revalidate_size is refused on a disabled backend and for 0, as nvmet does.
     */
    @Test
    void shouldResizeOnRevalidateSizeAndRefuseToShrinkWhatIsInUse() throws Exception {
        tree.mkdir("m");
        tree.write("m/type", "memory");
        tree.write("m/size", "1M");
        assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> tree.write("m/revalidate_size", "1")).errno(), "not enabled");
        tree.write("m/enable", "1");
        Device m = engine.device("m");
        Volume v = engine.open("m", null);
        Lease export = engine.bind(m, null);                                  // as an export or namespace holds it
        try {
            assertEquals(IoStatus.OK, v.write(4096, direct(1, 2, 3), 0).get());
            tree.write("m/size", "3M");
            assertEquals(1L << 20, m.sizeBytes(), "size takes effect on revalidate_size");
            assertEquals(Errno.EINVAL, assertThrows(ControlException.class, () -> tree.write("m/revalidate_size", "0")).errno());
            tree.write("m/revalidate_size", "1");
            assertEquals(3L << 20, m.sizeBytes());
            assertEquals("3145728\n", tree.read("m/size"));
            assertEquals(IoStatus.OK, v.write((3L << 20) - 4096, direct(9), 0).get(), "past the old end");
            ByteBuffer back = ByteBuffer.allocateDirect(3);
            assertEquals(IoStatus.OK, v.read(4096, back).get());
            assertEquals(direct(1, 2, 3), back.clear(), "data before the resize is kept");
            tree.write("m/size", "512K");
            assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> tree.write("m/revalidate_size", "1")).errno(), "in use");
            assertEquals(3L << 20, m.sizeBytes());
        } finally {
            export.close();
            v.close();
        }
        tree.write("m/revalidate_size", "1");
        assertEquals(512L << 10, m.sizeBytes(), "idle: it may shrink");
        assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> tree.write("m/type", "null")).errno(), "other attributes stay fixed");

        Path file = dir.resolve("f.img");
        tree.mkdir("f");
        tree.write("f/type", "file");
        tree.write("f/path", file.toString());
        tree.write("f/create", "1");
        tree.write("f/size", "1M");
        tree.write("f/enable", "1");
        assertEquals(Errno.EBUSY, assertThrows(ControlException.class, () -> tree.write("f/size", "2M")).errno(), "a file's size is the file's");
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength((2L << 20) + 100);                                  // grown on disk, not by whole blocks
        }
        tree.write("f/revalidate_size", "1");
        assertEquals(2L << 20, engine.device("f").sizeBytes(), "whole blocks of the grown file");
    }

    private static ByteBuffer direct(int... bytes) {
        ByteBuffer b = ByteBuffer.allocateDirect(bytes.length);
        for (int x : bytes) b.put((byte) x);
        return b.flip();
    }
}
