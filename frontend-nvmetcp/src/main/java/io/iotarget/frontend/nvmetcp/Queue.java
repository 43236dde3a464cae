package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.command.AdminCommands;

import io.iotarget.frontend.nvmetcp.command.Fabrics;

import io.iotarget.frontend.nvmetcp.command.Status;

import io.iotarget.frontend.nvmetcp.command.Sqe;

import io.iotarget.frontend.nvmetcp.config.ActiveNamespace;

import io.iotarget.frontend.nvmetcp.command.IoCommands;
import io.iotarget.frontend.nvmetcp.config.Port;
import io.iotarget.buffer.PooledBuffer;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.pressure.TenantQueue;
import io.iotarget.model.IoGroup;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.SharedRead;
import io.iotarget.frontend.nvmetcp.pdu.Pdu;
import io.iotarget.frontend.nvmetcp.pdu.PduDecoder;
import io.iotarget.frontend.nvmetcp.pdu.PduEncoder;
import io.iotarget.frontend.nvmetcp.pdu.PduHandler;
import io.iotarget.transport.ConnectionHandler;
import io.iotarget.transport.EventLoop;
import io.iotarget.transport.IssuerDelay;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.io.IOException;
import java.nio.ByteBuffer;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLPeerUnverifiedException;
import io.iotarget.transport.PskKeys;
import io.iotarget.transport.TlsPsk;
import java.nio.ByteOrder;
import java.util.IdentityHashMap;
import java.util.Map;

/**
 * One NVMe/TCP connection, which is one queue (the admin queue or an IO queue) once Connect
 * has named it: a handler on one transport connection.
 *
 * <pre>
 *  loop: socket bytes ─► PduDecoder ─► onHeader/onPdu ─► CommandSlot
 *                                           │ admin: run inline
 *                                           │ IO: engine.submit ─► completion, any thread
 *  loop: ◄─ SlotQueue (MPSC) ◄──────────────┴─ respond(slot) / R2T
 *        encode into the slot's own header buffers ─► transport output queue (gathering write)
 *        ─► tag back to the free list once the response is on the wire
 * </pre>
 *
 * <p>Threads: everything runs on the connection's event loop, except {@link #respond} (any
 * thread: an engine completion, the configuration thread completing an AER) and
 * {@link #close} (any thread). A completion on another thread queues its slot and schedules one
 * flush task on the loop, so an engine thread never touches the socket.
 *
 * <p>What a host can hold: at most twice its queue size in command slots (each with its data
 * buffer), and its queued responses for no longer than the transport's send timeout; a host
 * that has not finished Connect within {@link #CONNECT_LIMIT_NS} of TCP accept is disconnected.
 */
public final class Queue implements PduHandler, ConnectionHandler {
    /** Returned by command handlers that respond later (IO, AER). */
    public static final int PENDING = -1;
    /** MAXH2CDATA in ICResp: H2CData PDUs carry at most this much; a 1 MiB write takes 8. */
    static final int MAX_H2C_DATA = 128 * 1024;
    /** NVME_TCP_ADMIN_CCSZ: in-capsule data on the admin queue (and before Connect). */
    static final int ADMIN_INLINE_DATA_BYTES = 8192;
    /** Identify MDTS = 8 (2^8 pages of 4 KiB): the largest transfer of one command. */
    public static final int MDTS = 8;
    public static final int MAX_TRANSFER_BYTES = 4096 << MDTS;
    /**
     * From TCP accept to a finished Connect: a host that says nothing, or stops half way, must
     * not hold a connection for ever (as NBD's handshake limit; a real host connects in
     * milliseconds, a guest under emulation in well under a second).
     */
    static final long CONNECT_LIMIT_NS = 10_000_000_000L;

    private static final VarHandle COUNTERS = MethodHandles.arrayElementVarHandle(long[].class);
    public static final int COUNT_READS = 0, COUNT_WRITES = 1, COUNT_BYTES_READ = 2, COUNT_BYTES_WRITTEN = 3;

    public final NvmeTarget target;
    public final Port port;
    private final io.iotarget.transport.Connection socket;
    private final PduDecoder decoder = new PduDecoder(this);
    private final SlotQueue responses = new SlotQueue();
    /** TLS record type of a handshake: the first byte of a ClientHello. */
    private static final byte TLS_HANDSHAKE_RECORD = 0x16;
    /** Whether the queue is past choosing plaintext or TLS (a port with TLS not required lets the host's first byte decide). */
    private boolean channelChosen;
    private final Runnable flushTask = this::flushTask;
    private final CommandSlot[] slots;
    private final IoCommands io;
    /** SMART counters, written by the loop (opaque) and summed by the admin queue. */
    private final long[] counters = new long[4];

