package io.iotarget.backend;

import io.iotarget.model.ViewSink;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * A device of known capacity: another backend behind a fixed service rate, so that results
 * measured on it do not depend on the machine. Calls are served one at a time in arrival
 * order on a modeled timeline, each taking {@code perIoNs} plus its bytes at
 * {@code bytesPerSecond} (flush, discard and write-zeroes take {@code perIoNs} only); the
 * calling thread sleeps until its call's modeled completion, then the wrapped backend does
 * the work. Because completions are placed on the timeline rather than after each sleep, late
 * wake-ups do not slow the device down while calls are queued.
 *
 * <p>Any thread. {@link #blocking()} is true: its requests run on the engine's IO threads,
 * never on the submitting thread.
 */
public final class PacedBackend extends ForwardingBackend {
    private static final long NS_PER_SEC = 1_000_000_000L;

    private final long perIoNs;
    private final long bytesPerSecond;
    /** When the modeled device finishes what it has accepted so far (System.nanoTime). */
    private final AtomicLong busyUntilNs = new AtomicLong(Long.MIN_VALUE);

    /**
     * @param perIoNs        time every call takes, ≥ 0
     * @param bytesPerSecond transfer rate, &gt; 0
     */
    public PacedBackend(Backend inner, long perIoNs, long bytesPerSecond) {
        if (perIoNs < 0) throw new IllegalArgumentException("perIoNs " + perIoNs + " (expected: >= 0)");
        if (bytesPerSecond <= 0) throw new IllegalArgumentException("bytesPerSecond " + bytesPerSecond + " (expected: > 0)");
        super(inner);
        this.perIoNs = perIoNs;
        this.bytesPerSecond = bytesPerSecond;
    }

    /** How long a call moving {@code bytes} occupies the modeled device. */
    public long serviceNs(long bytes) {
        // double: exact to the ns below 2^53 ns (104 days), plenty for one call
        return perIoNs + (long) Math.ceil(bytes * (double) NS_PER_SEC / bytesPerSecond);
    }

    /** Takes the next slot on the timeline and sleeps until it ends. */
    private void occupy(long bytes) {
        long service = serviceNs(bytes);
        long now = System.nanoTime();
        long start;
        long end;
        long busy;
        do {
            busy = busyUntilNs.get();
            start = busy == Long.MIN_VALUE || busy - now < 0 ? now : busy;
            end = start + service;
        } while (!busyUntilNs.compareAndSet(busy, end));
        long left;
        while ((left = end - System.nanoTime()) > 0) LockSupport.parkNanos(this, left);
    }

    @Override
    public String kind() {
        return "paced-" + inner.kind();
    }

    @Override
    public boolean blocking() {
        return true;
    }

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        occupy(dst.remaining());
        inner.read(offset, dst);
    }

    /** Never shares: every read goes through {@link #read}, where it is paced. */
    @Override
    public boolean readViews(long offset, int length, ViewSink sink) {
        return false;
    }

    /** Never shares, whatever the wrapped backend does: a read needs a buffer of its own. */
    @Override
    public boolean sharesReads() {
        return false;
    }

    @Override
    public void write(long offset, ByteBuffer src, boolean fua) throws IOException {
        occupy(src.remaining());
        inner.write(offset, src, fua);
    }

    @Override
    public void flush() throws IOException {
        occupy(0);
        inner.flush();
    }

    @Override
    public void discard(long offset, long length) throws IOException {
        occupy(0);
        inner.discard(offset, length);
    }

    @Override
    public void writeZeroes(long offset, long length, boolean mayUnmap) throws IOException {
        occupy(0);
        inner.writeZeroes(offset, length, mayUnmap);
    }

    @Override
    public void prefetch(long offset, long length) throws IOException {
        occupy(length);
        inner.prefetch(offset, length);
    }
}
