package io.iotarget.model;

import java.nio.ByteBuffer;

/**
 * One IO: the single shape in which every front end's data-moving commands reach the
 * controller. Mutable and reusable; a creator keeps a few per connection and calls
 * {@link #reset()} between uses, so the IO path allocates nothing.
 *
 * <p>Ownership moves with the request: the creator fills it and submits it; from submission
 * until {@link IoCallback#complete} the engine, controller and backend own it and the creator
 * must not touch it; after the callback it belongs to the creator again.
 *
 * <p>The group and device are fixed when the request is built, like a bio's {@code bi_blkg}:
 * who pays is decided where the request is created (an export's or namespace's bound group,
 * or the embedded caller's group), never later.
 */
public final class IoRequest {
    // Set by the creator.
    private IoOp op;
    private int flags;
    private long offset;
    private long length;
    private ByteBuffer data;
    private Device device;
    private IoGroup group;
    private IoCallback callback;
    private Object attachment;
    private long tag;
    private ViewSink views;
    private boolean dataLater;
    private IoQueue queue;
    private IoGate gate;
    private int gateTicket;

    // Set by the engine.
    private IoStatus status;
    private long submitNs;
    private long admitNs;
    private long issueNs;
    private long completeNs;
    private boolean gatePassed;

    // Owned by the controller's policies between submission and completion.
    private int policyFlags;
    private long policyCost;
    private long policyStartNs;
    private long policyHeldSinceNs;
    private Object policyGroup;

    /**
     * Describes the IO. For ops that {@linkplain IoOp#carriesData() carry data}, {@code data}
     * holds exactly {@code length} bytes between its position and limit: the bytes to write, or
     * the space to read into. Other ops pass {@code null}.
     */
    public IoRequest set(IoOp op, int flags, long offset, long length, ByteBuffer data) {
        this.op = op;
        this.flags = flags;
        this.offset = offset;
        this.length = length;
        this.data = data;
        return this;
    }

    /** Where the IO goes and who pays for it. */
    public IoRequest target(Device device, IoGroup group) {
        this.device = device;
        this.group = group;
        return this;
    }

    /** Who hears about completion, and what the creator wants back (an NBD handle, an NVMe command id). */
    public IoRequest callback(IoCallback callback, Object attachment, long tag) {
        this.callback = callback;
        this.attachment = attachment;
        this.tag = tag;
        return this;
    }

    /**
     * Offers a zero-copy read: a backend that can share its memory hands the bytes to
     * {@code views} and leaves {@link #data()} untouched; one that cannot reads into
     * {@link #data()} as usual. Reads only.
     */
    public IoRequest views(ViewSink views) {
        this.views = views;
        return this;
    }

    public ViewSink views() {
        return views;
    }

    /**
     * Admission before data (NVMe/TCP's R2T): the request passes the controller's policies
     * without its data; once admitted the engine calls {@link IoCallback#admitted} instead of
     * running it, the creator fetches the data, hands it over with {@link #data(ByteBuffer)} and
     * calls {@code Engine.dispatchAdmitted} (or {@code Engine.abandon} if it never comes). So a
     * write that io.max holds back holds no data buffer while it waits. Writes only.
     */
    public IoRequest dataLater() {
        this.dataLater = true;
        return this;
    }

    public boolean isDataLater() {
        return dataLater;
    }

    /**
     * The tenant queue that issued the request (an NBD connection, an NVMe/TCP IO queue, a
     * volume), the "task" io.pressure counts; null for none. Set by the creator.
     */
    public IoRequest queue(IoQueue queue) {
        this.queue = queue;
        return this;
    }

    public IoQueue queue() {
        return queue;
    }

    /** The data of a {@link #dataLater()} request, once it is there ({@code length} bytes between position and limit). */
    public IoRequest data(ByteBuffer data) {
        this.data = data;
        return this;
    }

    /** Clears everything so the object can describe the next IO. */
    public void reset() {
        op = null;
        flags = 0;
        offset = 0;
        length = 0;
        data = null;
        device = null;
        group = null;
        callback = null;
        attachment = null;
        tag = 0;
        views = null;
        dataLater = false;
        queue = null;
        gate = null;
        gateTicket = 0;
        gatePassed = false;
        status = null;
        submitNs = admitNs = issueNs = completeNs = 0;
        policyFlags = 0;
        policyCost = 0;
        policyStartNs = 0;
        policyHeldSinceNs = 0;
        policyGroup = null;
    }