    // Loop thread only.
    private final int[] freeTags;
    private int freeCount;
    private int slotCount;
    private int slotLimit = 2;          // until Connect names the queue size: the Connect itself
    private CommandSlot current;
    private int currentDataLength;
    private boolean initialized;
    /** Inside decode(): responses queued meanwhile are sent once, after the batch. */
    private boolean decoding;
    private EventLoop.Timeout connectLimit;
    private PduEncoder encoder;
    private boolean headerDigest;
    private boolean dataDigest;
    /** A shared read's buffers on their way into the send queue; loop thread only. */
    private final ByteBuffer[] viewParts = new ByteBuffer[SharedRead.MAX_VIEWS];
    private boolean terminating;
    /** The slot whose in-capsule data the decoder holds back until the pool serves its buffer. */
    private CommandSlot held;
    /**
     * This queue as io.pressure's task, one per group its namespaces charge (almost always
     * one): loop thread; closed with the connection.
     */
    private final Map<IoGroup, TenantQueue> pressureQueues = new IdentityHashMap<>(2);
    /** Input paused for the tenant's issuer delay. */
    private final IssuerDelay issuerDelay;

    // Fixed by Connect on the loop; read by other queues and the admin queue.
    private volatile QueueAuthentication authentication;
    private volatile Controller controller;
    private volatile int qid = -1;
    /** Set once the transport reports the connection closed. */
    private volatile boolean closed;
    private volatile boolean sqFlowControlDisabled;
    private int sqSize = 1;
    /** SQHD: advanced per command as it is taken, reported in each response. */
    private int sqHead;

    public Queue(NvmeTarget target, Port port, io.iotarget.transport.Connection socket) {
        this.target = target;
        this.port = port;
        this.socket = socket;
        int maxSlots = 2 * Port.DEFAULT_MAX_QUEUE_SIZE;
        this.slots = new CommandSlot[maxSlots];
        this.freeTags = new int[maxSlots];
        this.io = new IoCommands(target.engine(), this);
        this.issuerDelay = new IssuerDelay(socket, () -> terminating, () -> {
            if (held == null) socket.resumeInput();
        });
    }

    @Override
    public void opened(io.iotarget.transport.Connection c) {
        channelChosen = !port.tls;
        connectLimit = socket.loop().schedule(CONNECT_LIMIT_NS, () -> {
            if (controller == null) socket.close(null);
        });
    }

    Controller controller() {
        return controller;
    }

    /**
     * TLS from the first byte, before ICReq, as nvmet-tcp: the whole NVMe/TCP stream runs inside
     * it. The host's PSK identity picks its key ({@link NvmeTarget#tlsPsk}).
     */
    private void startTls() {
        channelChosen = true;
        try {
            socket.startTls(((PskKeys) identity -> target.tlsPsk(port, identity)).newEngine());
        } catch (SSLException e) {
            socket.close(e);
        }
    }

    /** The PSK identity this queue's host proved over TLS, or null: a plaintext queue. */
    public String tlsIdentity() {
        var session = socket.tlsSession();
        try {
            return session != null && session.getPeerPrincipal() instanceof TlsPsk.Identity id ? id.name() : null;
        } catch (SSLPeerUnverifiedException e) {
            return null;
        }
    }

    int qid() {
        return qid;
    }

    // ---------------------------------------------------------------- input

    @Override
    public void received(io.iotarget.transport.Connection c, ByteBuffer in) {
        if (!channelChosen) {
            // A TLS port: a TLS record (a ClientHello) or, where TLS is not required, an ICReq PDU (type 0).
            if (!in.hasRemaining()) return;
            if (in.get(in.position()) == TLS_HANDSHAKE_RECORD) {
                startTls();                                 // the hello stays in the buffer for the handshake
                return;
            }
            if (port.treq == Port.TREQ_REQUIRED) {
                // nvmet hands the bytes to the TLS handshake, which fails on them (after tlshd's timeout); at once here.
                socket.close(new IOException("ports/" + port.id + " requires TLS (addr_treq required); the host sent plaintext"));
                return;
            }
            channelChosen = true;
        }
        if (decoder.halted()) {
            in.position(in.limit());
            return;
        }
        decoding = true;
        // One submission to the kernel for the whole batch (io_uring), as blk_start_plug gathers bios.
        var plug = target.engine().plug();
        try {
            decoder.decode(in);
        } finally {
            plug.close();
            decoding = false;
        }
        sendResponses();
    }

    @Override
    public void inputEnded(io.iotarget.transport.Connection c) {
        // The host is gone (NVMe/TCP has no half-close): what is in flight completes unanswered.
        socket.close(null);
    }

