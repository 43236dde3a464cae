package io.iotarget.backend.factory;

import io.iotarget.backend.Backend;
import io.iotarget.backend.file.FileBackend;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.backend.nullblk.TimedNullBackend;
import io.iotarget.backend.rbd.RbdBackend;
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
        NULL, MEMORY, FILE, RBD;

        /** {@code null}, {@code memory}, {@code file}, {@code rbd}. */
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
     * @param direct       O_DIRECT (file backends)
     * @param completionNs a null backend's time per request, 0 for none (null_blk's completion_nsec)
     * @param mbps         a null backend's bandwidth in MiB/s, 0 for unlimited (null_blk's mbps)
     * @param rbd          the pool, image, cluster and key of an rbd backend, null otherwise
     */
    public record Spec(Type type, long sizeBytes, Path path, int blockSize, boolean readOnly, boolean direct, long completionNs, long mbps,
                       RbdBackend.Options rbd) {
        public Spec {
            Objects.requireNonNull(type, "type");
            if (type == Type.FILE) Objects.requireNonNull(path, "path");
            if (type == Type.RBD) Objects.requireNonNull(rbd, "rbd");
            if (type != Type.NULL && (completionNs != 0 || mbps != 0)) {
                throw new IllegalArgumentException("completion_nsec and mbps are for null backends");
            }
        }

        public static Spec file(Path path, int blockSize, boolean readOnly, boolean direct) {
            return new Spec(Type.FILE, 0, path, blockSize, readOnly, direct, 0, 0, null);
        }

        public static Spec memory(long sizeBytes, int blockSize, boolean readOnly) {
            return new Spec(Type.MEMORY, sizeBytes, null, blockSize, readOnly, false, 0, 0, null);
        }

        /** A null backend; with a {@code completionNs} or {@code mbps}, a {@link TimedNullBackend}. */
        public static Spec nullDevice(long sizeBytes, int blockSize, boolean readOnly, long completionNs, long mbps) {
            return new Spec(Type.NULL, sizeBytes, null, blockSize, readOnly, false, completionNs, mbps, null);
        }

        /** An RBD image ({@link RbdBackend}); its block size and read-only flag are the options'. */
        public static Spec rbd(RbdBackend.Options options) {
            return new Spec(Type.RBD, options.createBytes(), null, options.blockSize(), options.readOnly(), false, 0, 0, options);
        }
    }

    /**
     * Opens the backend; it belongs to the caller (or to the engine once added there).
     *
     * @throws IllegalArgumentException a memory backend larger than {@link MemoryBackend#sizeLimit}
     * @throws IOException              as {@link FileBackend#open} or {@link RbdBackend#open} fails
     */
    public static Backend open(Spec spec) throws IOException {
        return switch (spec.type()) {
            case NULL -> {
                NullBackend store = new NullBackend(spec.sizeBytes(), spec.blockSize(), spec.readOnly());
                yield spec.completionNs() == 0 && spec.mbps() == 0 ? store : new TimedNullBackend(store, spec.completionNs(), spec.mbps());
            }
            case MEMORY -> new MemoryBackend(spec.sizeBytes(), spec.blockSize(), spec.readOnly());
            case FILE -> FileBackend.open(spec.path(), spec.blockSize() == 0 ? nativeBlockSize(spec.path()) : spec.blockSize(),
                                          spec.readOnly(), spec.direct());
            case RBD -> RbdBackend.open(spec.rbd());
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
