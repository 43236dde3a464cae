package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.pdu.Pdu;
import io.iotarget.frontend.nvmetcp.pdu.PduDecoder;
import io.iotarget.frontend.nvmetcp.pdu.PduEncoder;
import io.iotarget.frontend.nvmetcp.pdu.PduHandler;

import java.io.IOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.util.concurrent.locks.LockSupport;

/**
 * One NVMe/TCP connection, which is one queue (the admin queue or an IO queue) once Connect
 * has named it.
 *
 * <pre>
 *  socket ─► reader (thread) ─► PduDecoder ─► onHeader/onPdu ─► CommandSlot
 *                                                  │ admin: run inline
 *                                                  │ IO: engine.submit ─► completion, any thread
 *            writer (thread) ◄─ SlotQueue ◄────────┴─ respond(slot) / R2T
 *  socket ◄─ gathering write of headers (segments) and data buffers; tags back to FreeTags
 * </pre>
 *
 * <p>Threads: the reader owns the receive side, the decoder and the slots it fills; the writer
 * owns the send side (encoder, segments, gather list) and returns tags; completions on other
 * threads only push a slot and maybe unpark the writer, so an engine thread never blocks on a
 * socket. Before ICResp is out the reader owns both directions and the writer does not exist.
 * {@link #close} may be called from any thread.
 *
 * <p>Reader and writer are platform threads: a queue is long-lived and always busy, and
 * measured against virtual threads (bench/results/nvme.md) they give ~25 % more IOPS at
 * QD32, a fifth of the p99 latency, and no allocation at all, where a virtual thread's every
 * blocking socket read registers with the JDK's poller (11 bytes per IO at QD32, 191 at QD1).
 */
final class Connection implements PduHandler {
    /** Returned by command handlers that respond later (IO, AER). */
    static final int PENDING = -1;
    /** MAXH2CDATA in ICResp: H2CData PDUs carry at most this much; a 1 MiB write takes 8. */
    static final int MAX_H2C_DATA = 128 * 1024;
    /** NVME_TCP_ADMIN_CCSZ: in-capsule data on the admin queue (and before Connect). */
    static final int ADMIN_INLINE_DATA_BYTES = 8192;
    /** Identify MDTS = 8 (2^8 pages of 4 KiB): the largest transfer of one command. */
    static final int MDTS = 8;
    static final int MAX_TRANSFER_BYTES = 4096 << MDTS;

    private static final int RECEIVE_BYTES = 256 * 1024;
    /** A send segment holds the headers around one command's data: C2HData header, data digest, response. */
    private static final int SEGMENT_BYTES = 64;
    private static final int SEGMENTS = 256;
    /** Flush before the gather list could exceed IOV_MAX. */
    private static final int GATHER_MAX = 1000;
    private static final VarHandle COUNTERS = MethodHandles.arrayElementVarHandle(long[].class);
    static final int COUNT_READS = 0, COUNT_WRITES = 1, COUNT_BYTES_READ = 2, COUNT_BYTES_WRITTEN = 3;

    final NvmeTarget target;
    final Port port;
    private final SocketChannel channel;
    private final PduDecoder decoder = new PduDecoder(this);
    private final ByteBuffer receive = ByteBuffer.allocateDirect(RECEIVE_BYTES);
    private final SlotQueue responses = new SlotQueue();
    private final FreeTags freeTags;
    private final CommandSlot[] slots;
    private final IoCommands io;
    /** SMART counters, written by the reader (opaque) and summed by the admin queue. */
    private final long[] counters = new long[4];

    // Reader state.
    private Thread reader;
    private int slotCount;
    private int slotLimit = 2;          // until Connect names the queue size: the Connect itself
    private CommandSlot current;
    private int currentDataLength;
    private boolean initialized;
    /** The reader is inside decode(): its own pushes wake the writer once, after the batch. */
    private boolean decoding;

    // Fixed by ICReq before the writer starts (Thread.start publishes them).
    private volatile boolean headerDigest;
    private volatile boolean dataDigest;
    private PduEncoder encoder;
    private Thread writer;

    // Fixed by Connect on the reader; read by the writer and other queues.
    private volatile QueueAuthentication authentication;
    private volatile Controller controller;
    private volatile int qid = -1;
    private volatile boolean sqFlowControlDisabled;
    private int sqSize = 1;
    /** SQHD: advanced by the reader per command, reported by the writer. */
    private volatile int sqHead;

    // Writer state.
    private final ByteBuffer segmentMemory = ByteBuffer.allocateDirect(SEGMENT_BYTES * SEGMENTS).order(ByteOrder.LITTLE_ENDIAN);
    private final ByteBuffer[] segments = new ByteBuffer[SEGMENTS];
    private final ByteBuffer[] gather = new ByteBuffer[GATHER_MAX + 4];
    private final int[] tagsToFree = new int[GATHER_MAX];
    private int gatherCount;
    private int segmentsUsed;
    private int tagsToFreeCount;
    /** A response marked {@link CommandSlot#failsController} is in the gather list. */
    private boolean failAfterFlush;

    private volatile boolean writerIdle;
    private volatile boolean closed;
    private volatile ByteBuffer termination;

