package io.iotarget.backend.nullblk;

import io.iotarget.backend.Backend;
import io.iotarget.backend.Zeroes;
import io.iotarget.model.ViewSink;

import java.nio.ByteBuffer;

/**
 * Stores nothing: writes vanish, reads return zeroes, every extent is a hole. Like null_blk,
 * it measures the cost of everything above the storage. Any thread.
 */
public final class NullBackend implements Backend {
    private final long sizeBytes;
    private final int logicalBlockSize;
    private final boolean readOnly;

    public NullBackend(long sizeBytes, int logicalBlockSize, boolean readOnly) {
        this.sizeBytes = sizeBytes;
        this.logicalBlockSize = logicalBlockSize;
        this.readOnly = readOnly;
    }

    @Override
    public String kind() {
        return "null";
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
    public void read(long offset, ByteBuffer dst) {
        Zeroes.fill(dst, dst.position(), dst.remaining());
    }

    /** Shares one buffer of zeroes. */
    @Override
    public boolean sharesReads() {
        return true;
    }

    @Override
    public boolean readViews(long offset, int length, ViewSink sink) {
        for (int n; length > 0; length -= n) {
            n = Math.min(length, Zeroes.maxSlice());
            sink.view(Zeroes.slice(n));
        }
        return true;
    }

    @Override
    public void write(long offset, ByteBuffer src, boolean fua) {
    }

    @Override
    public void flush() {
    }

    @Override
    public void discard(long offset, long length) {
    }

    @Override
    public void writeZeroes(long offset, long length, boolean mayUnmap) {
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
        if (length > 0) sink.extent(length, true, true);
    }

    @Override
    public void close() {
    }
}
