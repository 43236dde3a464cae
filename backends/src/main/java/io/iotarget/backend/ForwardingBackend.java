package io.iotarget.backend;

import io.iotarget.model.ViewSink;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * A backend that passes every call to another one: the base of backends that add something
 * around a store (pacing, counting, a gate in tests) and override only the calls they change.
 * Thread-safety is the wrapped backend's.
 */
public abstract class ForwardingBackend implements Backend {
    protected final Backend inner;

    protected ForwardingBackend(Backend inner) {
        this.inner = inner;
    }

    @Override
    public String kind() {
        return inner.kind();
    }

    @Override
    public long sizeBytes() {
        return inner.sizeBytes();
    }

    @Override
    public int logicalBlockSize() {
        return inner.logicalBlockSize();
    }

    @Override
    public boolean readOnly() {
        return inner.readOnly();
    }

    @Override
    public boolean needsAlignedIo() {
        return inner.needsAlignedIo();
    }

    @Override
    public boolean blocking() {
        return inner.blocking();
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        inner.read(offset, dst);
    }

    @Override
    public boolean readViews(long offset, int length, ViewSink sink) {
        return inner.readViews(offset, length, sink);
    }

    @Override
    public boolean sharesReads() {
        return inner.sharesReads();
    }

    @Override
    public boolean processPrivate() {
        return inner.processPrivate();
    }

    @Override
    public void write(long offset, ByteBuffer src, boolean fua) throws IOException {
        inner.write(offset, src, fua);
    }

    @Override
    public void flush() throws IOException {
        inner.flush();
    }

    @Override
    public void discard(long offset, long length) throws IOException {
        inner.discard(offset, length);
    }

    @Override
    public void writeZeroes(long offset, long length, boolean mayUnmap) throws IOException {
        inner.writeZeroes(offset, length, mayUnmap);
    }

    @Override
    public boolean zeroesFast() {
        return inner.zeroesFast();
    }

    @Override
    public void prefetch(long offset, long length) throws IOException {
        inner.prefetch(offset, length);
    }

    @Override
    public void mapExtents(long offset, long length, ExtentSink sink) throws IOException {
        inner.mapExtents(offset, length, sink);
    }

    @Override
    public void startMapExtents(long offset, long length, ExtentSink sink, java.util.function.Consumer<IOException> done) {
        inner.startMapExtents(offset, length, sink, done);
    }

    @Override
    public void close() throws IOException {
        inner.close();
    }
}