    @Override
    public ByteBuffer onHeader(ByteBuffer header, int dataLength) {
        int type = header.get(Pdu.TYPE);
        if (!initialized && type != Pdu.TYPE_IC_REQ) {
            terminate(Pdu.FES_PDU_SEQUENCE_ERROR, Pdu.TYPE, header);
            return null;
        }
        return switch (type) {
            case Pdu.TYPE_IC_REQ -> {
                if (initialized) terminate(Pdu.FES_PDU_SEQUENCE_ERROR, Pdu.TYPE, header);
                yield null;
            }
            case Pdu.TYPE_CAPSULE_CMD -> capsuleHeader(header, dataLength);
            case Pdu.TYPE_H2C_DATA -> dataHeader(header, dataLength);
            default -> null;            // H2CTermReq: the host gives up; handled in onPdu
        };
    }

    @Override
    public void onPdu(ByteBuffer header, boolean dataDigestOk) {
        if (!dataDigestOk) {
            dataDigestError();
            return;
        }
        switch (header.get(Pdu.TYPE)) {
            case Pdu.TYPE_IC_REQ -> initialize(header);
            case Pdu.TYPE_CAPSULE_CMD -> capsuleDone();
            case Pdu.TYPE_H2C_DATA -> dataDone();
            case Pdu.TYPE_H2C_TERM -> {
                target.counters().increment(NvmeTcpCounter.HOST_TERMINATIONS);
                decoder.halt();
                socket.close(null);
            }
            default -> throw new IllegalStateException("decoder delivered PDU type " + header.get(Pdu.TYPE));
        }
    }

    @Override
    public void onFatal(int fes, int fei) {
        terminate(fes, fei, null);
    }

    /** ICReq: check it and answer with ICResp. */
    private void initialize(ByteBuffer header) {
        int pfv = header.getShort(Pdu.IC_PFV);
        int hpda = header.get(Pdu.IC_PDA);
        if (pfv != 0) {
            terminate(Pdu.FES_UNSUPPORTED_PARAMETER, Pdu.IC_PFV, header);
            return;
        }
        if (hpda != 0) {
            terminate(Pdu.FES_UNSUPPORTED_PARAMETER, Pdu.IC_PDA, header);
            return;
        }
        int digests = header.get(Pdu.IC_DIGEST) & (Pdu.IC_DIGEST_HEADER | Pdu.IC_DIGEST_DATA);
        headerDigest = (digests & Pdu.IC_DIGEST_HEADER) != 0;
        dataDigest = (digests & Pdu.IC_DIGEST_DATA) != 0;
        encoder = new PduEncoder(headerDigest);
        decoder.digests(headerDigest, dataDigest);
        ByteBuffer response = ByteBuffer.allocate(Pdu.IC_HLEN).order(ByteOrder.LITTLE_ENDIAN);
        PduEncoder.icResponse(response, digests, MAX_H2C_DATA);
        socket.send(response.flip());
        initialized = true;
    }

    /** A command capsule's header: take a slot, copy the SQE, decide where the command's data lives. */
    private ByteBuffer capsuleHeader(ByteBuffer header, int pduDataLength) {
        CommandSlot slot = takeSlot();
        if (slot == null) {
            terminate(Pdu.FES_PDU_SEQUENCE_ERROR, Pdu.TYPE, header);   // more commands than the queue holds
            return null;
        }
        current = slot;
        slot.begin(header, Pdu.CAPSULE_SQE);
        sqHead = sqHead + 1 == sqSize ? 0 : sqHead + 1;
        Controller c = controller;
        if (c != null) c.noteTraffic();
        ByteBuffer sqe = slot.sqe;
        if ((sqe.get(Sqe.FLAGS) & 0xff) != Sqe.FLAGS_SGL) {
            slot.status = Status.INVALID_FIELD | Status.DNR;           // PRPs or fused operations
            return null;
        }
        int identifier = sqe.get(Sqe.SGL_IDENTIFIER) & 0xff;
        long length = Integer.toUnsignedLong(sqe.getInt(Sqe.SGL_LENGTH));
        int direction = Sqe.direction(sqe);
        if (identifier == Sqe.SGL_IN_CAPSULE) {
            int inline = qid > 0 ? port.inlineDataBytes() : ADMIN_INLINE_DATA_BYTES;
            if (direction != Sqe.DIRECTION_TO_CONTROLLER) slot.status = Status.INVALID_FIELD | Status.DNR;
            else if (sqe.getLong(Sqe.SGL_ADDRESS) != 0 || length > inline) slot.status = Status.SGL_OFFSET_INVALID | Status.DNR;
            else if (length != pduDataLength) slot.status = Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
            if (slot.status != Status.SUCCESS || pduDataLength == 0) return null;
            if (ownsData(slot)) return dataOrFail(slot, pduDataLength);
            slot.dataLength = pduDataLength;
            if (!takeBuffer(slot)) return null;                            // status says why
            if (slot.hasBuffer()) return slot.data();
            // The group's share is used up: read nothing more until the pool serves this slot.
            held = slot;
            socket.pauseInput();
            return PduHandler.HOLD;
        }
        if (identifier != Sqe.SGL_TRANSPORT) {
            slot.status = Status.SGL_TYPE_INVALID | Status.DNR;
        } else if (pduDataLength != 0) {
            slot.status = Status.SGL_DATA_LENGTH_INVALID | Status.DNR;  // data without an in-capsule descriptor
        } else if (length > MAX_TRANSFER_BYTES) {
            slot.status = Status.INVALID_FIELD | Status.DNR;
        } else if (length > 0) {
            // The buffer is taken when the data is about to move: before the R2T, or before a read runs.
            if (!ownsData(slot)) slot.dataLength = (int) length;
            else if (dataOrFail(slot, (int) length) == null) return null;
            slot.awaitingData = direction == Sqe.DIRECTION_TO_CONTROLLER;
            slot.dataToHost = direction == Sqe.DIRECTION_TO_HOST;
        }
        return null;
    }

