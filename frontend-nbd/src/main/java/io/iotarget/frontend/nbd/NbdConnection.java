package io.iotarget.frontend.nbd;

import io.iotarget.buffer.BufferAccount;
import io.iotarget.buffer.BufferWaiter;
import io.iotarget.buffer.PooledBuffer;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.HostIdentity;
import io.iotarget.iocontrol.pressure.TenantQueue;
import io.iotarget.model.ControlException;
import io.iotarget.model.IoCallback;
import io.iotarget.model.IoRequest;
import io.iotarget.model.LogText;
import io.iotarget.transport.Connection;
import io.iotarget.transport.ConnectionHandler;
import io.iotarget.transport.EventLoop;
import io.iotarget.transport.FileRegionCutShortException;
import io.iotarget.transport.IssuerDelay;

import javax.net.ssl.SSLException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * One client session on one transport {@link Connection}: the handshake, then pipelined
 * requests with replies in completion order.
 *
 * <h2>Threads</h2>
 * Everything runs on the connection's event loop except {@link #complete}: the loop decodes
 * requests, turns each into an {@link IoRequest} ({@link NbdCommands}) and submits it. A request
 * nothing delays completes during {@code engine.submit}, on the loop itself; its reply is queued
 * and sent, with every other reply that is ready, in one gathering write when the loop has
 * decoded what had arrived. Requests that finish on other threads (io.max's releaser, a file
 * backend's completion thread) push their command onto a lock-free stack and schedule one flush
 * task on the loop; that thread never touches the socket, so a slow client cannot stall it.
 *
 * <h2>What a client can hold</h2>
 * At most {@link #MAX_IN_FLIGHT} commands (input pauses until a reply frees one); their data
 * buffers, taken from its export group's share of the engine's buffer pool — when the share
 * is used up the connection stops reading (TCP backpressure) until one of the group's buffers
 * comes back; and its queued replies, for no longer than the transport's send timeout.
 *
 * <h2>Ending</h2>
 * A client that has not finished negotiating — its TLS handshake included — within the
 * server's handshake limit is disconnected. NBD_CMD_DISC, end of stream, or {@link #shutdown()} (export disabled, server
 * closing) stop the decoding; requests in flight still finish and get their replies, then the
 * socket closes. A WRITE whose payload never fully arrives never runs. A request header with a
 * bad magic cannot be resynchronised: the connection closes at once. The export's device and
 * group stay held until the last request of the connection has finished, whatever the ending.
 */
final class NbdConnection implements ConnectionHandler, IoCallback {
    /** Requests in flight per connection: above the kernel client's 128 tags and nbdcopy's 64. */
    static final int MAX_IN_FLIGHT = 256;
    /** Payloads at least this large are read from the socket straight into their buffer. */
    static final int DIRECT_PAYLOAD_BYTES = 64 * 1024;
    /** Decoded headers and payloads after which what is done is sent, even with more input to decode. */
    static final int EAGER_FLUSH_EVENTS = 8;

    private enum Phase { NEGOTIATING, TRANSMITTING, CLOSED }

    private final NbdServer server;
    private final Engine engine;
    private final Connection connection;
    private final Negotiation negotiation;
    private final OptionDecoder options = new OptionDecoder();
    private final RequestDecoder decoder = new RequestDecoder();
    private final FinishedCommands finished = new FinishedCommands();
    private final Runnable flushTask = this::flushTask;
    /** Reply buffers of one command, handed to the connection's output queue. */
    private final ByteBuffer[] replyParts = new ByteBuffer[io.iotarget.model.SharedRead.MAX_VIEWS + 2];

    // Loop thread only.
    private Phase phase = Phase.NEGOTIATING;
    private EventLoop.Timeout handshakeLimit;
    private NbdCommands commands;
    private ExportTree.Hold hold;
    /** The client's own group under cgroup_per_host, bound until the hold goes; null otherwise. */
    private Group hostGroup;
    private Command free;
    /** Every command this connection made, free or not. */
    private final Command[] made = new Command[MAX_IN_FLIGHT];
    private int allocated;
    private int inFlight;
    private Command pendingWrite;
    private boolean decoding;
    /** No more requests are taken: DISC, end of stream, shutdown. */
    private boolean ending;
    private boolean pausedForCommands;
    /** Input paused for the tenant's issuer delay. */
    private final IssuerDelay issuerDelay;
    /** The export group's share of the buffer pool. */
    private BufferAccount buffers;
    /** Input is paused until {@link #bufferWaiter} is served. */
    private boolean waitingForBuffer;
    /** A buffer the pool handed over for the request header input was paused on. */
    private PooledBuffer reserved;
    /** Called by the pool on whichever thread released the memory. */
    private final BufferWaiter bufferWaiter = this::bufferAvailable;
    /** The device shares its memory with reads: a READ needs no buffer. */
    private boolean sharedReads;
    /** This connection as io.pressure's task in the export's group, from transmission to the last reply. */
    private TenantQueue queue;

    NbdConnection(NbdServer server, Engine engine, Connection connection, String refusal) {
        this.server = server;
        this.engine = engine;
        this.connection = connection;
        this.negotiation = new Negotiation(server.exports(), refusal, (export, client) ->
                QosDescription.of(export, client.hostIdentity(connection.remoteAddress()), engine.controller(), System.currentTimeMillis()));
        this.issuerDelay = new IssuerDelay(connection, () -> ending || phase != Phase.TRANSMITTING, this::resumeIfReady);
    }

    @Override
    public void opened(Connection c) {
        connection.send(Negotiation.greeting());
        handshakeLimit = connection.loop().schedule(server.handshakeLimitNs(), () -> {
            if (phase != Phase.NEGOTIATING) return;
            server.counters().increment(NbdCounter.HANDSHAKE_TIMEOUTS);
            connection.close(null);
        });
    }

    /** The export this connection transmits on, or null while negotiating. Loop thread. */
    Export export() {
        return commands == null ? null : negotiation.export();
    }

    /**
     * Stops the connection from another thread: no more requests are read, requests in flight
     * still finish and are answered, then the socket closes; a connection still negotiating has
     * none, so it closes once its queued replies are sent. Any thread.
     */
    void shutdown() {
        connection.loop().execute(() -> {
            if (phase == Phase.CLOSED) return;
            ending = true;
            connection.endInput();
            if (phase == Phase.NEGOTIATING) {
                // Not left to the handshake limit: with its input ended, not even a client that has
                // hung up would be seen to go, and NbdServer.close would wait out its grace for it.
                connection.closeWhenFlushed();
                return;
            }
            dropPendingWrite();
            dropBufferWait();
            finishIfDone();
        });
    }

    // ------------------------------------------------------------ input

    @Override
    public void received(Connection c, ByteBuffer in) {
        if (phase == Phase.NEGOTIATING) {
            negotiate(in);
            if (phase == Phase.NEGOTIATING && !ending) return;     // the rest of an option is still to come
        }
        if (phase != Phase.TRANSMITTING || ending) {
            in.position(in.limit());                    // anything after DISC, or after we hung up, is ignored
            return;
        }
        decoding = true;
        // One submission to the kernel for the whole batch (io_uring), as blk_start_plug gathers bios.
        var plug = engine.plug();
        try {
            int events = 0;
            while (!ending) {
                if (issuerDelay.active() && decoder.atHeader()) break;          // the rest waits for the delay's end
                if (inFlight >= MAX_IN_FLIGHT && decoder.atHeader()) {
                    pausedForCommands = true;
                    connection.pauseInput();
                    break;
                }
                RequestDecoder.Result result = decoder.decode(in, requests);
                if (result == RequestDecoder.Result.NEED_MORE || result == RequestDecoder.Result.BLOCKED) break;
                if (result == RequestDecoder.Result.BAD_MAGIC) {
                    server.counters().increment(NbdCounter.PROTOCOL_ERRORS);
                    connection.close(null);
                    return;
                }
                // Send early in long bursts: a client waiting for replies to refill its queue
                // should not wait for the whole burst (measured: holding 32 replies starves fio).
                if (++events % EAGER_FLUSH_EVENTS == 0) {
                    flushReplies();
                    connection.flush();
                }
            }
        } finally {
            plug.close();
            decoding = false;
        }
        flushReplies();
        finishIfDone();
    }

    @Override
    public ByteBuffer readTarget(Connection c) {
        ByteBuffer target = decoder.payloadTarget();
        return target != null && target.remaining() >= DIRECT_PAYLOAD_BYTES ? target : null;
    }

    @Override
    public void tlsEstablished(Connection c) {
        negotiation.tlsEstablished(ClientIdentity.of(c.tlsSession()));
    }

    @Override
    public void inputEnded(Connection c) {
        if (phase == Phase.NEGOTIATING) {
            connection.close(null);
            return;
        }
        ending = true;
        dropPendingWrite();
        dropBufferWait();
        cancelParked();
        finishIfDone();
    }

    /**
     * The client is gone: requests a policy still holds (io.max, iocost) are dropped at once
     * instead of being released at the tenant's rate to a socket nobody reads. They were never
     * answered, so nothing acknowledged is lost; requests already on the backend finish.
     */
    private void cancelParked() {
        for (int i = 0; i < allocated; i++) {
            Command c = made[i];
            if (c.submitted && engine.cancel(c.io)) server.counters().increment(NbdCounter.ABORTED);
        }
    }

    /** Option haggling until transmission starts or the connection is to end. */
    private void negotiate(ByteBuffer in) {
        List<ByteBuffer> replies = new ArrayList<>(2);
        while (phase == Phase.NEGOTIATING) {
            OptionDecoder.Event event = options.decode(in);
            if (event == null) return;
            replies.clear();
            Negotiation.Next next = switch (event) {
                case OptionDecoder.ClientFlags f -> negotiation.clientFlags(f.flags());
                case OptionDecoder.Option o -> negotiation.option(o, replies::add);
                case OptionDecoder.TooBig t -> negotiation.tooBig(t, replies::add);
                case OptionDecoder.BadMagic b -> {
                    server.counters().increment(NbdCounter.PROTOCOL_ERRORS);
                    yield Negotiation.Next.CLOSE;
                }
            };
            for (ByteBuffer reply : replies) connection.send(reply);
            if (next == Negotiation.Next.CLOSE) {
                ending = true;
                connection.endInput();
                connection.closeWhenFlushed();
                return;
            }
            if (next == Negotiation.Next.START_TLS) {
                // What follows STARTTLS in the buffer is the client's TLS handshake: the connection takes it from here.
                try {
                    connection.startTls(negotiation.tlsCredentials().newEngine());
                } catch (SSLException e) {
                    connection.close(e);
                }
                return;
            }
            if (next == Negotiation.Next.TRANSMIT) startTransmission();
        }
    }

    private void startTransmission() {
        handshakeLimit.cancel();
        Export export = negotiation.export();
        hold = server.exports().attach(export, this, negotiation.client());
        phase = Phase.TRANSMITTING;
        if (hold == null) {                             // disabled while we negotiated
            ending = true;
            connection.endInput();
            connection.closeWhenFlushed();
            return;
        }
        Group payer = export.group();
        if (export.perHost()) {
            HostIdentity host = negotiation.client().hostIdentity(connection.remoteAddress());
            try {
                hostGroup = engine.bindHostGroup(export.group(), host);
                payer = hostGroup;
            } catch (ControlException e) {
                server.hostGroupRefused("NBD export " + export.name() + ": client " + LogText.clip(host.toString()) + " cannot have its own group under "
                                        + export.group().path() + " (cgroup_per_host), disconnected: " + LogText.clip(e.getMessage()));
                ending = true;
                connection.endInput();
                connection.closeWhenFlushed();
                return;
            }
        }
        buffers = engine.buffers().account(export.group());
        var backend = engine.backend(export.device());
        sharedReads = backend != null && backend.sharesReads();
        queue = engine.newQueue(payer);
        commands = new NbdCommands(engine, export, payer, queue, this, negotiation.structuredReplies(), negotiation.blockStatusAllowed(),
                                   negotiation.maxRequest());
    }

    /** Bytes of pool buffer a valid command needs before it can run. */
    private int bufferBytes(int type, long length) {
        return switch (type) {
            case NbdWire.CMD_WRITE -> (int) length;
            case NbdWire.CMD_READ -> sharedReads && io.iotarget.model.SharedRead.fits(length) ? 0 : (int) length;
            case NbdWire.CMD_BLOCK_STATUS -> Command.EXTENTS_BYTES;
            default -> 0;
        };
    }

    /**
     * A buffer of {@code bytes} from the group's share: the one reserved for this header, or a
     * new one; null when the share is used up — input then pauses until the pool serves the
     * waiter, and the same header is decoded again.
     */
    private PooledBuffer buffer(int bytes) {
        PooledBuffer b = reserved;
        reserved = null;
        if (b != null && b.size() == bytes) return b;
        if (b != null) b.release();
        b = buffers.take(bytes, bufferWaiter);
        if (b == null) {
            waitingForBuffer = true;
            connection.pauseInput();
        }
        return b;
    }

    /** The pool served the waiter, on the thread that released the memory: over to the loop. */
    private void bufferAvailable(PooledBuffer b) {
        connection.loop().execute(() -> bufferArrived(b));
    }

    /** The pool served the waiter (loop thread): read on, or give the buffer back if no request will use it. */
    private void bufferArrived(PooledBuffer b) {
        waitingForBuffer = false;
        if (ending || phase != Phase.TRANSMITTING) {
            b.release();
            return;
        }
        reserved = b;
        resumeIfReady();
    }

    private void resumeIfReady() {
        if (!waitingForBuffer && !pausedForCommands && !issuerDelay.active()) connection.resumeInput();
    }

    /**
     * Engine callback, any thread: the export group owes an issuer delay (io.latency, iocost),
     * so this connection reads no further command for {@code delayNs}; the reply goes out now.
     */
    @Override
    public boolean delayIssuer(IoRequest io, long delayNs) {
        issuerDelay.delay(delayNs);
        return true;
    }

    /** No request will take the buffer being waited for or reserved. */
    private void dropBufferWait() {
        if (waitingForBuffer && buffers.cancel(bufferWaiter)) waitingForBuffer = false;   // else it arrives and is released
        if (reserved != null) {
            reserved.release();
            reserved = null;
        }
    }

    /** Decoded requests become commands here. */
    private final RequestDecoder.Handler requests = new RequestDecoder.Handler() {
        @Override
        public ByteBuffer request(int flags, int type, long cookie, long offset, long length) {
            if (type == NbdWire.CMD_DISC) {
                // No reply; what is in flight finishes first. Anything after DISC is ignored.
                ending = true;
                connection.endInput();
                dropBufferWait();
                return null;
            }
            int error = commands.validate(type, flags, offset, length);
            int bytes = error == 0 ? bufferBytes(type, length) : 0;
            PooledBuffer b = null;
            if (bytes > 0 && (b = buffer(bytes)) == null) return RequestDecoder.BLOCKED;
            Command c = take();
            c.start(type, flags, cookie, offset, length);
            c.error = error;
            if (b != null) c.buffer(b);
            if (type == NbdWire.CMD_WRITE) {
                pendingWrite = c;
                return c.error == 0 ? c.data : null;
            }
            if (c.error != 0 || !commands.execute(c)) finished.push(c);
            return null;
        }

        @Override
        public void payloadDone() {
            Command c = pendingWrite;
            pendingWrite = null;
            if (c.error != 0 || !commands.execute(c)) finished.push(c);
        }
    };


    /** A WRITE whose payload will never arrive (the client went away mid-data) never runs. */
    private void dropPendingWrite() {
        Command c = pendingWrite;
        if (c == null) return;
        pendingWrite = null;
        recycle(c);
    }

    // ------------------------------------------------------------ command pool

    private Command take() {
        Command c = free;
        if (c != null) {
            free = c.next;
            c.next = null;
        } else {
            c = new Command(this::recycle);
            made[allocated++] = c;
        }
        inFlight++;
        return c;
    }

    /** The command's reply was written (or dropped): it is free again. Loop thread. */
    private void recycle(Command c) {
        c.submitted = false;
        c.releaseBuffer();
        c.io.reset();                                   // nor may its request keep anything of the last use alive
        c.shared.clear();
        c.next = free;
        free = c;
        inFlight--;
        if (pausedForCommands && inFlight < MAX_IN_FLIGHT) {
            pausedForCommands = false;
            resumeIfReady();
        }
        if (inFlight == 0 && phase == Phase.CLOSED) releaseHold();
        else finishIfDone();
    }

    // ------------------------------------------------------------ replies

    /** Engine callback: any thread, never blocks. */
    @Override
    public void complete(IoRequest io) {
        finished.push((Command) io.attachment());
        if (decoding && connection.loop().inLoop()) return;     // sent at the end of the batch
        if (finished.armFlush()) connection.loop().execute(flushTask);
    }

    private void flushTask() {
        finished.flushStarting();
        flushReplies();
        connection.flush();
        finishIfDone();
    }

    /** Queues the reply of every finished command, oldest first. Loop thread. */
    private void flushReplies() {
        Command fifo = finished.drain();
        if (fifo == null) return;
        boolean structured = commands != null && commands.structured();
        for (Command c = fifo; c != null; ) {
            Command next = c.next;
            c.next = null;
            if (connection.isClosed()) {
                recycle(c);
            } else {
                boolean fromFile = c.shared.region() != null && c.io.status() == io.iotarget.model.IoStatus.OK;
                if (fromFile && !c.shared.regionInsideFile()) {
                    // The file shrank since the read: the header is not queued yet, so the client hears EIO.
                    // Once it is, a shrink can only end the connection (FileRegionCutShortException).
                    c.error = NbdWire.EIO;
                    fromFile = false;
                    server.readPastShrunkFile(connection.describe() + ": export " + negotiation.export().name() + ": READ of " + c.length + " bytes at "
                                              + c.offset + " answered EIO: its file shrank below it before the reply");
                }
                int parts = c.encodeReply(structured, replyParts, 0);
                for (int i = 0; i < parts - 1; i++) connection.send(replyParts[i]);
                connection.send(replyParts[parts - 1], fromFile ? null : c.sent);
                if (fromFile) connection.sendFile(c.shared.region(), c.shared.regionPosition(), c.length, c.sent);
                java.util.Arrays.fill(replyParts, 0, parts, null);
            }
            c = next;
        }
    }

    // ------------------------------------------------------------ ending

    /**
     * Once no more requests come and none is in flight, the export is let go and the connection
     * closes after its last replies (let go first, so a client that sees the close finds the
     * device and group free).
     */
    private void finishIfDone() {
        if (!ending || inFlight != 0 || phase != Phase.TRANSMITTING || connection.isClosed()) return;
        releaseHold();
        connection.closeWhenFlushed();
    }

    @Override
    public void closed(Connection c, Throwable cause) {
        if (handshakeLimit != null) handshakeLimit.cancel();
        if (cause instanceof SSLException failed) {
            // A client's TLS library tells its user no more than the alert: the server's log says which certificate and why.
            String why = String.valueOf(failed.getMessage());
            Throwable inner = failed.getCause();
            if (inner != null && inner.getMessage() != null && !why.contains(inner.getMessage())) why += ": " + inner.getMessage();
            server.tlsFailed("NBD client " + c.describe() + ": TLS failed, disconnected: " + why);
        }
        if (cause instanceof FileRegionCutShortException) server.readPastShrunkFile(null);    // the transport logged it
        Phase was = phase;
        phase = Phase.CLOSED;
        // Possibly from inside received(): an eager flush met a reset. Decoding must stop here, or
        // the rest of a dropped WRITE's payload would complete a command that is gone.
        ending = true;
        dropPendingWrite();
        flushReplies();                                 // commands finished but not yet queued (a bad magic ended the batch) go back now
        if (buffers != null) dropBufferWait();
        if (cause != null) cancelParked();
        server.closed(this);
        if (was == Phase.TRANSMITTING && inFlight == 0) releaseHold();
    }

    private void releaseHold() {
        if (queue != null) engine.closeQueue(queue);
        if (hostGroup != null) engine.releaseHostGroup(hostGroup);
        hostGroup = null;
        ExportTree.Hold h = hold;
        hold = null;
        if (h != null) h.detach(this);
    }
}
