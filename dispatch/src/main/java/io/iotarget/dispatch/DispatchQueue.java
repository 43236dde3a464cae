package io.iotarget.dispatch;

import io.iotarget.backend.Backend;
import io.iotarget.backend.NoSpaceException;
import io.iotarget.model.Device;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;

/**
 * Runs admitted requests of one device on its backend, at most {@link #depth()} at once (like
 * a blk-mq tag set). A request runs on the thread that dispatches it when a slot is free;
 * otherwise it waits in FIFO order and the next thread to finish a request runs it.
 *
 * <p>Any thread. Backend failures become an {@link IoStatus}; nothing thrown escapes.
 */
public final class DispatchQueue {
    /** Verify and compare read through a scratch buffer of this size. */
    private static final int SCRATCH_BYTES = 1 << 20;
    private static final ThreadLocal<ByteBuffer> SCRATCH = ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(SCRATCH_BYTES));

    /** Hears when a request starts and ends on the backend. */
    public interface Listener {
        /** Just before the backend call. */
        void issued(IoRequest io);

        /** After the backend call, with its outcome. */
        void completed(IoRequest io, IoStatus status);
    }

    private final Device device;
    private final Backend backend;
    private final int depth;
    private final Listener listener;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final ConcurrentLinkedQueue<IoRequest> waiting = new ConcurrentLinkedQueue<>();
    private final LongAdder backendErrors = new LongAdder();
    private volatile boolean closed;

    public DispatchQueue(Device device, Backend backend, int depth, Listener listener) {
        if (depth < 1) throw new IllegalArgumentException("depth " + depth);
        this.device = device;
        this.backend = backend;
        this.depth = depth;
        this.listener = listener;
    }

    public Device device() {
        return device;
    }

    public Backend backend() {
        return backend;
    }

    public int depth() {
        return depth;
    }

    /** Requests on the backend right now. */
    public int inFlight() {
        return inFlight.get();
    }

    /** Backend calls that failed unexpectedly (IO errors, and anything a backend threw). */
    public long backendErrors() {
        return backendErrors.sum();
    }

    /**
     * Stops the queue before its backend is closed: requests waiting for a slot, and any that
     * arrive later, complete {@link IoStatus#ABORTED} without touching the backend; requests
     * already on the backend are waited for. Not from a thread that is running one of this
     * queue's requests.
     */
    public void close() {
        closed = true;
        for (IoRequest io; (io = waiting.poll()) != null; ) listener.completed(io, IoStatus.ABORTED);
        while (inFlight.get() > 0) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Runs the request now if a slot is free, else queues it behind the others. */
    public void dispatch(IoRequest io) {
        if (waiting.isEmpty() && tryAcquire()) {
            run(io);
        } else {
            waiting.add(io);
        }
        drain();
    }

    /** Runs queued requests while slots are free. */
    private void drain() {
        while (!waiting.isEmpty() && tryAcquire()) {
            IoRequest next = waiting.poll();
            if (next == null) {
                inFlight.decrementAndGet();
                if (waiting.isEmpty()) return;
                continue;
            }
            run(next);
        }
    }

    private boolean tryAcquire() {
        int n;
        do {
            n = inFlight.get();
            if (n >= depth) return false;
        } while (!inFlight.compareAndSet(n, n + 1));
        return true;
    }

    private void run(IoRequest io) {
        // After taking a slot (inFlight is volatile), so close() either sees this request or it sees closed.
        if (closed) {
            inFlight.decrementAndGet();
            listener.completed(io, IoStatus.ABORTED);
            return;
        }
        listener.issued(io);
        IoStatus status = execute(io);
        inFlight.decrementAndGet();
        listener.completed(io, status);
    }

    private IoStatus execute(IoRequest io) {
        try {
            if (io.hasFlag(IoFlags.PREFLUSH)) backend.flush();
            long offset = io.offset();
            long length = io.length();
            boolean fua = io.hasFlag(IoFlags.FUA);
            switch (io.op()) {
                case READ -> {
                    if (io.views() == null || !backend.readViews(offset, (int) length, io.views())) backend.read(offset, io.data());
                }
                case PASSTHROUGH_IN -> backend.read(offset, io.data());
                case WRITE, PASSTHROUGH_OUT -> backend.write(offset, io.data(), fua);
                case FLUSH -> backend.flush();
                case DISCARD -> backend.discard(offset, length);
                case WRITE_ZEROES -> {
                    if (io.hasFlag(IoFlags.FAST_ZERO) && !backend.zeroesFast()) return IoStatus.NOT_FAST;
                    backend.writeZeroes(offset, length, !io.hasFlag(IoFlags.NO_UNMAP));
                }
                case CACHE -> backend.prefetch(offset, length);
                case VERIFY -> readThrough(offset, length, null);
                case COMPARE -> {
                    if (!readThrough(offset, length, io.data())) return IoStatus.COMPARE_FAILED;
                }
            }
            if (fua && (io.op() == IoOp.DISCARD || io.op() == IoOp.WRITE_ZEROES)) backend.flush();
            return IoStatus.OK;
        } catch (NoSpaceException e) {
            return IoStatus.NO_SPACE;
        } catch (IOException | RuntimeException | Error e) {
            // An Error too (a backend out of memory): the request fails, its slot and the thread go on.
            backendErrors.increment();
            return IoStatus.IO_ERROR;
        }
    }

    /** Reads the range through scratch memory; with {@code expected}, compares; false on a difference. */
    private boolean readThrough(long offset, long length, ByteBuffer expected) throws IOException {
        ByteBuffer scratch = SCRATCH.get();
        long done = 0;
        while (done < length) {
            int n = (int) Math.min(length - done, scratch.capacity());
            scratch.clear().limit(n);
            backend.read(offset + done, scratch);
            if (expected != null) {
                int at = expected.position() + (int) done;
                if (scratch.mismatch(expected.slice(at, n)) >= 0) return false;
            }
            done += n;
        }
        return true;
    }
}