    /** A write whose data comes through R2T passes the policies before it gets a buffer and its R2T. */
    private boolean admittedFirst(CommandSlot slot) {
        return slot.awaitingData && !ownsData(slot) && Sqe.opcode(slot.sqe) == IoCommands.WRITE;
    }

    /** The engine admitted a data-later write (any thread): over to the loop. */
    void admitted(CommandSlot slot) {
        socket.loop().execute(() -> {
            IoRequest io = slot.dataLaterRequest();
            if (socket.isClosed()) {
                target.engine().abandon(io);             // its data will never come
                target.counters().increment(NvmeTcpCounter.ABORTED);
                return;
            }
            slot.admittedWaiting = true;
            takeBuffer(slot);
            if (!slot.hasBuffer()) return;               // the pool serves it later (bufferArrived)
            slot.event = CommandSlot.EVENT_R2T;
            queue(slot);
        });
    }

    /**
     * Commands whose small data lives in the slot itself, not in a tenant's pool share: the
     * admin queue's, and fabrics commands (Connect, AUTH_Send/Receive) on any queue.
     */
    private boolean ownsData(CommandSlot slot) {
        return qid <= 0 || Sqe.opcode(slot.sqe) == Sqe.OPCODE_FABRICS;
    }

    /**
     * Asks the slot's namespace group for the slot's data buffer: true with the buffer in the
     * slot, or true with the slot's waiter queued (the pool serves it later); false when the
     * command failed (no such namespace: status set).
     */
    private boolean takeBuffer(CommandSlot slot) {
        // A command already in the engine keeps the namespace it was submitted to, even if disabled since.
        ActiveNamespace ns = slot.namespace != null ? slot.namespace : controller.subsystem.table.find(Sqe.nsid(slot.sqe));
        if (ns == null) {
            slot.status = Status.INVALID_NAMESPACE | Status.DNR;
            return false;
        }
        PooledBuffer b = ns.buffers().take(slot.dataLength, slot.bufferWaiter);
        if (b != null) slot.data(b);
        return true;
    }

    /** False for a READ its namespace's backend always shares: it sends from the backend's memory, as NBD's do, and holds no pool share. */
    private boolean needsBuffer(CommandSlot slot) {
        if (ownsData(slot) || Sqe.opcode(slot.sqe) != IoCommands.READ || !offersViews(slot.dataLength)) return true;
        ActiveNamespace ns = controller.subsystem.table.find(Sqe.nsid(slot.sqe));
        return ns == null || !ns.sharesReads();
    }

    /** The pool served a slot's waiter, on the thread that released the memory: over to the loop. */
    void bufferAvailable(CommandSlot slot, PooledBuffer buffer) {
        socket.loop().execute(() -> bufferArrived(slot, buffer));
    }

    private void bufferArrived(CommandSlot slot, PooledBuffer buffer) {
        if (socket.isClosed() || (slot.phase != CommandSlot.RECEIVING && !slot.admittedWaiting)) {
            buffer.release();
            return;
        }
        ByteBuffer data = slot.data(buffer);
        if (slot == held) {
            held = null;
            decoder.resume(data);
            if (!issuerDelay.active()) socket.resumeInput();
        } else if (slot.awaitingData) {
            slot.event = CommandSlot.EVENT_R2T;
            queue(slot);
        } else {
            execute(slot);
        }
    }

