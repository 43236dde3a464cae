package io.iotarget.backend;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A regular file or a block device, read and written with positional IO. Options:
 * read-only, and O_DIRECT (bypass the page cache; offsets, lengths and buffers must then be
 * aligned to the logical block size, and unaligned buffers go through a per-thread bounce
 * buffer). Discard and write-zeroes use fallocate(2) and fall back to writing zeroes where the
 * file system or device refuses. Any thread.
 */
public final class FileBackend implements Backend {
    private static final int BOUNCE_ALIGNMENT = 4096;
    /** com.sun.nio.file.ExtendedOpenOption.DIRECT (jdk.unsupported), looked up so the build needs no internal API. */
    private static final OpenOption O_DIRECT = directOption();
    private static final ThreadLocal<ByteBuffer> BOUNCE = new ThreadLocal<>();

    private final Path path;
    private final FileChannel channel;
    private final int fd;
    private final long sizeBytes;
    private final int logicalBlockSize;
    private final boolean readOnly;
    private final boolean direct;
    private final boolean regularFile;
    /** fallocate's PUNCH_HOLE and ZERO_RANGE work here: file systems support them separately (tmpfs only punches). */
    private volatile boolean punchWorks = true;
    private volatile boolean zeroRangeWorks = true;

    private FileBackend(Path path, FileChannel channel, int fd, long sizeBytes, int logicalBlockSize,
                        boolean readOnly, boolean direct, boolean regularFile) {
        this.path = path;
        this.channel = channel;
        this.fd = fd;
        this.sizeBytes = sizeBytes;
        this.logicalBlockSize = logicalBlockSize;
        this.readOnly = readOnly;
        this.direct = direct;
        this.regularFile = regularFile;
    }

    /**
     * Opens an existing file or block device. A regular file's size is its length; a block
     * device's is what lseek(SEEK_END) reports.
     */
    public static FileBackend open(Path path, int logicalBlockSize, boolean readOnly, boolean direct) throws IOException {
        if (!Files.exists(path)) throw new java.nio.file.NoSuchFileException(path.toString());
        boolean regular = Files.isRegularFile(path);
        List<OpenOption> options = new ArrayList<>(List.of(java.nio.file.StandardOpenOption.READ));
        if (!readOnly) options.add(java.nio.file.StandardOpenOption.WRITE);
        if (direct) options.add(O_DIRECT);
        FileChannel channel = FileChannel.open(path, options.toArray(OpenOption[]::new));
        int fd;
        try {
            fd = LinuxCalls.open(path, readOnly ? LinuxCalls.O_RDONLY : LinuxCalls.O_RDWR);
        } catch (IOException e) {
            channel.close();
            throw e;
        }
        long size = regular ? channel.size() : LinuxCalls.lseek(fd, 0, LinuxCalls.SEEK_END);
        if (size < 0) {
            LinuxCalls.close(fd);
            channel.close();
            throw new IOException("cannot size " + path + ": errno " + -size);
        }
        return new FileBackend(path, channel, fd, size, logicalBlockSize, readOnly, direct, regular);
    }

