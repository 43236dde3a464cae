package io.iotarget.backend;

import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.ViewSink;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A block store addressed by byte offset. Every method may be called from any thread, many at
 * once; ranges are checked by the caller (they always lie inside {@link #sizeBytes()}), and
 * concurrent operations on overlapping ranges have no defined order, as on a disk.
 *
 * <p>Two ways in, chosen by {@link #blocking()}: the dispatch layer runs a request of a
 * non-blocking backend (memory, null) on the submitting thread through the synchronous calls
 * ({@link RequestRunner}), and hands a request of a blocking one to {@link #start}, which
 * must return at once and report the end on an IO thread.
 *
 * <p>Failures are {@link IOException}s, {@link ErrnoException}s where the OS gave an errno;
 * {@link BackendErrors} turns them into the request's {@link IoStatus}.
 */
public interface Backend extends AutoCloseable {
    /** "null", "memory", "file" or "rbd": the config's backend type. */
    String kind();

    long sizeBytes();

    /**
     * nvmet's {@code revalidate_size}, first half: the capacity the backend would have now,
     * changing nothing — a file's or block device's size on disk, a memory backend's
     * {@code configuredBytes} (its {@code size} attribute); others keep {@link #sizeBytes()}.
     * Not on the IO path.
     */
    default long revalidatedSize(long configuredBytes) throws IOException {
        return sizeBytes();
    }

    /** Second half, once the engine took {@code sizeBytes} (from {@link #revalidatedSize}): IO may reach it from now on. */
    default void resize(long sizeBytes) {
    }

    /** 512 or 4096. */
    int logicalBlockSize();

    boolean readOnly();

    /** True when offsets, lengths and buffers must be aligned to {@link #logicalBlockSize()} (O_DIRECT). */
    default boolean needsAlignedIo() {
        return false;
    }

    /**
     * True when the synchronous calls may block for a device's latency: requests then go
     * through {@link #start} and never run on the submitting thread.
     */
    default boolean blocking() {
        return false;
    }

    /**
     * Starts a request of a {@linkplain #blocking() blocking} backend without waiting for it.
     * Returns null when the request is under way: {@code done} then hears its end once, later,
     * on an IO thread. Returns a status (and {@code done} is never called) when it ended at
     * once on this thread, and throws when it failed at once.
     *
     * <p>This default runs {@link RequestRunner} on the executor's IO threads, one thread per
     * request in flight; the file backend overrides it with io_uring.
     */
    default IoStatus start(IoRequest io, IoExecutor executor, Completion done) throws IOException {
        return executor.startOnThreads(this, io, done);
    }

    /** Fills {@code dst} from its position to its limit with the bytes at {@code offset}; position unchanged. */
    void read(long offset, ByteBuffer dst) throws IOException;

    /**
     * Zero-copy read: hands {@code sink} read-only buffers that share the backend's own memory
     * and together hold {@code [offset, offset + length)}; false (and nothing handed) when
     * this backend cannot share, and the caller reads into a buffer instead.
     */
    default boolean readViews(long offset, int length, ViewSink sink) {
        return false;
    }

    /**
     * True when {@link #readViews} always succeeds, so a read that offers views needs no buffer
     * of its own (memory and null backends).
     */
    default boolean sharesReads() {
        return false;
    }

    /**
     * True when the data lives in this process alone (memory): another process that opens "the
     * same" backend sees none of its writes, so no other node may serve it as the same store.
     */
    default boolean processPrivate() {
        return false;
    }

    /** Stores the bytes of {@code src} between position and limit at {@code offset}; position unchanged. */
    void write(long offset, ByteBuffer src, boolean fua) throws IOException;

    /** Makes every completed write durable. */
    void flush() throws IOException;

    /** The range's contents may be dropped; reads of it return zeroes afterwards. */
    void discard(long offset, long length) throws IOException;

    /**
     * Makes the range read as zeroes. With {@code mayUnmap} the backend may deallocate it
     * (punch a hole); without, the range stays allocated.
     */
    void writeZeroes(long offset, long length, boolean mayUnmap) throws IOException;

    /** True when {@link #writeZeroes} costs about the same whatever the length (NBD FAST_ZERO). */
    boolean zeroesFast();

    /** Hint: the range will be read soon. */
    void prefetch(long offset, long length) throws IOException;

    /**
     * Describes {@code [offset, offset + length)} as consecutive extents, in order, until the
     * range is covered or the sink returns false. A backend that cannot tell reports one data
     * extent: claiming "allocated" is always allowed, claiming "zero" only when true.
     */
    void mapExtents(long offset, long length, ExtentSink sink) throws IOException;

    /**
     * {@link #mapExtents} for a caller that must not wait (an event loop): the sink hears the
     * extents, then {@code done} hears the end — null, or the failure — once, on this thread or
     * another. This default maps here and now, which suits a map that is local (a chunk table,
     * lseek); a backend whose map is a network round trip runs it on a thread of its own.
     */
    default void startMapExtents(long offset, long length, ExtentSink sink, java.util.function.Consumer<IOException> done) {
        IOException failure = null;
        try {
            mapExtents(offset, length, sink);
        } catch (IOException e) {
            failure = e;
        } catch (RuntimeException e) {
            failure = new IOException(e);
        }
        done.accept(failure);
    }

    /** Receives the extents of {@link #mapExtents}. */
    @FunctionalInterface
    interface ExtentSink {
        /**
         * @param length bytes in this extent, &gt; 0
         * @param hole   not allocated (reads as zeroes; a write may need new space)
         * @param zero   reads as zeroes
         * @return false to stop early
         */
        boolean extent(long length, boolean hole, boolean zero);
    }

    @Override
    void close() throws IOException;
}