    /**
     * The slot's data buffer, or null with the command failed with Internal Error when no memory
     * can be had (as nvmet fails a command whose data it cannot map): in-capsule data is then read
     * and dropped, the queue and its other commands go on.
     */
    private ByteBuffer dataOrFail(CommandSlot slot, int length) {
        try {
            return slot.data(length);
        } catch (OutOfMemoryError e) {
            slot.status = Status.INTERNAL;
            target.outOfMemory(e);
            return null;
        }
    }

    private void capsuleDone() {
        CommandSlot slot = current;
        current = null;
        if (slot == null) return;
        if (slot.status == Status.SUCCESS) slot.status = precheck(slot);
        if (slot.status == Status.SUCCESS && admittedFirst(slot)) {
            execute(slot);                               // buffer and R2T once the policies let it run (admitted)
            return;
        }
        if (slot.status == Status.SUCCESS && !slot.hasBuffer() && needsBuffer(slot) && takeBuffer(slot) && !slot.hasBuffer()) return;   // waits for the pool
        if (slot.status != Status.SUCCESS) {
            respond(slot);
        } else if (slot.awaitingData) {
            slot.event = CommandSlot.EVENT_R2T;
            queue(slot);
        } else {
            execute(slot);
        }
    }

    /** H2CData header: the transfer tag names the slot; offsets must run on without gaps. */
    private ByteBuffer dataHeader(ByteBuffer header, int pduDataLength) {
        int tag = header.getShort(Pdu.DATA_TTAG) & 0xffff;
        CommandSlot slot = tag < slotCount ? slots[tag] : null;
        if (slot == null || !slot.awaitingData || slot.commandId() != (header.getShort(Pdu.DATA_CCCID) & 0xffff)) {
            terminate(Pdu.FES_INVALID_HEADER_FIELD, Pdu.DATA_TTAG, header);
            return null;
        }
        if (!slot.r2tSent) {
            terminate(Pdu.FES_PDU_SEQUENCE_ERROR, Pdu.TYPE, header);     // data before its R2T
            return null;
        }
        int offset = header.getInt(Pdu.DATA_OFFSET);
        int length = header.getInt(Pdu.DATA_LENGTH);
        if (length != pduDataLength) {
            terminate(Pdu.FES_INVALID_HEADER_FIELD, Pdu.DATA_LENGTH, header);
            return null;
        }
        if (length > MAX_H2C_DATA) {
            terminate(Pdu.FES_DATA_LIMIT_EXCEEDED, Pdu.DATA_LENGTH, header);
            return null;
        }
        if (offset != slot.received || length > slot.dataLength - offset) {
            terminate(Pdu.FES_DATA_OUT_OF_RANGE, Pdu.DATA_OFFSET, header);
            return null;
        }
        current = slot;
        currentDataLength = length;
        return length > 0 ? slot.dataWindow(offset, length) : null;
    }

    private void dataDone() {
        CommandSlot slot = current;
        current = null;
        if (slot == null) return;
        slot.received += currentDataLength;
        if (slot.received < slot.dataLength) return;
        slot.awaitingData = false;
        ByteBuffer data = slot.data();                   // position 0, limit dataLength again
        IoRequest admitted = slot.admittedWaiting ? slot.dataLaterRequest() : null;
        if (admitted != null) {
            slot.admittedWaiting = false;
            target.engine().dispatchAdmitted(admitted.data(data));
            return;
        }
        execute(slot);
    }

    /**
     * Data that fails its digest is fatal, as in nvmet ({@code nvmet_tcp_fatal_error}): the
     * command never runs, the controller fails (CSTS.CFS, every queue closed) and the host
     * recovers by reconnecting and retrying; a queue without a controller yet just closes.
     */
    private void dataDigestError() {
        target.counters().increment(NvmeTcpCounter.DIGEST_ERRORS);
        decoder.halt();
        Controller c = controller;
        if (c != null) c.fatal();
        else socket.close(null);
    }

    /** Refuses commands this queue cannot run before their data is asked for. */
    private int precheck(CommandSlot slot) {
        if (controller == null) return Fabrics.precheckConnect(slot);
        if (QueueAuthentication.isExchange(slot)) return authentication.precheck(slot);
        if (!authentication.admits(slot)) return Status.AUTH_REQUIRED | Status.DNR;
        return qid == 0 ? AdminCommands.precheck(controller, slot) : io.precheck(controller, slot);
    }