    Connection(NvmeTarget target, Port port, SocketChannel channel) {
        this.target = target;
        this.port = port;
        this.channel = channel;
        int maxSlots = 2 * Port.DEFAULT_MAX_QUEUE_SIZE;
        this.slots = new CommandSlot[maxSlots];
        this.freeTags = new FreeTags(maxSlots);
        this.io = new IoCommands(target.engine(), this);
        for (int i = 0; i < SEGMENTS; i++) {
            segments[i] = segmentMemory.slice(i * SEGMENT_BYTES, SEGMENT_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        }
    }

    void start() {
        reader = Thread.ofPlatform().daemon().name("nvmet-port" + port.id + "-reader").start(this::readLoop);
    }

    Controller controller() {
        return controller;
    }

    int qid() {
        return qid;
    }

    // ---------------------------------------------------------------- reader

    private void readLoop() {
        try {
            while (!closed && !decoder.halted()) {
                receive.clear();
                if (channel.read(receive) < 0) break;
                receive.flip();
                decoding = true;
                decoder.decode(receive);
                decoding = false;
                if (writerIdle) LockSupport.unpark(writer);
            }
        } catch (IOException e) {
            // The host went away or the connection was closed under us.
        } finally {
            if (termination == null) close();       // else the writer closes once the C2HTermReq is out
            port.connections.remove(this);
            Controller c = controller;
            if (c != null) c.detach(qid, this);
        }
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
                decoder.halt();
                close();
            }
            default -> throw new IllegalStateException("decoder delivered PDU type " + header.get(Pdu.TYPE));
        }
    }

    @Override
    public void onFatal(int fes, int fei) {
        terminate(fes, fei, null);
    }

    /** ICReq: check it, answer with ICResp (the reader still owns the send side), start the writer. */
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
        response.flip();
        try {
            while (response.hasRemaining()) channel.write(response);
        } catch (IOException e) {
            decoder.halt();
            close();
            return;
        }
        initialized = true;
        writer = Thread.ofPlatform().daemon().name("nvmet-port" + port.id + "-writer").start(this::writeLoop);
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
            return slot.status == Status.SUCCESS && pduDataLength > 0 ? slot.data(pduDataLength) : null;
        }
        if (identifier != Sqe.SGL_TRANSPORT) {
            slot.status = Status.SGL_TYPE_INVALID | Status.DNR;
        } else if (pduDataLength != 0) {
            slot.status = Status.SGL_DATA_LENGTH_INVALID | Status.DNR;  // data without an in-capsule descriptor
        } else if (length > MAX_TRANSFER_BYTES) {
            slot.status = Status.INVALID_FIELD | Status.DNR;
        } else if (length > 0) {
            slot.data((int) length);
            slot.awaitingData = direction == Sqe.DIRECTION_TO_CONTROLLER;
            slot.dataToHost = direction == Sqe.DIRECTION_TO_HOST;
        }
        return null;
    }

    private void capsuleDone() {
        CommandSlot slot = current;
        current = null;
        if (slot == null) return;
        if (slot.status == Status.SUCCESS) slot.status = precheck(slot);
        if (slot.status != Status.SUCCESS) {
            respond(slot);
        } else if (slot.awaitingData) {
            slot.event = CommandSlot.EVENT_R2T;
            push(slot);
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
        slot.data();                                     // position 0, limit dataLength again
        execute(slot);
    }

    /**
     * Data that fails its digest is fatal, as in nvmet ({@code nvmet_tcp_fatal_error}): the
     * command never runs, the controller fails (CSTS.CFS, every queue closed) and the host
     * recovers by reconnecting and retrying; a queue without a controller yet just closes.
     */
    private void dataDigestError() {
        decoder.halt();
        Controller c = controller;
        if (c != null) c.fatal();
        else close();
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
        int status = c == null ? Fabrics.connect(this, slot)
                : QueueAuthentication.isExchange(slot) ? authentication.execute(slot)
                : qid == 0 ? AdminCommands.execute(c, this, slot)
                : io.execute(c, slot);
        if (status == PENDING) return;
        slot.status = status;
        respond(slot);
    }

    private CommandSlot takeSlot() {
        int tag = freeTags.poll();
        if (tag >= 0) return slots[tag];
        if (slotCount >= slotLimit) return null;
        CommandSlot slot = new CommandSlot(slotCount, this);
        slots[slotCount++] = slot;
        return slot;
    }

    /**
     * Connect succeeded: this connection is queue {@code queueId} of {@code c}. Reader thread,
     * before the Connect response is queued.
     *
     * @param queueSize SQSIZE + 1
     */
    void connected(Controller c, int queueId, int queueSize, boolean disableSqFlowControl, QueueAuthentication auth) {
        this.authentication = auth;
        this.qid = queueId;
        this.sqSize = queueSize;
        this.sqHead = 1 % queueSize;
        this.sqFlowControlDisabled = disableSqFlowControl;
        this.slotLimit = Math.min(slots.length, 2 * queueSize);
        this.controller = c;
    }

    /** Adds one command's numbers to the SMART counters. Reader thread. */
    void count(int which, long bytes) {
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
        push(slot);
    }

    private void push(CommandSlot slot) {
        responses.push(slot);
        if (decoding && Thread.currentThread() == reader) return;       // woken after the batch
        if (writerIdle) LockSupport.unpark(writer);
    }

    /**
     * A fatal transport error: stop reading, send a C2HTermReq and close, as nvmet does. The
     * writer sends it after what is already queued.
     */
    private void terminate(int fes, int fei, ByteBuffer offendingHeader) {
        decoder.halt();
        ByteBuffer term = ByteBuffer.allocateDirect(Pdu.TERM_HLEN + Pdu.TERM_MAX_ERROR_HEADER).order(ByteOrder.LITTLE_ENDIAN);
        PduEncoder.termRequest(term, fes, fei, offendingHeader == null ? null : offendingHeader.duplicate().position(0));
        term.flip();
        if (writer == null) {
            try {
                while (term.hasRemaining()) channel.write(term);
            } catch (IOException e) {
                // closing anyway
            }
            close();
            return;
        }
        termination = term;
        if (writerIdle) LockSupport.unpark(writer);
    }

    /** Closes the socket; the reader and writer notice and end. Any thread, idempotent, never blocks. */
    void close() {
        if (closed) return;
        closed = true;
        try {
            channel.close();
        } catch (IOException e) {
            // already gone
        }
        Thread w = writer;
        if (w != null) LockSupport.unpark(w);
    }

    /** One line for operators: what the connection negotiated and which queue it is. Any thread. */
    String describe() {
        Controller c = controller;
        return "port=" + port.id + " " + (c == null ? "unconnected" : "subsystem=" + c.subsystem.nqn + " cntlid=" + c.cntlid + " qid=" + qid
                + " host=" + c.hostNqn) + " hdgst=" + (headerDigest ? 1 : 0) + " ddgst=" + (dataDigest ? 1 : 0)
               + " sqflow=" + (sqFlowControlDisabled ? "off" : "on") + (c == null ? "" : " auth=" + authentication.describe());
    }

    // ---------------------------------------------------------------- writer

    private void writeLoop() {
        try {
            while (true) {
                CommandSlot slot = responses.poll();
                if (slot != null) {
                    encode(slot);
                    if (gatherCount >= GATHER_MAX || segmentsUsed >= SEGMENTS - 2) flush();
                    continue;
                }
                if (gatherCount > 0) {
                    flush();
                    continue;
                }
                if (closed) return;
                ByteBuffer term = termination;
                if (term != null) {
                    while (term.hasRemaining()) channel.write(term);
                    close();
                    return;
                }
                writerIdle = true;
                if (responses.isEmpty() && !closed && termination == null) LockSupport.park(this);
                writerIdle = false;
            }
        } catch (IOException e) {
            close();
        }
    }

    private void encode(CommandSlot slot) {
        failAfterFlush |= slot.failsController;
        ByteBuffer segment = segments[segmentsUsed++].clear();
        int commandId = slot.commandId();
        if (slot.event == CommandSlot.EVENT_R2T) {
            encoder.r2t(segment, commandId, slot.tag, 0, slot.dataLength);
            gather[gatherCount++] = segment.flip();
            slot.r2tSent = true;
            return;
        }
        boolean data = slot.dataToHost && slot.status == Status.SUCCESS && slot.dataLength > 0;
        if (data) {
            // With SQ flow control disabled and success, DATA_SUCCESS replaces the response capsule.
            boolean successFlag = sqFlowControlDisabled;
            ByteBuffer payload = slot.data();
            encoder.dataHeader(segment, commandId, 0, slot.dataLength, true, successFlag, dataDigest);
            gather[gatherCount++] = segment.flip();
            gather[gatherCount++] = payload;
            if (dataDigest || !successFlag) segment = segments[segmentsUsed++].clear();
            if (dataDigest) segment.putInt(encoder.dataDigest(payload));
            if (!successFlag) response(segment, slot, commandId);
            if (dataDigest || !successFlag) gather[gatherCount++] = segment.flip();
        } else {
            response(segment, slot, commandId);
            gather[gatherCount++] = segment.flip();
        }
        tagsToFree[tagsToFreeCount++] = slot.tag;
    }

    private void response(ByteBuffer segment, CommandSlot slot, int commandId) {
        int head = sqFlowControlDisabled ? 0xFFFF : sqHead;
        encoder.capsuleResponse(segment, slot.result, head, Math.max(qid, 0), commandId, slot.status);
    }

    private void flush() throws IOException {
        int first = 0;
        while (first < gatherCount) {
            channel.write(gather, first, gatherCount - first);
            while (first < gatherCount && !gather[first].hasRemaining()) gather[first++] = null;
        }
        gatherCount = 0;
        segmentsUsed = 0;
        for (int i = 0; i < tagsToFreeCount; i++) freeTags.offer(tagsToFree[i]);
        tagsToFreeCount = 0;
        if (failAfterFlush) {
            failAfterFlush = false;
            Controller c = controller;                   // a failed authentication: its Failure1 is out, now the controller goes
            if (c != null) c.fatal();
            else close();
        }
    }
}
