package io.iotarget.backend.memory;

import io.iotarget.backend.Backend;
import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.ErrnoException;
import io.iotarget.backend.Zeroes;
import io.iotarget.model.ViewSink;

import com.sun.management.HotSpotDiagnosticMXBean;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * A sparse RAM disk. The device is cut into {@link #CHUNK_BYTES} chunks of off-heap memory,
 * each allocated on its first write; a chunk that was never written (or was discarded whole)
 * reads as zeroes and is reported as a hole. Any thread; chunk creation is a CAS, so two
 * writers racing on a fresh chunk agree on one.
 *
 * <p>Sparse does not mean unbounded: a memory backend may not be larger than it could ever
 * hold, {@link #sizeLimit()} — the smaller of the machine's memory and the JVM's direct-memory
 * limit. Several backends together may still promise more than there is (as sparse files
 * promise more than their disk); a write that finds no memory fails with ENOSPC.
 */
public final class MemoryBackend implements Backend {
    /*
     * Maintainers' notes. A chunk is a direct ByteBuffer used only with absolute bulk get/put,
     * which never touch its position, so concurrent readers and writers need no lock. Dropping a
     * chunk (discard of the whole chunk) races with a concurrent write to it exactly as a disk's
     * TRIM races with a write to the same blocks: either order is a valid outcome. Memory is
     * returned to the system by the GC's cleaner of the dropped buffer.
     *
     * The chunk table is a directory of segments of SEGMENT_CHUNKS slots each, every segment
     * made when the size first covers it and never replaced: growing (resize) publishes a longer
     * directory that holds the same segments, so a chunk installed in a segment while the
     * directory is copied is in the new directory too. IO reaches only offsets inside the size it
     * was checked against, and the directory is published before the larger size.
     */

    /** 64 KiB: small enough that 4 KiB random writes do not inflate memory much, large enough for few table entries. */
    public static final int CHUNK_BYTES = 64 * 1024;
    private static final int CHUNK_SHIFT = Integer.numberOfTrailingZeros(CHUNK_BYTES);
    private static final VarHandle CHUNKS = MethodHandles.arrayElementVarHandle(ByteBuffer[].class);
    /** Chunk slots per segment of the table: 256 MiB of device, a 16 KiB array. */
    private static final int SEGMENT_SHIFT = 12;
    private static final int SEGMENT_CHUNKS = 1 << SEGMENT_SHIFT;

    private final int logicalBlockSize;
    private final boolean readOnly;
    /** Written by resize only (serialized by this object's lock). */
    private volatile long sizeBytes;
    private volatile ByteBuffer[][] segments = new ByteBuffer[0][];

    /** How large a memory backend may be, and what sets that bound (for people). */
    public record SizeLimit(long bytes, String reason) {
    }

    /**
     * The largest size a memory backend may have in this process: the machine's memory
     * ({@code MemTotal} in /proc/meminfo) or the JVM's direct-memory limit
     * ({@code -XX:MaxDirectMemorySize}, by default the maximum heap), whichever is smaller.
     * Read afresh on every call; any thread.
     */
    public static SizeLimit sizeLimit() {
        long direct = maxDirectMemoryBytes();
        long machine = memTotalBytes();
        return machine <= direct
                ? new SizeLimit(machine, "the machine's memory (MemTotal in /proc/meminfo)")
                : new SizeLimit(direct, "the JVM's direct-memory limit (-XX:MaxDirectMemorySize, by default the maximum heap)");
    }

    private static long maxDirectMemoryBytes() {
        String value = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class).getVMOption("MaxDirectMemorySize").getValue();
        long bytes = Long.parseLong(value);
        return bytes > 0 ? bytes : Runtime.getRuntime().maxMemory();
    }

    /** MemTotal in bytes; Long.MAX_VALUE where there is no /proc/meminfo to say. */
    private static long memTotalBytes() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemTotal:")) return Long.parseLong(line.replaceAll("\\D", "")) * 1024;
            }
        } catch (IOException | NumberFormatException e) {
            // not Linux, or an unexpected format: the JVM's limit is the bound
        }
        return Long.MAX_VALUE;
    }

    /** @throws IllegalArgumentException if {@code sizeBytes} is above {@link #sizeLimit()} */
    public MemoryBackend(long sizeBytes, int logicalBlockSize, boolean readOnly) {
        this.logicalBlockSize = logicalBlockSize;
        this.readOnly = readOnly;
        resize(sizeBytes);
    }

    /** Its {@code size} attribute is what it holds after revalidate_size. */
    @Override
    public long revalidatedSize(long configuredBytes) {
        return configuredBytes;
    }

    /**
     * Changes the size (revalidate_size on a memory backend given a new {@code size}). Growing
     * adds zeroes; shrinking frees the chunks past the end and zeroes the tail of the last one,
     * so that growing again shows zeroes there. The caller keeps IO away from what it cuts off.
     *
     * @throws IllegalArgumentException if {@code sizeBytes} is above {@link #sizeLimit()}
     */
    @Override
    public synchronized void resize(long sizeBytes) {
        SizeLimit limit = sizeLimit();
        if (sizeBytes > limit.bytes()) {
            throw new IllegalArgumentException("a memory backend of " + sizeBytes + " bytes is larger than " + limit.reason() + ", "
                                               + limit.bytes() + " bytes");
        }
        long count = chunkCount(sizeBytes);
        if (count > Integer.MAX_VALUE - 8) throw new IllegalArgumentException("size " + sizeBytes + " too large for a memory backend");
        int segmentCount = (int) ((count + SEGMENT_CHUNKS - 1) >>> SEGMENT_SHIFT);
        ByteBuffer[][] table = segments;
        if (segmentCount > table.length) {
            ByteBuffer[][] longer = Arrays.copyOf(table, segmentCount);
            for (int i = table.length; i < segmentCount; i++) longer[i] = new ByteBuffer[SEGMENT_CHUNKS];
            segments = longer;
        }
        long before = this.sizeBytes;
        this.sizeBytes = sizeBytes;
        if (sizeBytes < before) zero(sizeBytes, chunkCount(before) * CHUNK_BYTES - sizeBytes, true);
    }

    private static long chunkCount(long sizeBytes) {
        return (sizeBytes + CHUNK_BYTES - 1) >>> CHUNK_SHIFT;
    }

    @Override
    public String kind() {
        return "memory";
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

    /** Bytes of memory currently allocated to chunks. */
    public long allocatedBytes() {
        long n = 0;
        for (int i = 0, count = (int) chunkCount(sizeBytes); i < count; i++) {
            if (chunk(i) != null) n += CHUNK_BYTES;
        }
        return n;
    }

    @Override
    public void read(long offset, ByteBuffer dst) {
        int at = dst.position();
        int remaining = dst.remaining();
        while (remaining > 0) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_BYTES - 1));
            int n = Math.min(remaining, CHUNK_BYTES - within);
            ByteBuffer chunk = chunk(index);
            if (chunk == null) {
                Zeroes.fill(dst, at, n);
            } else {
                dst.put(at, chunk, within, n);
            }
            offset += n;
            at += n;
            remaining -= n;
        }
    }

    /** Shares the chunks themselves; unwritten chunks are shared zeroes. */
    @Override
    public boolean sharesReads() {
        return true;
    }

    @Override
    public boolean processPrivate() {
        return true;
    }

    @Override
    public boolean readViews(long offset, int length, ViewSink sink) {
        while (length > 0) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_BYTES - 1));
            int n = Math.min(length, CHUNK_BYTES - within);
            ByteBuffer chunk = chunk(index);
            sink.view(chunk == null ? Zeroes.slice(n) : chunk.asReadOnlyBuffer().slice(within, n));
            offset += n;
            length -= n;
        }
        return true;
    }

    @Override
    public void write(long offset, ByteBuffer src, boolean fua) throws ErrnoException {
        int at = src.position();
        int remaining = src.remaining();
        while (remaining > 0) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_BYTES - 1));
            int n = Math.min(remaining, CHUNK_BYTES - within);
            chunkForWrite(index).put(within, src, at, n);
            offset += n;
            at += n;
            remaining -= n;
        }
    }

    @Override
    public void flush() {
    }

    @Override
    public void discard(long offset, long length) {
        zero(offset, length, true);
    }

    @Override
    public void writeZeroes(long offset, long length, boolean mayUnmap) throws ErrnoException {
        if (mayUnmap) {
            zero(offset, length, true);
            return;
        }
        // Keep the range allocated: make sure every chunk exists, then zero the covered part.
        for (long at = offset, end = offset + length; at < end; ) {
            int index = (int) (at >>> CHUNK_SHIFT);
            chunkForWrite(index);
            at = ((long) index + 1) << CHUNK_SHIFT;
        }
        zero(offset, length, false);
    }

    /** Zeroes a range; whole chunks are dropped when {@code dropWhole}, partial ones are zero-filled. */
    private void zero(long offset, long length, boolean dropWhole) {
        long end = offset + length;
        while (offset < end) {
            int index = (int) (offset >>> CHUNK_SHIFT);
            int within = (int) (offset & (CHUNK_BYTES - 1));
            int n = (int) Math.min(end - offset, CHUNK_BYTES - within);
            ByteBuffer chunk = chunk(index);
            if (chunk != null) {
                if (n == CHUNK_BYTES && dropWhole) {
                    CHUNKS.setRelease(segment(index), index & (SEGMENT_CHUNKS - 1), (ByteBuffer) null);
                } else {
                    Zeroes.fill(chunk, within, n);
                }
            }
            offset += n;
        }
    }

    @Override
    public boolean zeroesFast() {
        return true;
    }

    @Override
    public void prefetch(long offset, long length) {
    }

    @Override
    public void mapExtents(long offset, long length, ExtentSink sink) {
        long end = offset + length;
        while (offset < end) {
            boolean hole = chunk((int) (offset >>> CHUNK_SHIFT)) == null;
            long runEnd = offset;
            while (runEnd < end && (chunk((int) (runEnd >>> CHUNK_SHIFT)) == null) == hole) {
                runEnd = ((runEnd >>> CHUNK_SHIFT) + 1) << CHUNK_SHIFT;
            }
            runEnd = Math.min(runEnd, end);
            if (!sink.extent(runEnd - offset, hole, hole)) return;
            offset = runEnd;
        }
    }

    @Override
    public void close() {
        for (ByteBuffer[] segment : segments) {
            for (int i = 0; i < segment.length; i++) CHUNKS.setRelease(segment, i, (ByteBuffer) null);
        }
    }

    private ByteBuffer[] segment(int index) {
        return segments[index >>> SEGMENT_SHIFT];
    }

    private ByteBuffer chunk(int index) {
        return (ByteBuffer) CHUNKS.getAcquire(segment(index), index & (SEGMENT_CHUNKS - 1));
    }

    private ByteBuffer chunkForWrite(int index) throws ErrnoException {
        ByteBuffer chunk = chunk(index);
        if (chunk != null) return chunk;
        ByteBuffer fresh;
        try {
            fresh = ByteBuffer.allocateDirect(CHUNK_BYTES);
        } catch (OutOfMemoryError e) {
            throw new ErrnoException("memory backend: allocating a " + CHUNK_BYTES + "-byte chunk", BackendErrors.ENOSPC, e);
        }
        ByteBuffer witness = (ByteBuffer) CHUNKS.compareAndExchange(segment(index), index & (SEGMENT_CHUNKS - 1), (ByteBuffer) null, fresh);
        return witness == null ? fresh : witness;
    }
}