    private void execute(CommandSlot slot) {
        Controller c = controller;
        if (c != null && QueueAuthentication.isExchange(slot)) {
            slot.phase = CommandSlot.ENGINE;             // DH: off the loop, which carries other hosts' queues
            authentication.submit(this, slot);
            return;
        }
        int status = c == null ? Fabrics.connect(this, slot)
                : qid == 0 ? AdminCommands.execute(c, this, slot)
                : io.execute(c, slot);
        if (status == PENDING) {
            if (slot.phase == CommandSlot.RECEIVING) slot.phase = CommandSlot.ENGINE;   // an AER, answered later
            return;
        }
        slot.status = status;
        respond(slot);
    }

    /** The slot's command is over: its buffer goes back to the pool and its tag to the free list. Loop thread. */
    private void free(CommandSlot slot) {
        slot.endSharedRead();
        slot.releaseBuffer();
        slot.phase = CommandSlot.FREE;
        freeTags[freeCount++] = slot.tag;
    }

    private CommandSlot takeSlot() {
        if (freeCount > 0) return slots[freeTags[--freeCount]];
        if (slotCount >= slotLimit) return null;
        CommandSlot slot = new CommandSlot(slotCount, this);
        slots[slotCount++] = slot;
        return slot;
    }

    /**
     * Connect succeeded: this connection is queue {@code queueId} of {@code c}. Loop thread,
     * before the Connect response is queued.
     *
     * @param queueSize SQSIZE + 1
     */
    public void connected(Controller c, int queueId, int queueSize, boolean disableSqFlowControl, QueueAuthentication auth) {
        this.authentication = auth;
        this.qid = queueId;
        this.sqSize = queueSize;
        this.sqHead = 1 % queueSize;
        this.sqFlowControlDisabled = disableSqFlowControl;
        this.slotLimit = Math.min(slots.length, 2 * queueSize);
        this.controller = c;
        connectLimit.cancel();
    }

    /**
     * Whether a command of this queue for namespace {@code nsid} is on the engine now. Any
     * thread, for preempt-and-abort's wait: a command that is missed has not yet read the
     * reservation, so it sees the preempt (CommandSlot#enterEngine).
     */
    boolean busyOn(int nsid) {
        CommandSlot[] all = slots;
        for (CommandSlot s : all) {
            if (s == null || s.phase != CommandSlot.ENGINE) continue;
            ActiveNamespace ns = s.namespace;
            if (ns != null && ns.nsid() == nsid) return true;
        }
        return false;
    }

    /**
     * Preempt-and-abort: this queue's commands on namespace {@code nsid} that a policy (io.max,
     * iocost, io.latency) still holds are dropped there and answered Abort Requested, never
     * having reached the backend; the future completes once done. Any thread; done on the
     * queue's loop, which owns the slots.
     * What is past the policies already is the reservation's drain's to wait for.
     */
    java.util.concurrent.CompletableFuture<Void> cancelHeld(int nsid) {
        java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();
        socket.loop().execute(() -> {
            try {
                for (int i = 0; i < slotCount; i++) {
                    CommandSlot slot = slots[i];
                    ActiveNamespace ns = slot.namespace;
                    if (slot.phase != CommandSlot.ENGINE || slot.admittedWaiting || ns == null || ns.nsid() != nsid) continue;
                    target.counters().add(NvmeTcpCounter.ABORTED, slot.cancel(target.engine()));
                }
            } finally {
                done.complete(null);
            }
        });
        return done;
    }

    /** Whether a READ of {@code length} bytes offers the backend views: not under a data digest, whose CRC needs the bytes in hand. */
    public boolean offersViews(long length) {
        return !dataDigest && SharedRead.fits(length);
    }

    /** Adds one command's numbers to the SMART counters. Loop thread. */
    public void count(int which, long bytes) {
        int bytesAt = which == COUNT_READS ? COUNT_BYTES_READ : COUNT_BYTES_WRITTEN;
        COUNTERS.setOpaque(counters, which, counters[which] + 1);
        COUNTERS.setOpaque(counters, bytesAt, counters[bytesAt] + bytes);
    }

    void addCounters(long[] sum) {
        for (int i = 0; i < sum.length; i++) sum[i] += (long) COUNTERS.getOpaque(counters, i);
    }

    // ---------------------------------------------------------------- completion side

    /** The command is done (status and result set): queue its response. Any thread. */
    void respond(CommandSlot slot) {
        Controller c = controller;
        if (slot.status != Status.SUCCESS && c != null) {
            c.recordError(qid, slot.commandId(), slot.status, slot.startLba, Sqe.nsid(slot.sqe));
        }
        slot.event = CommandSlot.EVENT_RESPONSE;
        slot.phase = CommandSlot.RESPONDING;
        queue(slot);
    }

