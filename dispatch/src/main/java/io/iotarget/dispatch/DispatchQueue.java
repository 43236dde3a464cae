package io.iotarget.dispatch;

import io.iotarget.backend.Backend;
import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.Completion;
import io.iotarget.backend.RequestRunner;
import io.iotarget.backend.file.IoEngine;
import io.iotarget.model.Clock;
import io.iotarget.model.Counters;
import io.iotarget.model.Device;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Runs admitted requests of one device on its backend, at most {@link #depth()} at once (like
 * a blk-mq tag set); beyond that they wait in FIFO order. How a request runs depends on the
 * backend:
 * <ul>
 *   <li>non-blocking (memory, null): on the thread that dispatches it, to the end, before
 *   {@link #dispatch} returns — no thread hop;
 *   <li>{@linkplain Backend#blocking() blocking} (files, block devices, paced): started with
 *   {@link Backend#start}, and the dispatching thread returns at once; the end arrives on an
 *   IO thread of the engine's {@link IoEngine}, which reports it and starts the requests
 *   waiting for the freed slot.
 * </ul>
 * Either way the {@link Listener} hears of each request twice, and a finished request's slot
 * goes to the oldest waiting request on whichever thread finished it.
 *
 * <p>Any thread. Backend failures become an {@link IoStatus} ({@link BackendErrors}), are
 * counted ({@link DispatchCounter#BACKEND_ERRORS}) and logged, at most
 * {@link BackendErrorLog#LINES_PER_SECOND} lines a second per device; nothing thrown escapes.
 */
public final class DispatchQueue {
    /** Hears when a request starts and ends on the backend. */
    public interface Listener {
        /** Just before the request goes to the backend; on the dispatching thread. */
        void issued(IoRequest io);

        /** With its outcome; on the dispatching thread or an IO thread. Must not block. */
        void completed(IoRequest io, IoStatus status);
    }

    private final Device device;
    private final Backend backend;
    private final int depth;
    private final Listener listener;
    private final IoEngine ioEngine;
    private final boolean inline;
    private final BackendErrorLog errorLog;
    private final AtomicInteger inFlight = new AtomicInteger();
    private final ConcurrentLinkedQueue<IoRequest> waiting = new ConcurrentLinkedQueue<>();
    private final Counters<DispatchCounter> counters = new Counters<>(DispatchCounter.class)
            .source(DispatchCounter.IN_FLIGHT, inFlight::get)
            .source(DispatchCounter.WAITING, waiting::size);
    private final Completion completion = new Completion() {
        @Override
        public void completed(IoRequest io, IoStatus status) {
            finish(io, status);
            drain();
        }

        @Override
        public void failed(IoRequest io, IOException cause) {
            finish(io, failure(io, cause));
            drain();
        }
    };
    private volatile boolean closed;
    /** When a tenant last submitted a request for the device (engine clock); written opaque, a hint for calibrate. */
    private long lastTenantSubmitNs = Long.MIN_VALUE;
    /** How stale {@link #lastTenantSubmitNs} may be: calibrate asks about the last 10 s. */
    static final long TENANT_HINT_RESOLUTION_NS = 1_000_000_000L;
    private static final VarHandle LAST_TENANT_SUBMIT;

    static {
        try {
            LAST_TENANT_SUBMIT = MethodHandles.lookup().findVarHandle(DispatchQueue.class, "lastTenantSubmitNs", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * @param ioEngine where blocking backends run their requests
     * @param clock    for the error log's rate limit
     */
    public DispatchQueue(Device device, Backend backend, int depth, Listener listener, IoEngine ioEngine, Clock clock) {
        if (depth < 1) throw new IllegalArgumentException("depth " + depth);
        this.device = device;
        this.backend = backend;
        this.depth = depth;
        this.listener = listener;
        this.ioEngine = ioEngine;
        this.inline = !backend.blocking();
        this.errorLog = new BackendErrorLog(device, clock);
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

    /**
     * A tenant submitted a request for this device at {@code nowNs} (engine clock). Any thread;
     * the engine's submit path. Kept to {@link #TENANT_HINT_RESOLUTION_NS}: the field is read
     * first and written at most about once a second, so the submit path does not write a line
     * every connection's thread shares on each request.
     */
    public void tenantSubmitted(long nowNs) {
        long last = (long) LAST_TENANT_SUBMIT.getOpaque(this);
        if (last == Long.MIN_VALUE || nowNs - last >= TENANT_HINT_RESOLUTION_NS) LAST_TENANT_SUBMIT.setOpaque(this, nowNs);
    }

    /** When a tenant last submitted a request for this device, to within a second; {@link Long#MIN_VALUE} if never. Any thread. */
    public long lastTenantSubmitNs() {
        return (long) LAST_TENANT_SUBMIT.getOpaque(this);
    }

    /** This queue's counters ({@link DispatchCounter}). Any thread. */
    public Counters<DispatchCounter> counters() {
        return counters;
    }

    /**
     * Stops the queue before its backend is closed: requests waiting for a slot, and any that
     * arrive later, complete {@link IoStatus#ABORTED} without touching the backend; requests
     * already on the backend are waited for. Not from a thread that is running one of this
     * queue's requests, nor from an IO thread.
     */
    public void close() {
        closed = true;
        for (IoRequest io; (io = waiting.poll()) != null; ) {
            counters.increment(DispatchCounter.ABORTED);
            listener.completed(io, IoStatus.ABORTED);
        }
        while (inFlight.get() > 0) {
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        errorLog.flush();
    }

    /** Starts the request now if a slot is free, else queues it behind the others. */
    public void dispatch(IoRequest io) {
        if (waiting.isEmpty() && tryAcquire()) {
            start(io);
        } else {
            waiting.add(io);
        }
        drain();
    }

    /** Starts queued requests while slots are free. */
    private void drain() {
        while (!waiting.isEmpty() && tryAcquire()) {
            IoRequest next = waiting.poll();
            if (next == null) {
                inFlight.decrementAndGet();
                if (waiting.isEmpty()) return;
                continue;
            }
            start(next);
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

    /** Runs or starts a request that holds a slot; a request that ended here is finished here. */
    private void start(IoRequest io) {
        // After taking a slot (inFlight is volatile), so close() either sees this request or it sees closed.
        if (closed) {
            counters.increment(DispatchCounter.ABORTED);
            finish(io, IoStatus.ABORTED);
            return;
        }
        listener.issued(io);
        IoStatus status;
        try {
            status = inline ? RequestRunner.run(backend, io) : backend.start(io, ioEngine, completion);
        } catch (IOException e) {
            status = failure(io, e);
        } catch (RuntimeException | Error e) {
            // An Error too (a backend out of memory): the request fails, its slot and the thread go on.
            status = failure(io, new IOException("unexpected failure in " + backend.kind() + " backend", e));
        }
        if (status != null) finish(io, status);
    }

    private void finish(IoRequest io, IoStatus status) {
        inFlight.decrementAndGet();
        listener.completed(io, status);
    }

    private IoStatus failure(IoRequest io, IOException cause) {
        int errno = BackendErrors.errno(cause);
        counters.increment(DispatchCounter.BACKEND_ERRORS);
        errorLog.report(io, errno, cause);
        return BackendErrors.status(errno);
    }
}
