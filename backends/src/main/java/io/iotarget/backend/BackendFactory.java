package io.iotarget.backend;

import io.iotarget.backend.file.FileBackend;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.backend.nullblk.NullBackend;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Objects;

/**
 * Makes every backend the control plane configures — a backend tree's directory, an NVMe
 * namespace's {@code device_path} that names a file — from one {@link Spec}, so that front ends
 * and trees describe a backend and never construct one. Any thread; no state.
 */
public final class BackendFactory {
    private BackendFactory() {
    }

    /** The kinds of backend a configuration can ask for, by their configuration names. */
    public enum Type {
        NULL, MEMORY, FILE;

        /** {@code null}, {@code memory}, {@code file}. */
        public String configName() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * What to make.
     *
     * @param sizeBytes capacity of a null or memory backend; a file backend's is the file's
     * @param path      the file or block device of a file backend, null otherwise
     * @param blockSize 512 or 4096; for a file, 0 asks for {@link #nativeBlockSize}
     * @param direct    O_DIRECT (file backends)
     */
    public record Spec(Type type, long sizeBytes, Path path, int blockSize, boolean readOnly, boolean direct) {
        public Spec {
            Objects.requireNonNull(type, "type");
            if (type == Type.FILE) Objects.requireNonNull(path, "path");
        }

        public static Spec file(Path path, int blockSize, boolean readOnly, boolean direct) {
            return new Spec(Type.FILE, 0, path, blockSize, readOnly, direct);
        }
    }

    /**
     * Opens the backend; it belongs to the caller (or to the engine once added there).
     *
     * @throws IllegalArgumentException a memory backend larger than {@link MemoryBackend#sizeLimit}
     * @throws IOException              as {@link FileBackend#open} fails
     */
    public static Backend open(Spec spec) throws IOException {
        return switch (spec.type()) {
            case NULL -> new NullBackend(spec.sizeBytes(), spec.blockSize(), spec.readOnly());
            case MEMORY -> new MemoryBackend(spec.sizeBytes(), spec.blockSize(), spec.readOnly());
            case FILE -> FileBackend.open(spec.path(), spec.blockSize() == 0 ? nativeBlockSize(spec.path()) : spec.blockSize(),
                                          spec.readOnly(), spec.direct());
        };
    }

    /**
     * The logical block size nvmet gives a file or block device: the file system's block size
     * (at most 4096) for a regular file, the device's {@code queue/logical_block_size} for a
     * block device (512 when sysfs does not say).
     */
    public static int nativeBlockSize(Path path) throws IOException {
        if (Files.isRegularFile(path)) return Files.getFileStore(path).getBlockSize() >= 4096 ? 4096 : 512;
        long rdev = (Long) Files.getAttribute(path, "unix:rdev");
        long major = ((rdev >>> 8) & 0xfff) | ((rdev >>> 32) & ~0xfffL);
        long minor = (rdev & 0xff) | ((rdev >>> 12) & ~0xffL);
        Path sysfs = Path.of("/sys/dev/block/" + major + ":" + minor + "/queue/logical_block_size");
        try {
            return Integer.parseInt(Files.readString(sysfs).strip()) >= 4096 ? 4096 : 512;
        } catch (IOException | NumberFormatException e) {
            return 512;
        }
    }
}