    private void queue(CommandSlot slot) {
        responses.push(slot);
        EventLoop loop = socket.loop();
        if (decoding && loop.inLoop()) return;           // sent after the batch
        if (responses.armFlush()) loop.execute(flushTask);
    }

    private void flushTask() {
        responses.flushStarting();
        sendResponses();
        socket.flush();
    }

    /**
     * A fatal transport error: stop reading, send a C2HTermReq after what is already queued,
     * and close, as nvmet does.
     */
    private void terminate(int fes, int fei, ByteBuffer offendingHeader) {
        decoder.halt();
        if (terminating) return;
        terminating = true;
        target.counters().increment(NvmeTcpCounter.PROTOCOL_ERRORS);
        ByteBuffer term = ByteBuffer.allocate(Pdu.TERM_HLEN + Pdu.TERM_MAX_ERROR_HEADER).order(ByteOrder.LITTLE_ENDIAN);
        PduEncoder.termRequest(term, fes, fei, offendingHeader == null ? null : offendingHeader.duplicate().position(0));
        sendResponses();
        socket.send(term.flip());
        socket.endInput();
        socket.closeWhenFlushed();
    }

    /** Closes the socket; what is in flight completes unanswered. Any thread, idempotent, never blocks. */
    public void close() {
        socket.loop().execute(() -> socket.close(null));
    }

    @Override
    public void closed(io.iotarget.transport.Connection c, Throwable cause) {
        closed = true;
        if (cause instanceof io.iotarget.transport.FileRegionCutShortException) target.readPastShrunkFile(null);   // the transport logged it
        decoder.halt();
        if (connectLimit != null) connectLimit.cancel();
        port.connections.remove(this);
        Controller ctrl = controller;
        if (ctrl != null) ctrl.detach(qid, this);
        sendResponses();                                 // slots already done go back to the free list
        // Nobody will read an answer: what io.max or iocost still holds is dropped, what never
        // reached the engine (waiting for its buffer or its data) is freed here.
        for (int i = 0; i < slotCount; i++) {
            CommandSlot slot = slots[i];
            if (slot.phase == CommandSlot.ENGINE && slot.admittedWaiting) {
                slot.admittedWaiting = false;
                cancelWait(slot);
                target.engine().abandon(slot.dataLaterRequest());
                target.counters().increment(NvmeTcpCounter.ABORTED);
            } else if (slot.phase == CommandSlot.ENGINE && slot.namespace != null) {
                target.counters().add(NvmeTcpCounter.ABORTED, slot.cancel(target.engine()));
            }
            if (slot.phase == CommandSlot.RECEIVING) {
                slot.namespace = null;
                if (slot.bufferWaiter != null) cancelWait(slot);
                free(slot);
            }
        }
        held = null;
        for (TenantQueue q : pressureQueues.values()) target.engine().closeQueue(q);
        pressureQueues.clear();
    }

    /** This queue's io.pressure task in {@code group}, made on first use. Loop thread. */
    public TenantQueue pressureQueue(IoGroup group) {
        return pressureQueues.computeIfAbsent(group, g -> target.engine().newQueue(Group.of(g)));
    }

    /**
     * A command's namespace group owes an issuer delay (io.latency, iocost; any thread): this
     * queue reads nothing more from the socket for {@code delayNs}. What was already read is
     * still decoded, so up to one read's worth of commands may follow.
     */
    void delayInput(long delayNs) {
        issuerDelay.delay(delayNs);
    }

    /** Withdraws the slot's buffer wait; if it was already served, the buffer arrives on the loop and goes back. */
    private void cancelWait(CommandSlot slot) {
        ActiveNamespace ns = controller == null ? null : controller.subsystem.table.find(Sqe.nsid(slot.sqe));
        if (ns != null) ns.buffers().cancel(slot.bufferWaiter);
    }

    /** One line for operators: what the connection negotiated and which queue it is. Any thread. */
    String describe() {
        Controller c = controller;
        return "port=" + port.id + " peer=" + socket.describe() + " "
               + (c == null ? "unconnected" : "subsystem=" + c.subsystem.nqn + " cntlid=" + c.cntlid + " qid=" + qid + " host=" + c.hostNqn)
               + " hdgst=" + (headerDigest ? 1 : 0) + " ddgst=" + (dataDigest ? 1 : 0) + " sqflow=" + (sqFlowControlDisabled ? "off" : "on")
               + (c == null ? "" : " auth=" + authentication.describe());
    }

    // ---------------------------------------------------------------- output