    private static OpenOption directOption() {
        try {
            return (OpenOption) Class.forName("com.sun.nio.file.ExtendedOpenOption").getField("DIRECT").get(null);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    public Path path() {
        return path;
    }

    public boolean direct() {
        return direct;
    }

    @Override
    public String kind() {
        return "file";
    }

    @Override
    public boolean needsAlignedIo() {
        return direct;
    }

    @Override
    public boolean blocking() {
        return true;
    }

    @Override
    public long sizeBytes() {
        return sizeBytes;
    }

    @Override
    public int logicalBlockSize() {
        return logicalBlockSize;
    }

    @Override
    public boolean readOnly() {
        return readOnly;
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        int position = dst.position();
        int limit = dst.limit();
        if (direct && !aligned(dst)) {
            ByteBuffer bounce = bounce(dst.remaining());
            readFully(offset, bounce);
            dst.put(position, bounce, 0, limit - position);
            return;
        }
        try {
            readFully(offset, dst);
        } finally {
            dst.limit(limit).position(position);
        }
    }

    private void readFully(long offset, ByteBuffer dst) throws IOException {
        while (dst.hasRemaining()) {
            int n = channel.read(dst, offset);
            if (n < 0) throw new EOFException(path + ": read past end at " + offset);
            offset += n;
        }
    }

    @Override
    public void write(long offset, ByteBuffer src, boolean fua) throws IOException {
        int position = src.position();
        int limit = src.limit();
        ByteBuffer from = src;
        if (direct && !aligned(src)) {
            from = bounce(src.remaining());
            from.put(0, src, position, limit - position);
        }
        try {
            while (from.hasRemaining()) offset += channel.write(from, offset);
        } finally {
            src.limit(limit).position(position);
        }
        if (fua) channel.force(false);
    }

    @Override
    public void flush() throws IOException {
        channel.force(false);
    }

    @Override
    public void discard(long offset, long length) throws IOException {
        writeZeroes(offset, length, true);
    }

    @Override
    public void writeZeroes(long offset, long length, boolean mayUnmap) throws IOException {
        if (mayUnmap ? punchWorks : zeroRangeWorks) {
            int mode = LinuxCalls.FALLOC_FL_KEEP_SIZE | (mayUnmap ? LinuxCalls.FALLOC_FL_PUNCH_HOLE : LinuxCalls.FALLOC_FL_ZERO_RANGE);
            try {
                LinuxCalls.fallocate(fd, mode, offset, length);
                return;
            } catch (LinuxCalls.ErrnoException e) {
                if (e.errno != LinuxCalls.EOPNOTSUPP) throw e;
                if (mayUnmap) punchWorks = false;
                else zeroRangeWorks = false;
            }
        }
        // The file system cannot punch or zero ranges: write the zeroes.
        long end = offset + length;
        while (offset < end) {
            int n = (int) Math.min(end - offset, Zeroes.maxSlice());
            write(offset, Zeroes.slice(n), false);
            offset += n;
        }
    }

    @Override
    public boolean zeroesFast() {
        return punchWorks && zeroRangeWorks;
    }

    @Override
    public void prefetch(long offset, long length) {
    }

    @Override
    public void mapExtents(long offset, long length, ExtentSink sink) {
        long end = offset + length;
        if (!regularFile) {
            sink.extent(length, false, false);
            return;
        }
        while (offset < end) {
            long data = LinuxCalls.lseek(fd, offset, LinuxCalls.SEEK_DATA);
            if (data == -LinuxCalls.ENXIO) {            // nothing but hole up to EOF
                sink.extent(end - offset, true, true);
                return;
            }
            if (data < 0) {                             // SEEK_DATA unsupported: call it all data
                sink.extent(end - offset, false, false);
                return;
            }
            if (data > offset) {
                long n = Math.min(data, end) - offset;
                if (!sink.extent(n, true, true)) return;
                offset += n;
                continue;
            }
            long hole = LinuxCalls.lseek(fd, offset, LinuxCalls.SEEK_HOLE);
            long n = (hole < 0 ? end : Math.min(hole, end)) - offset;
            if (n <= 0) n = end - offset;
            if (!sink.extent(n, false, false)) return;
            offset += n;
        }
    }

    @Override
    public void close() throws IOException {
        LinuxCalls.close(fd);
        channel.close();
    }

    private static boolean aligned(ByteBuffer b) {
        return b.isDirect() && b.alignmentOffset(b.position(), BOUNCE_ALIGNMENT) == 0;
    }

    /** A per-thread aligned buffer with position 0 and limit {@code length}. */
    private static ByteBuffer bounce(int length) {
        ByteBuffer b = BOUNCE.get();
        if (b == null || b.capacity() < length) {
            int capacity = Math.max(length, 128 * 1024);
            b = ByteBuffer.allocateDirect(capacity + BOUNCE_ALIGNMENT).alignedSlice(BOUNCE_ALIGNMENT);
            BOUNCE.set(b);
        }
        return b.clear().limit(length);
    }
}
