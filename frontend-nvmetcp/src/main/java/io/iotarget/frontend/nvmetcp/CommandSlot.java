package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.wire.Status;

import io.iotarget.frontend.nvmetcp.config.ActiveNamespace;

import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.buffer.BufferWaiter;
import io.iotarget.buffer.PooledBuffer;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.pressure.TenantQueue;
import io.iotarget.model.IoCallback;
import io.iotarget.model.IoGate;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.SharedRead;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One command in flight on a queue, reused for the life of the connection: its SQE, its data
 * buffer, its pooled {@link IoRequest}s and its completion. The slot's {@link #tag} is the
 * transfer tag of its R2Ts.
 *
 * <p>Ownership moves with the command, never shared: the queue's loop fills the slot and
 * runs or submits the command; the engine owns it until the last {@link #complete} call; the
 * loop owns it again from {@link Queue#respond} until its response is on the wire and the
 * tag is back on the free list. Each hand-off to and from the engine is a release/acquire pair
 * (the response queue's exchange), so the fields themselves are plain.
 */
public final class CommandSlot implements IoCallback, IoGate {
    /** What the writer is to send for the slot. */
    static final int EVENT_R2T = 1;
    static final int EVENT_RESPONSE = 2;

    private static final int DATA_ALIGNMENT = 4096;
    private static final ByteBuffer NO_DATA = ByteBuffer.allocateDirect(0);
    private static final VarHandle PENDING;
    private static final VarHandle FIRST_ERROR;
    static final VarHandle NEXT;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            PENDING = l.findVarHandle(CommandSlot.class, "pending", int.class);
            FIRST_ERROR = l.findVarHandle(CommandSlot.class, "firstError", IoStatus.class);
            NEXT = l.findVarHandle(CommandSlot.class, "next", CommandSlot.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /*  The slot's own PDU header memory (direct, written in place, queued on the transport):
     *  [0, 32)   R2T header (+ header digest)
     *  [32, 64)  C2HData header or response capsule (+ header digest)
     *  [64, 96)  after C2HData: data digest and/or response capsule (+ header digest)
     */
    private static final int WIRE_SEGMENT_BYTES = 32;

    final int tag;
    final Queue connection;
    public final ByteBuffer sqe = ByteBuffer.allocate(Sqe.BYTES).order(ByteOrder.LITTLE_ENDIAN);
    /** Runs on the loop once the response's last byte is written, or dropped with the connection. */
    final Runnable sent;
    private final ByteBuffer r2tHeader;
    private final ByteBuffer responseHeader;
    private final ByteBuffer trailer;

    /** Where the command's data is: {@link #own} (admin queue) or the pool buffer it holds. */
    private ByteBuffer storage = NO_DATA;
    /** Admin-queue data (small: Identify, log pages, Connect), direct and page aligned, grown to the largest seen. */
    private ByteBuffer own = NO_DATA;
    /** An IO command's data buffer, from its namespace group's share of the buffer pool. */
    private PooledBuffer pooled;
    /** The pool serves this when a buffer the slot waited for frees up (any thread). */
    final BufferWaiter bufferWaiter;

    /** Where the slot is: FREE (tag on the free list), RECEIVING (capsule, buffer or data still to come), ENGINE, RESPONDING. */
    static final int FREE = 0, RECEIVING = 1, ENGINE = 2, RESPONDING = 3;
    /** Loop thread, except the move to RESPONDING when the engine completes it. */
    volatile int phase;
    private IoRequest[] requests = {new IoRequest()};
    /**
     * A READ's data when the backend shared it (its memory, or a page-cache range sent with
     * sendfile(2)) instead of reading into {@link #data()}. The namespace's in-flight count is
     * held until the response is sent, so the device outlives what the reply sends from.
     */
    public final SharedRead shared = new SharedRead();
    private int submitCount;

    // Reader-side command state.
    /** Bytes the command transfers (either way); its data lies in {@link #data()} [0, dataLength). */
    public int dataLength;
    /** Host-to-controller bytes still expected through R2T/H2CData, and bytes received so far. */
    public boolean awaitingData;
    /** A data-later write the engine admitted, now waiting for its buffer or its data (loop thread). */
    boolean admittedWaiting;
    /** Set once the R2T is encoded: only then may H2CData arrive (a host that sends earlier would have the slot queued twice). */
    boolean r2tSent;
    int received;
    /** The namespace an IO command addresses, from {@link #enterEngine}; a submitted command has entered its in-flight count and exits it on completion. */
    public ActiveNamespace namespace;
    public long startLba;

    // Completion, read by the writer.
    int event;
    int status;
    public long result;
    /** The response carries the command's data to the host (C2HData) when it succeeds. */
    boolean dataToHost;
    /** Authentication failed: once the response is out, the writer closes the queue. */
    boolean closesQueue;

    @SuppressWarnings("unused")     // PENDING
    private volatile int pending;
    @SuppressWarnings("unused")     // FIRST_ERROR
    private volatile IoStatus firstError;
    @SuppressWarnings("unused")     // NEXT, SlotQueue's link
    volatile CommandSlot next;

    CommandSlot(int tag, Queue connection) {
        this.tag = tag;
        this.connection = connection;
        this.sent = connection == null ? null : () -> connection.sent(this);
        this.bufferWaiter = connection == null ? null : buffer -> connection.bufferAvailable(this, buffer);
        ByteBuffer wire = ByteBuffer.allocateDirect(3 * WIRE_SEGMENT_BYTES);
        this.r2tHeader = wire.slice(0, WIRE_SEGMENT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        this.responseHeader = wire.slice(WIRE_SEGMENT_BYTES, WIRE_SEGMENT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        this.trailer = wire.slice(2 * WIRE_SEGMENT_BYTES, WIRE_SEGMENT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Cleared header memory for the slot's R2T. */
    ByteBuffer r2tHeader() {
        return r2tHeader.clear();
    }

    /** Cleared header memory for the slot's C2HData header or response capsule. */
    ByteBuffer responseHeader() {
        return responseHeader.clear();
    }

    /** Cleared memory for what follows C2HData's payload: data digest, response capsule. */
    ByteBuffer trailer() {
        return trailer.clear();
    }

    /** Readies the slot for a new command whose SQE is at {@code header[sqeAt, sqeAt + 64)}. */
    void begin(ByteBuffer header, int sqeAt) {
        sqe.put(0, header, sqeAt, Sqe.BYTES);
        phase = RECEIVING;
        storage = NO_DATA;
        dataLength = 0;
        awaitingData = false;
        r2tSent = false;
        admittedWaiting = false;
        received = 0;
        namespace = null;
        startLba = 0;
        status = Status.SUCCESS;
        result = 0;
        dataToHost = false;
        closesQueue = false;
    }

    int commandId() {
        return Sqe.commandId(sqe);
    }

    /**
     * The slot's own data buffer sized for {@code length} bytes (admin queue): position 0, limit
     * {@code length}; earlier content is garbage.
     */
    public ByteBuffer data(int length) {
        if (own.capacity() < length) {
            int capacity = Math.max(DATA_ALIGNMENT, Integer.highestOneBit(length - 1) << 1);
            own = ByteBuffer.allocateDirect(capacity + DATA_ALIGNMENT).alignedSlice(DATA_ALIGNMENT).order(ByteOrder.LITTLE_ENDIAN);
        }
        storage = own;
        dataLength = length;
        return storage.clear().limit(length);
    }

    /** An IO command's data goes to {@code buffer} (from the pool, held until the slot is freed): position 0, limit {@link #dataLength}. */
    public ByteBuffer data(PooledBuffer buffer) {
        pooled = buffer;
        storage = buffer.buffer().order(ByteOrder.LITTLE_ENDIAN);
        return data();
    }

    /** True when the command's data has its buffer (or needs none). */
    public boolean hasBuffer() {
        return dataLength == 0 || storage != NO_DATA;
    }

    /** Gives the pool buffer back, on every path that frees the slot. */
    void releaseBuffer() {
        storage = NO_DATA;
        if (pooled == null) return;
        pooled.release();
        pooled = null;
    }

    /** The command's data, [0, dataLength). */
    public ByteBuffer data() {
        return storage.clear().limit(dataLength);
    }

    /** The window [offset, offset + length) of the data, for an H2CData PDU to fill. */
    ByteBuffer dataWindow(int offset, int length) {
        return storage.limit(offset + length).position(offset);
    }

    /** The i-th pooled request, reset; grows the pool when a command needs more (DSM ranges). */
    public IoRequest request(int i) {
        if (i >= requests.length) {
            IoRequest[] grown = java.util.Arrays.copyOf(requests, Math.max(i + 1, requests.length * 2));
            for (int k = requests.length; k < grown.length; k++) grown[k] = new IoRequest();
            requests = grown;
        }
        IoRequest io = requests[i];
        io.reset();
        return io;
    }

    /**
     * Submits requests 0..count-1 (built with {@link #request}) through the engine, as commands
     * of {@code queue} (io.pressure's task for the namespace's group); the
     * slot responds once the last one completes. Loop thread; {@code count} &gt; 0. The fields
     * are read once, before the first submit: once the last request is submitted the command may
     * complete (on another thread) and the slot go back to the free list.
     */
    public void submitAll(int count, Engine engine, TenantQueue queue) {
        phase = ENGINE;
        FIRST_ERROR.setOpaque(this, (IoStatus) null);
        PENDING.setRelease(this, count);
        submitCount = count;
        IoRequest[] batch = requests;
        // With reservations, each request is checked again just before the backend (IoGate).
        IoGate gate = namespace != null && namespace.reservation() != null ? this : null;
        for (int i = 0; i < count; i++) {
            batch[i].queue(queue);
            batch[i].gate(gate);
        }
        for (int i = 0; i < count; i++) engine.submit(batch[i]);
    }

    /**
     * The queue's host has gone away: whatever of this command a policy still holds is dropped
     * (it completes ABORTED, unanswered). Loop thread, for a slot in the engine.
     *
     * @return how many of its requests were dropped
     */
    int cancel(Engine engine) {
        IoRequest[] batch = requests;
        int dropped = 0;
        for (int i = 0; i < submitCount; i++) if (engine.cancel(batch[i])) dropped++;
        return dropped;
    }

    /**
     * Engine callback for a write admitted before its data (R2T after admission): over to the
     * queue's loop, which takes the buffer and sends the R2T. Any thread.
     */
    @Override
    public void admitted(IoRequest io) {
        connection.admitted(this);
    }

    /**
     * An IO command about to be checked against {@code ns}'s reservation and submitted: from now
     * on it counts as on the engine ({@link Queue#busyOn}, {@link Queue#cancelHeld}). Loop thread.
     */
    public void enterEngine(ActiveNamespace ns) {
        namespace = ns;
        phase = ENGINE;
    }

    /**
     * The command goes on on other threads (a reservation command, in its namespace's turn),
     * which answer it with {@link #finish}. Loop thread, before the hand-off.
     */
    public void leaveLoop() {
        phase = ENGINE;
    }

    /** Answers a command handed off with {@link #leaveLoop}. The thread it was handed to (any thread). */
    public void finish(int status) {
        this.status = status;
        connection.respond(this);
    }

    /** The response of a command whose data the backend shared is out (or dropped): the backend may go. Loop thread. */
    void endSharedRead() {
        if (!shared.holdsData()) return;
        shared.clear();
        namespace.inFlight().exit();
    }

    /** The admitted data-later write, now that its data is in the slot. Loop thread. */
    IoRequest dataLaterRequest() {
        IoRequest io = requests[0];
        return io.isDataLater() ? io : null;
    }

    /** Engine callback, any thread: the queue stops taking commands for the delay; the response goes out now. */
    @Override
    public boolean delayIssuer(IoRequest io, long delayNs) {
        connection.delayInput(delayNs);
        return true;
    }

    /**
     * The gate (with reservations): the namespace's reservation decides the request for this
     * queue's host, just before the backend, and counts it in until {@link #leave}. Any thread
     * that moves the request; the slot is the engine's meanwhile, so its namespace is fixed.
     */
    @Override
    public IoStatus enter(IoRequest io) {
        Controller c = connection.controller();
        if (c == null) return IoStatus.UNAVAILABLE;
        return namespace.reservation().enter(c.hostIdHigh, c.hostIdLow, io);
    }

    @Override
    public void leave(IoRequest io) {
        namespace.reservation().leave(io);
    }

    /** Engine callback, any thread: the last completion responds; the first failure decides the status. */
    @Override
    public void complete(IoRequest io) {
        IoStatus s = io.status();
        if (s != IoStatus.OK) FIRST_ERROR.compareAndSet(this, (IoStatus) null, s);
        if ((int) PENDING.getAndAdd(this, -1) != 1) return;
        IoStatus error = (IoStatus) FIRST_ERROR.getAcquire(this);
        status = error == null ? Status.SUCCESS : Status.of(error);
        if (!shared.holdsData()) namespace.inFlight().exit();     // else once the response is sent (endSharedRead)
        connection.respond(this);
    }
}