    /** Encodes every queued slot onto the transport's output queue. Loop thread. */
    private void sendResponses() {
        for (CommandSlot slot; (slot = responses.poll()) != null; ) {
            if (socket.isClosed()) {
                if (slot.event == CommandSlot.EVENT_RESPONSE) free(slot);
                continue;
            }
            encode(slot);
        }
    }

    private void encode(CommandSlot slot) {
        int commandId = slot.commandId();
        if (slot.event == CommandSlot.EVENT_R2T) {
            ByteBuffer segment = slot.r2tHeader();
            encoder.r2t(segment, commandId, slot.tag, 0, slot.dataLength);
            socket.send(segment.flip());
            slot.r2tSent = true;
            return;
        }
        if (slot.status == Status.SUCCESS && !slot.shared.regionInsideFile()) readPastShrunkFile(slot);
        boolean data = slot.dataToHost && slot.status == Status.SUCCESS && slot.dataLength > 0;
        if (!data) {
            ByteBuffer segment = slot.responseHeader();
            response(segment, slot, commandId);
            socket.send(segment.flip(), slot.sent);
            return;
        }
        // With SQ flow control disabled and success, DATA_SUCCESS replaces the response capsule.
        boolean successFlag = sqFlowControlDisabled;
        SharedRead shared = slot.shared;
        ByteBuffer payload = shared.holdsData() ? null : slot.data();      // a shared read may have no buffer at all
        ByteBuffer header = slot.responseHeader();
        encoder.dataHeader(header, commandId, 0, slot.dataLength, true, successFlag, dataDigest);
        boolean trailer = dataDigest || !successFlag;
        Runnable last = trailer ? null : slot.sent;
        socket.send(header.flip());
        if (shared.region() != null) {
            socket.sendFile(shared.region(), shared.regionPosition(), slot.dataLength, last);
        } else if (shared.viewCount() > 0) {
            int n = shared.views(viewParts, 0);
            for (int i = 0; i < n; i++) socket.send(viewParts[i], i == n - 1 ? last : null);
            java.util.Arrays.fill(viewParts, 0, n, null);
        } else {
            socket.send(payload, last);
        }
        if (!trailer) return;
        ByteBuffer tail = slot.trailer();
        if (dataDigest) tail.putInt(encoder.dataDigest(payload));
        if (!successFlag) response(tail, slot, commandId);
        socket.send(tail.flip(), slot.sent);
    }

    /**
     * The file behind the read's region shrank since the read: nothing of the response is queued
     * yet, so the host hears Internal Error (what EIO is, {@link Status#of}) instead of data it
     * would not get. Once the data header is queued, a shrink can only end the connection
     * ({@link io.iotarget.transport.FileRegionCutShortException}). The region stays held until
     * the response is sent, as for any shared read ({@link CommandSlot#endSharedRead}).
     */
    private void readPastShrunkFile(CommandSlot slot) {
        slot.status = Status.of(IoStatus.IO_ERROR);
        Controller c = controller;
        if (c != null) c.recordError(qid, slot.commandId(), slot.status, slot.startLba, Sqe.nsid(slot.sqe));
        target.readPastShrunkFile(socket.describe() + ": queue " + qid + ": READ of " + slot.dataLength + " bytes at LBA " + slot.startLba
                                  + " answered Internal Error: its file shrank below it before the response");
    }

    private void response(ByteBuffer segment, CommandSlot slot, int commandId) {
        int head = sqFlowControlDisabled ? 0xFFFF : sqHead;
        encoder.capsuleResponse(segment, slot.result, head, Math.max(qid, 0), commandId, slot.status);
    }

    /**
     * The slot's response is on the wire (or dropped with the connection): its tag is free
     * again. A failed authentication's Failure1 is out, so now its queue closes. Loop thread.
     */
    void sent(CommandSlot slot) {
        free(slot);
        if (!slot.closesQueue) return;
        target.counters().increment(NvmeTcpCounter.AUTHENTICATION_FAILURES);
        socket.close(null);
    }

    /** The authentication deadline passed (timer thread): an open queue that has not authenticated closes. */
    void authenticationExpired() {
        socket.loop().execute(() -> {
            if (socket.isClosed() || !authenticating()) return;
            target.counters().increment(NvmeTcpCounter.AUTHENTICATION_FAILURES);
            socket.close(null);
        });
    }

    /** The connection has closed (volatile: for the DH threads, which skip a closed queue's work). Any thread. */
    boolean isClosed() {
        return closed;
    }

    /** This queue must authenticate and has not yet. Any thread. */
    boolean authenticating() {
        QueueAuthentication a = authentication;
        return a != null && a.authenticating();
    }
}
