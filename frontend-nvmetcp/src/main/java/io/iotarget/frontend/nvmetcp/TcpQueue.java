package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.config.Port;
import io.iotarget.frontend.nvmetcp.pdu.Pdu;
import io.iotarget.frontend.nvmetcp.pdu.PduDecoder;
import io.iotarget.frontend.nvmetcp.pdu.PduEncoder;
import io.iotarget.frontend.nvmetcp.pdu.PduHandler;
import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.model.SharedRead;
import io.iotarget.transport.Connection;
import io.iotarget.transport.ConnectionHandler;
import io.iotarget.transport.EventLoop;
import io.iotarget.transport.FileRegionCutShortException;
import io.iotarget.transport.IssuerDelay;
import io.iotarget.transport.PskKeys;
import io.iotarget.transport.TlsPsk;

import javax.net.ssl.SSLException;
import javax.net.ssl.SSLPeerUnverifiedException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * The NVMe/TCP side of one connection, as nvmet's {@code nvmet_tcp_queue}: the TLS first byte,
 * ICReq/ICResp and the digests, PDU framing, a command capsule's SGL and in-capsule data, R2T and
 * H2CData, and the encoding of responses (capsules, C2HData, R2T) onto the transport. What the
 * commands are, which slot and buffer they take, and where they go is its {@link Queue}'s (the
 * submission queue, nvmet's {@code nvmet_sq}).
 *
 * <pre>
 *  loop: socket bytes ─► PduDecoder ─► onHeader/onPdu ─► Queue (slot, route, buffer)
 *  loop: ◄─ SlotQueue (MPSC) ◄── queue(slot) ◄── Queue.respond / R2T, any thread
 *        encode into the slot's own header buffers ─► transport output queue (gathering write)
 *        ─► slot.sent: tag back to the free list once the response is on the wire
 * </pre>
 *
 * <p>Threads: everything runs on the connection's event loop, except {@link #queue} (any
 * thread: a completion queues its slot and schedules one flush task on the loop, so an engine
 * thread never touches the socket) and {@link #close} (any thread). A host that has not finished
 * Connect within {@link #CONNECT_LIMIT_NS} of TCP accept is disconnected.
 */
final class TcpQueue implements PduHandler, ConnectionHandler {
    /** MAXH2CDATA in ICResp: H2CData PDUs carry at most this much; a 1 MiB write takes 8. */
    static final int MAX_H2C_DATA = 128 * 1024;
    /** NVME_TCP_ADMIN_CCSZ: in-capsule data on the admin queue (and before Connect). */
    static final int ADMIN_INLINE_DATA_BYTES = 8192;
    /**
     * From TCP accept to a finished Connect: a host that says nothing, or stops half way, must
     * not hold a connection for ever (as NBD's handshake limit; a real host connects in
     * milliseconds, a guest under emulation in well under a second).
     */
    static final long CONNECT_LIMIT_NS = 10_000_000_000L;
    /** TLS record type of a handshake: the first byte of a ClientHello. */
    private static final byte TLS_HANDSHAKE_RECORD = 0x16;

    private final NvmeTarget target;
    private final Port port;
    private final Connection socket;
    /** The submission queue this connection carries. */
    final Queue sq;
    private final PduDecoder decoder = new PduDecoder(this);
    private final SlotQueue responses = new SlotQueue();
    private final Runnable flushTask = this::flushTask;
    /** Input paused for the tenant's issuer delay. */
    private final IssuerDelay issuerDelay;

    // Loop thread only.
    /** Whether the queue is past choosing plaintext or TLS (a port with TLS not required lets the host's first byte decide). */
    private boolean channelChosen;
    private CommandSlot current;
    private int currentDataLength;
    private boolean initialized;
    /** Inside decode(): responses queued meanwhile are sent once, after the batch. */
    private boolean decoding;
    private EventLoop.Timeout connectLimit;
    private PduEncoder encoder;
    private boolean headerDigest;
    /** Written once by ICReq on the loop, before any command; read by the submission queue on the loop. */
    private boolean dataDigest;
    /** A shared read's buffers on their way into the send queue. */
    private final ByteBuffer[] viewParts = new ByteBuffer[SharedRead.MAX_VIEWS];
    private boolean terminating;
    /** The slot whose in-capsule data the decoder holds back until the pool serves its buffer. */
    private CommandSlot held;

    TcpQueue(NvmeTarget target, Port port, Connection socket) {
        this.target = target;
        this.port = port;
        this.socket = socket;
        this.sq = new Queue(target, port, this);
        this.issuerDelay = new IssuerDelay(socket, () -> terminating, () -> {
            if (held == null) socket.resumeInput();
        });
    }

    @Override
    public void opened(Connection c) {
        channelChosen = !port.tls;
        connectLimit = socket.loop().schedule(CONNECT_LIMIT_NS, () -> {
            if (sq.controller() == null) socket.close(null);
        });
    }

    /** Connect named the queue: the limit from accept no longer applies. Loop thread. */
    void connected() {
        connectLimit.cancel();
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

    /** The PSK identity this connection's host proved over TLS, or null: plaintext. */
    String tlsIdentity() {
        var session = socket.tlsSession();
        try {
            return session != null && session.getPeerPrincipal() instanceof TlsPsk.Identity id ? id.name() : null;
        } catch (SSLPeerUnverifiedException e) {
            return null;
        }
    }

    // ---------------------------------------------------------------- input

    @Override
    public void received(Connection c, ByteBuffer in) {
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
    public void inputEnded(Connection c) {
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
        CommandSlot slot = sq.takeSlot();
        if (slot == null) {
            terminate(Pdu.FES_PDU_SEQUENCE_ERROR, Pdu.TYPE, header);   // more commands than the queue holds
            return null;
        }
        current = slot;
        slot.begin(header, Pdu.CAPSULE_SQE);
        sq.taken();
        ByteBuffer sqe = slot.sqe;
        if ((sqe.get(Sqe.FLAGS) & 0xff) != Sqe.FLAGS_SGL) {
            slot.status = Status.INVALID_FIELD | Status.DNR;           // PRPs or fused operations
            return null;
        }
        int identifier = sqe.get(Sqe.SGL_IDENTIFIER) & 0xff;
        long length = Integer.toUnsignedLong(sqe.getInt(Sqe.SGL_LENGTH));
        int direction = Sqe.direction(sqe);
        if (identifier == Sqe.SGL_IN_CAPSULE) {
            int inline = sq.qid() > 0 ? port.inlineDataBytes() : ADMIN_INLINE_DATA_BYTES;
            if (direction != Sqe.DIRECTION_TO_CONTROLLER) slot.status = Status.INVALID_FIELD | Status.DNR;
            else if (sqe.getLong(Sqe.SGL_ADDRESS) != 0 || length > inline) slot.status = Status.SGL_OFFSET_INVALID | Status.DNR;
            else if (length != pduDataLength) slot.status = Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
            if (slot.status != Status.SUCCESS || pduDataLength == 0) return null;
            if (sq.ownsData(slot)) return sq.dataOrFail(slot, pduDataLength);
            slot.dataLength = pduDataLength;
            if (!sq.takeBuffer(slot)) return null;                         // status says why
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
        } else if (length > Sqe.MAX_TRANSFER_BYTES) {
            slot.status = Status.INVALID_FIELD | Status.DNR;
        } else if (length > 0) {
            // The buffer is taken when the data is about to move: before the R2T, or before a read runs.
            if (!sq.ownsData(slot)) slot.dataLength = (int) length;
            else if (sq.dataOrFail(slot, (int) length) == null) return null;
            slot.awaitingData = direction == Sqe.DIRECTION_TO_CONTROLLER;
            slot.dataToHost = direction == Sqe.DIRECTION_TO_HOST;
        }
        return null;
    }

    private void capsuleDone() {
        CommandSlot slot = current;
        current = null;
        if (slot != null) sq.capsuleReceived(slot);
    }

    /**
     * The pool served the slot whose in-capsule data the decoder holds back: the decoder reads
     * on into {@code data}. False when the slot was not held. Loop thread.
     */
    boolean resumeHeld(CommandSlot slot, ByteBuffer data) {
        if (slot != held) return false;
        held = null;
        decoder.resume(data);
        if (!issuerDelay.active()) socket.resumeInput();
        return true;
    }

    /** H2CData header: the transfer tag names the slot; offsets must run on without gaps. */
    private ByteBuffer dataHeader(ByteBuffer header, int pduDataLength) {
        int tag = header.getShort(Pdu.DATA_TTAG) & 0xffff;
        CommandSlot slot = sq.slot(tag);
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
        sq.dataReceived(slot);
    }

    /**
     * Data that fails its digest is fatal, as in nvmet ({@code nvmet_tcp_fatal_error}): the
     * command never runs, the controller fails (CSTS.CFS, every queue closed) and the host
     * recovers by reconnecting and retrying; a queue without a controller yet just closes.
     */
    private void dataDigestError() {
        target.counters().increment(NvmeTcpCounter.DIGEST_ERRORS);
        decoder.halt();
        Controller c = sq.controller();
        if (c != null) c.fatal();
        else socket.close(null);
    }

    /**
     * A command's namespace group owes an issuer delay (io.latency, iocost; any thread): this
     * connection reads nothing more from the socket for {@code delayNs}. What was already read is
     * still decoded, so up to one read's worth of commands may follow.
     */
    void delayInput(long delayNs) {
        issuerDelay.delay(delayNs);
    }

    /** Whether a data digest covers C2HData: its CRC needs the bytes in hand, so a READ offers the backend no views. Loop thread. */
    boolean dataDigest() {
        return dataDigest;
    }

    // ---------------------------------------------------------------- completion side

    /** Queues the slot's response (or its R2T, by {@code slot.event}) for the loop to encode. Any thread. */
    void queue(CommandSlot slot) {
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

    /** Runs {@code task} on the connection's loop. Any thread. */
    void onLoop(Runnable task) {
        socket.loop().execute(task);
    }

    /** Whether the transport has closed the connection. */
    boolean socketClosed() {
        return socket.isClosed();
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
    void close() {
        socket.loop().execute(() -> socket.close(null));
    }

    /** Closes the socket now. Loop thread. */
    void closeNow() {
        socket.close(null);
    }

    @Override
    public void closed(Connection c, Throwable cause) {
        sq.closing();
        if (cause instanceof FileRegionCutShortException) target.readPastShrunkFile(null);   // the transport logged it
        decoder.halt();
        if (connectLimit != null) connectLimit.cancel();
        sq.closed();
        held = null;
    }

    /** The negotiated digests, for {@link Queue#describe}. */
    String digests() {
        return "hdgst=" + (headerDigest ? 1 : 0) + " ddgst=" + (dataDigest ? 1 : 0);
    }

    /** The host and port at the other end, for log lines. Any thread. */
    String peer() {
        return socket.describe();
    }

    // ---------------------------------------------------------------- output

    /** Encodes every queued slot onto the transport's output queue. Loop thread. */
    void sendResponses() {
        for (CommandSlot slot; (slot = responses.poll()) != null; ) {
            if (socket.isClosed()) {
                if (slot.event == CommandSlot.EVENT_RESPONSE) sq.free(slot);
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
        if (slot.status == Status.SUCCESS && !slot.shared.regionInsideFile()) sq.readPastShrunkFile(slot);
        boolean data = slot.dataToHost && slot.status == Status.SUCCESS && slot.dataLength > 0;
        if (!data) {
            ByteBuffer segment = slot.responseHeader();
            response(segment, slot, commandId);
            socket.send(segment.flip(), slot.sent);
            return;
        }
        // With SQ flow control disabled and success, DATA_SUCCESS replaces the response capsule.
        boolean successFlag = sq.sqFlowControlDisabled();
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
            Arrays.fill(viewParts, 0, n, null);
        } else {
            socket.send(payload, last);
        }
        if (!trailer) return;
        ByteBuffer tail = slot.trailer();
        if (dataDigest) tail.putInt(encoder.dataDigest(payload));
        if (!successFlag) response(tail, slot, commandId);
        socket.send(tail.flip(), slot.sent);
    }

    private void response(ByteBuffer segment, CommandSlot slot, int commandId) {
        encoder.capsuleResponse(segment, slot.result, sq.responseHead(), Math.max(sq.qid(), 0), commandId, slot.status);
    }
}
