package io.iotarget.backend.file;

import io.iotarget.backend.Backend;
import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.Completion;
import io.iotarget.backend.ErrnoException;
import io.iotarget.backend.IoExecutor;
import io.iotarget.backend.Zeroes;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A regular file or a block device on one raw descriptor. Options: read-only, and O_DIRECT
 * (bypass the page cache; offsets and lengths must then be aligned to the logical block size,
 * which the dispatch layer checks).
 *
 * <h2>1. Requests</h2>
 * {@link #blocking()}: requests go through {@link #start}, which never waits for the disk:
 * <ol>
 *   <li>On a buffered file a plain read or write (no FUA, no PREFLUSH, direct memory) is tried
 *   on the submitting thread with RWF_NOWAIT, which completes only when the page cache can
 *   serve it without waiting for the disk, for memory or for a lock, and otherwise fails with
 *   EAGAIN: a cached read costs a copy, not a hand-off to another thread (~1 µs of CPU against
 *   5-15 µs through the ring). On tmpfs and ramfs, which have no RWF_NOWAIT and no device to
 *   wait for, plain reads and writes always run there, as the memory backend's do (with swap,
 *   touching a swapped-out page reads it back on that thread).
 *   <li>What would wait goes on the engine's io_uring: reads, writes, flushes, discards and
 *   write-zeroes.
 *   <li>The rest runs the synchronous calls below on the engine's IO threads: verify, compare,
 *   prefetch, zeroing a file system cannot do with fallocate, buffered writes io_uring would
 *   only punt to its kernel workers (see {@code onRing}), and everything on the thread engine.
 *   Those use pread/pwrite/fdatasync on the descriptor.
 * </ol>
 * Every failure carries its errno (ENOSPC on a full file system becomes {@link IoStatus#NO_SPACE}).
 *
 * <h2>2. Buffers</h2>
 * The kernel reads and writes a request's buffer in place when it is direct memory (and, on an
 * O_DIRECT file, {@value #DIRECT_ALIGNMENT}-aligned). Anything else — heap buffers, unaligned
 * direct buffers on O_DIRECT — goes through a bounce buffer: the ring slot's own, or the
 * calling thread's for the synchronous calls; so any buffer works on any file.
 *
 * <h2>3. Zero-copy reads</h2>
 * A buffered regular file answers a read of at least {@link #REGION_MIN_BYTES} that offers
 * views with a region of the file ({@link io.iotarget.model.ViewSink#region}) instead of bytes,
 * which the front end sends with sendfile — but only when cachestat(2) says the whole range is
 * in the page cache, so the sender never waits for the disk. Without cachestat (before Linux
 * 6.5, or refused) there are no regions.
 *
 * <h2>4. Zeroing</h2>
 * Discard and write-zeroes use fallocate(2) (PUNCH_HOLE, ZERO_RANGE); a mode the file system
 * refuses once (tmpfs has no ZERO_RANGE) is not tried again, and zeroes are written instead.
 *
 * <p>Any thread.
 */
public final class FileBackend implements Backend {
    /** Reads at least this long may be answered with a region of the page cache: below it, the copy costs less than the cachestat call. */
    public static final int REGION_MIN_BYTES = 64 * 1024;
    /** Buffer alignment O_DIRECT transfers need (the largest logical block size); others are bounced. */
    static final int DIRECT_ALIGNMENT = 4096;
    /** The synchronous calls' bounce buffer per thread; longer unaligned transfers go through it in pieces. */
    private static final int BOUNCE_BYTES = 128 * 1024;
    private static final ThreadLocal<MemorySegment> BOUNCE = ThreadLocal.withInitial(
            () -> Arena.ofAuto().allocate(BOUNCE_BYTES, DIRECT_ALIGNMENT));
    /** cachestat(2) works on this kernel; cleared on the first ENOSYS (or EPERM from seccomp). */
    private static volatile boolean cachestatWorks = true;

    private final Path path;
    private final int fd;
    /** Written by resize only. */
    private volatile long sizeBytes;
    private final int logicalBlockSize;
    private final boolean readOnly;
    private final boolean direct;
    private final boolean regularFile;
    /** For regions: a second, buffered descriptor of a buffered regular file; null otherwise. */
    private final FileChannel regionChannel;
    /** A buffered file on tmpfs or ramfs: memory, no device to wait for. */
    private final boolean memoryFileSystem;
    /** fallocate's PUNCH_HOLE and ZERO_RANGE work here: file systems support them separately (tmpfs only punches). */
    private volatile boolean punchWorks = true;
    private volatile boolean zeroRangeWorks = true;
    /** Buffered reads and writes with RWF_NOWAIT work here (each is cleared by the first EOPNOTSUPP; ext4 has no buffered NOWAIT writes). */
    private volatile boolean nowaitWrites = true;
    private volatile boolean nowaitReads = true;

    private FileBackend(Path path, int fd, long sizeBytes, int logicalBlockSize, boolean readOnly, boolean direct,
                        boolean regularFile, FileChannel regionChannel, boolean memoryFileSystem) {
        this.path = path;
        this.fd = fd;
        this.sizeBytes = sizeBytes;
        this.logicalBlockSize = logicalBlockSize;
        this.readOnly = readOnly;
        this.direct = direct;
        this.regularFile = regularFile;
        this.regionChannel = regionChannel;
        this.memoryFileSystem = memoryFileSystem;
    }

    /**
     * Opens an existing file or block device; its size is what lseek(SEEK_END) reports.
     *
     * @throws ErrnoException EINVAL when the file system cannot do O_DIRECT, and as open(2) fails
     */
    public static FileBackend open(Path path, int logicalBlockSize, boolean readOnly, boolean direct) throws IOException {
        if (!Files.exists(path)) throw new NoSuchFileException(path.toString());
        boolean regular = Files.isRegularFile(path);
        int fd = LinuxCalls.open(path, (readOnly ? LinuxCalls.O_RDONLY : LinuxCalls.O_RDWR) | (direct ? LinuxCalls.O_DIRECT : 0));
        FileChannel channel = null;
        try {
            long size = LinuxCalls.lseek(fd, 0, LinuxCalls.SEEK_END);
            if (size < 0) throw new ErrnoException("lseek(" + path + ", SEEK_END)", (int) -size);
            long fsType = LinuxCalls.fileSystemType(fd);
            boolean memory = !direct && regular && (fsType == LinuxCalls.TMPFS_MAGIC || fsType == LinuxCalls.RAMFS_MAGIC);
            if (regular && !direct) channel = FileChannel.open(path, StandardOpenOption.READ);
            return new FileBackend(path, fd, size, logicalBlockSize, readOnly, direct, regular, channel, memory);
        } catch (IOException | RuntimeException e) {
            LinuxCalls.close(fd);
            throw e;
        }
    }

    public Path path() {
        return path;
    }

    public boolean direct() {
        return direct;
    }

    int fd() {
        return fd;
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

    /** What lseek(SEEK_END) says now: a file grown (or cut) on disk, a block device resized; {@code configuredBytes} does not count. */
    @Override
    public long revalidatedSize(long configuredBytes) throws IOException {
        long size = LinuxCalls.lseek(fd, 0, LinuxCalls.SEEK_END);
        if (size < 0) throw new ErrnoException("lseek(" + path + ", SEEK_END)", (int) -size);
        return size;
    }

    @Override
    public void resize(long sizeBytes) {
        this.sizeBytes = sizeBytes;
    }

    @Override
    public int logicalBlockSize() {
        return logicalBlockSize;
    }

    @Override
    public boolean readOnly() {
        return readOnly;
    }

    // ---------------------------------------------------------------- asynchronous

    @Override
    public IoStatus start(IoRequest io, IoExecutor executor, Completion done) throws IOException {
        if (io.op() == IoOp.READ && io.views() != null && region(io)) return IoStatus.OK;
        if (withoutWaiting(io)) return IoStatus.OK;
        IoRing ring = executor instanceof IoEngine engine ? engine.ring() : null;
        if (ring != null && onRing(io)) return ring.start(this, io, done);
        return Backend.super.start(io, executor, done);
    }

    /**
     * Whether the ring does this request; the rest runs on the IO pool. Buffered writes on a
     * file system without RWF_NOWAIT writes (ext4) are not the ring's: io_uring would hand each
     * to one of its kernel workers, one at a time per file, and the pool did them at twice the
     * rate for half the CPU (4 KiB at QD32: 410k against 191k IOPS, 3.1 against 8.3 µs per IO).
     */
    private boolean onRing(IoRequest io) {
        return switch (io.op()) {
            case READ, PASSTHROUGH_IN, FLUSH -> true;
            case WRITE, PASSTHROUGH_OUT -> direct || nowaitWrites;
            case DISCARD -> punchWorks;
            case WRITE_ZEROES -> (io.hasFlag(IoFlags.NO_UNMAP) ? zeroRangeWorks : punchWorks)
                    && !(io.hasFlag(IoFlags.FAST_ZERO) && !zeroesFast());
            case CACHE, VERIFY, COMPARE -> false;
        };
    }

    /**
     * Does a buffered file's plain read or write here and now if the kernel can without waiting
     * (RWF_NOWAIT); false when it would wait, or failed, or was short: the asynchronous path
     * then does the whole request (again, for a short one: the same bytes to the same place)
     * and reports any failure.
     */
    private boolean withoutWaiting(IoRequest io) {
        if (direct || (io.flags() & (IoFlags.FUA | IoFlags.PREFLUSH)) != 0) return false;
        boolean write;
        switch (io.op()) {
            case READ, PASSTHROUGH_IN -> {
                if (!nowaitReads) return false;
                write = false;
            }
            case WRITE, PASSTHROUGH_OUT -> {
                if (!nowaitWrites) return false;
                write = true;
            }
            default -> {
                return false;
            }
        }
        ByteBuffer data = io.data();
        if (!data.isDirect() || io.length() == 0) return false;
        MemorySegment buffer = MemorySegment.ofBuffer(data);
        if (memoryFileSystem) {
            long n = write ? LinuxCalls.pwrite(fd, buffer, io.offset()) : LinuxCalls.pread(fd, buffer, io.offset());
            return n == io.length();
        }
        long n = LinuxCalls.transferV2(write, fd, buffer, io.offset(), LinuxCalls.RWF_NOWAIT);
        if (n == -BackendErrors.EOPNOTSUPP) {                   // this file system cannot tell: ask it no more
            if (write) nowaitWrites = false;
            else nowaitReads = false;
        }
        return n == io.length();
    }

    /** cachestat(2) says every page of the range is in the page cache; false when it cannot tell. */
    private boolean cached(long offset, long length) {
        if (!cachestatWorks) return false;
        int cached = LinuxCalls.cachestat(fd, offset, length);
        if (cached == -BackendErrors.ENOSYS || cached == -BackendErrors.EPERM) cachestatWorks = false;
        return cached == 1;
    }

    /** Offers the read as a region when it may be one; true when the receiver took it. */
    private boolean region(IoRequest io) {
        return regionChannel != null && io.length() >= REGION_MIN_BYTES && cached(io.offset(), io.length())
                && io.views().region(regionChannel, io.offset(), io.length());
    }

    /** True when the kernel can use {@code buffer} in place: direct memory, aligned on O_DIRECT files. */
    boolean transferable(ByteBuffer buffer) {
        return buffer.isDirect() && (!direct || MemorySegment.ofBuffer(buffer).address() % DIRECT_ALIGNMENT == 0);
    }

    static int fallocateMode(boolean mayUnmap) {
        return LinuxCalls.FALLOC_FL_KEEP_SIZE | (mayUnmap ? LinuxCalls.FALLOC_FL_PUNCH_HOLE : LinuxCalls.FALLOC_FL_ZERO_RANGE);
    }

    /** The file system answered EOPNOTSUPP to this fallocate mode: write zeroes from now on. */
    void fallocateRefused(boolean mayUnmap) {
        if (mayUnmap) punchWorks = false;
        else zeroRangeWorks = false;
    }

    // ---------------------------------------------------------------- synchronous

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        int length = dst.remaining();
        if (transferable(dst)) {
            transfer(false, offset, MemorySegment.ofBuffer(dst));
            return;
        }
        MemorySegment bounce = BOUNCE.get();
        ByteBuffer from = bounce.asByteBuffer();
        for (int done = 0; done < length; ) {
            int n = Math.min(length - done, BOUNCE_BYTES);
            transfer(false, offset + done, bounce.asSlice(0, n));
            dst.put(dst.position() + done, from, 0, n);
            done += n;
        }
    }

    @Override
    public void write(long offset, ByteBuffer src, boolean fua) throws IOException {
        int length = src.remaining();
        if (transferable(src)) {
            transfer(true, offset, MemorySegment.ofBuffer(src));
        } else {
            MemorySegment bounce = BOUNCE.get();
            ByteBuffer to = bounce.asByteBuffer();
            for (int done = 0; done < length; ) {
                int n = Math.min(length - done, BOUNCE_BYTES);
                to.put(0, src, src.position() + done, n);
                transfer(true, offset + done, bounce.asSlice(0, n));
                done += n;
            }
        }
        if (fua) flush();
    }

    /** pread or pwrite of the whole segment, continuing after short transfers and EINTR. */
    private void transfer(boolean write, long offset, MemorySegment buffer) throws IOException {
        long done = 0;
        long length = buffer.byteSize();
        while (done < length) {
            MemorySegment rest = done == 0 ? buffer : buffer.asSlice(done);
            long n = write ? LinuxCalls.pwrite(fd, rest, offset + done) : LinuxCalls.pread(fd, rest, offset + done);
            if (n == -BackendErrors.EINTR) continue;
            if (n < 0) throw new ErrnoException(write ? "pwrite" : "pread", (int) -n);
            if (n == 0) throw new EOFException(path + ": " + (write ? "write made no progress" : "read past the end") + " at " + (offset + done));
            done += n;
        }
    }

    @Override
    public void flush() throws IOException {
        LinuxCalls.fdatasync(fd);
    }

    @Override
    public void discard(long offset, long length) throws IOException {
        writeZeroes(offset, length, true);
    }

    @Override
    public void writeZeroes(long offset, long length, boolean mayUnmap) throws IOException {
        if (mayUnmap ? punchWorks : zeroRangeWorks) {
            try {
                LinuxCalls.fallocate(fd, fallocateMode(mayUnmap), offset, length);
                return;
            } catch (ErrnoException e) {
                if (e.errno() != BackendErrors.EOPNOTSUPP) throw e;
                fallocateRefused(mayUnmap);
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

    /** Starts readahead of the range into the page cache (nothing to do on O_DIRECT files). */
    @Override
    public void prefetch(long offset, long length) throws IOException {
        if (direct || length == 0) return;
        int rc = LinuxCalls.fadvise(fd, offset, length, LinuxCalls.POSIX_FADV_WILLNEED);
        if (rc != 0) throw new ErrnoException("posix_fadvise(WILLNEED)", rc);
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
            if (data == -BackendErrors.ENXIO) {         // nothing but hole up to EOF
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

    /** Flushes what was written (a stopping server loses nothing a host wrote without FUA or flush), then closes. */
    @Override
    public void close() throws IOException {
        try {
            if (!readOnly) flush();
        } finally {
            LinuxCalls.close(fd);
            if (regionChannel != null) regionChannel.close();
        }
    }
}