    /**
     * A check the request must pass again just before its device ({@link IoGate}), or null for
     * none. Set by the creator with the rest of the request.
     */
    public IoRequest gate(IoGate gate) {
        this.gate = gate;
        return this;
    }

    public IoGate gate() {
        return gate;
    }

    /** The gate's own note about this request (e.g. which epoch it entered), from {@link IoGate#enter} to {@link IoGate#leave}. */
    public void gateTicket(int ticket) {
        gateTicket = ticket;
    }

    public int gateTicket() {
        return gateTicket;
    }

    /** The engine: the request passed its gate and is owed one {@link IoGate#leave}. */
    public void gatePassed(boolean passed) {
        gatePassed = passed;
    }

    public boolean gatePassed() {
        return gatePassed;
    }

    public IoOp op() {
        return op;
    }

    public int flags() {
        return flags;
    }

    public boolean hasFlag(int flag) {
        return (flags & flag) != 0;
    }

    public long offset() {
        return offset;
    }

    public long length() {
        return length;
    }

    public ByteBuffer data() {
        return data;
    }

    public Device device() {
        return device;
    }

    public IoGroup group() {
        return group;
    }

    public IoCallback callback() {
        return callback;
    }

    public Object attachment() {
        return attachment;
    }

    public long tag() {
        return tag;
    }

    public IoStatus status() {
        return status;
    }

    /** Engine only: records how the request ended, just before the callback runs. */
    public void status(IoStatus status) {
        this.status = status;
    }

    /** When the request entered the controller (engine clock, ns). */
    public long submitNs() {
        return submitNs;
    }

    public void submitNs(long nowNs) {
        this.submitNs = nowNs;
    }

    /**
     * When the request, past the controller's policies, reached its device's dispatch queue
     * (engine clock, ns): the kernel's {@code rq->alloc_time_ns}. Time between this and
     * {@link #issueNs()} is time spent waiting for a slot of the device's queue depth. Set by
     * the engine as it hands the request to the queue.
     */
    public long admitNs() {
        return admitNs;
    }

    public void admitNs(long nowNs) {
        this.admitNs = nowNs;
    }

    /** When the request left the dispatch queue for the backend (engine clock, ns). */
    public long issueNs() {
        return issueNs;
    }

    public void issueNs(long nowNs) {
        this.issueNs = nowNs;
    }

    /** When the backend finished it (engine clock, ns). */
    public long completeNs() {
        return completeNs;
    }

    public void completeNs(long nowNs) {
        this.completeNs = nowNs;
    }

    /**
     * Policy bits; controller and policies only. The low {@code PolicyChain.STAGE_BITS_MASK}
     * bits record which stages admitted the request; a policy may keep its own marks above them.
     */
    public int policyFlags() {
        return policyFlags;
    }

    public void policyFlags(int policyFlags) {
        this.policyFlags = policyFlags;
    }

    /** A policy's per-request number (for example iocost's absolute cost); controller only. */
    public long policyCost() {
        return policyCost;
    }

    public void policyCost(long policyCost) {
        this.policyCost = policyCost;
    }

    /**
     * A policy's per-request time (engine clock, ns): io.latency's start, the kernel's
     * {@code bio_issue} stamp, taken when the request is past io.max. Controller only.
     */
    public long policyStartNs() {
        return policyStartNs;
    }

    public void policyStartNs(long nowNs) {
        this.policyStartNs = nowNs;
    }

    /**
     * When a policy last parked the request (engine clock, ns), for the time it was held
     * there (the chain's held-time counters). Controller only.
     */
    public long policyHeldSinceNs() {
        return policyHeldSinceNs;
    }

    public void policyHeldSinceNs(long nowNs) {
        this.policyHeldSinceNs = nowNs;
    }

    /**
     * The controller's per-(group, device) state that the policies charged the request to, the
     * kernel's {@code bio->bi_blkg}: completion is reported there even if the group's place in
     * the tree changed meanwhile. Controller only.
     */
    public Object policyGroup() {
        return policyGroup;
    }

    public void policyGroup(Object policyGroup) {
        this.policyGroup = policyGroup;
    }

    @Override
    public String toString() {
        return op + " dev=" + (device == null ? "-" : device.number()) + " group=" + (group == null ? "-" : group.path())
                + " off=" + offset + " len=" + length + " flags=0x" + Integer.toHexString(flags)
                + (status == null ? "" : " status=" + status);
    }
}
