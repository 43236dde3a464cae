package io.iotarget.frontend.nbd;

import io.iotarget.backend.Backend;
import io.iotarget.backend.ForwardingBackend;
import io.iotarget.model.ViewSink;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.LongAdder;

/**
 * A backend that counts what really reached it, so tests can check that io.stat charged
 * exactly the data that moved: every byte the backend read or wrote, no more, no less.
 */
final class CountingBackend extends ForwardingBackend {
    final LongAdder readBytes = new LongAdder();
    final LongAdder reads = new LongAdder();
    final LongAdder writeBytes = new LongAdder();
    final LongAdder writes = new LongAdder();
    final LongAdder flushes = new LongAdder();
    final LongAdder discardBytes = new LongAdder();
    final LongAdder discards = new LongAdder();
    final LongAdder prefetchBytes = new LongAdder();
    final LongAdder prefetches = new LongAdder();

    CountingBackend(Backend inner) {
        super(inner);
    }

    /**
     * Checks io.stat against everything this backend saw. Exact for bytes and for read and
     * discard IOs; write IOs are the writes and zeroings plus the client's flushes, and the
     * backend also sees flushes that dispatch adds for FUA on a zeroing or discard (part of
     * that one request), so wios is only bounded by the flush count.
     */
    void assertCharged(java.util.Map<String, Long> stat, String what) {
        java.util.Map<String, Long> expected = new java.util.HashMap<>(TestTarget.stat(readBytes.sum() + prefetchBytes.sum(),
                writeBytes.sum(), reads.sum() + prefetches.sum(), 0, discardBytes.sum(), discards.sum()));
        java.util.Map<String, Long> got = new java.util.HashMap<>(stat);
        long wios = got.remove("wios");
        expected.remove("wios");
        org.junit.jupiter.api.Assertions.assertEquals(expected, got, what);
        org.junit.jupiter.api.Assertions.assertTrue(wios >= writes.sum() && wios <= writes.sum() + flushes.sum(),
                what + ": wios=" + wios + " (expected: " + writes.sum() + " writes plus up to " + flushes.sum() + " flushes)");
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        reads.increment();
        readBytes.add(dst.remaining());
        inner.read(offset, dst);
    }

    @Override
    public boolean readViews(long offset, int length, ViewSink sink) {
        boolean shared = inner.readViews(offset, length, sink);
        if (shared) {
            reads.increment();
            readBytes.add(length);
        }
        return shared;
    }

    @Override
    public void write(long offset, ByteBuffer src, boolean fua) throws IOException {
        writes.increment();
        writeBytes.add(src.remaining());
        inner.write(offset, src, fua);
    }

    @Override
    public void flush() throws IOException {
        flushes.increment();
        inner.flush();
    }

    @Override
    public void discard(long offset, long length) throws IOException {
        discards.increment();
        discardBytes.add(length);
        inner.discard(offset, length);
    }

    @Override
    public void writeZeroes(long offset, long length, boolean mayUnmap) throws IOException {
        writes.increment();
        writeBytes.add(length);
        inner.writeZeroes(offset, length, mayUnmap);
    }

    @Override
    public void prefetch(long offset, long length) throws IOException {
        prefetches.increment();
        prefetchBytes.add(length);
        inner.prefetch(offset, length);
    }
}
