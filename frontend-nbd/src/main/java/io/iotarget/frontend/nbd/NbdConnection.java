package io.iotarget.frontend.nbd;

import io.iotarget.backend.Backend;
import io.iotarget.engine.Engine;
import io.iotarget.model.IoCallback;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One client connection: handshake, then pipelined requests with replies in completion order.
 *
 * <h2>Threads</h2>
 * <ul>
 * <li>The <b>reader</b> (one thread per connection) decodes requests, turns each into an
 * {@link IoRequest} and submits it. A request nothing delays completes during
 * {@code engine.submit}, on the reader itself; its reply is queued and the reader sends all
 * queued replies in one gathering write when it has decoded everything that had arrived, just
 * before it blocks on the socket again. So a burst of 32 requests costs one read and one write.</li>
 * <li>Requests that io.max parked complete later on the engine's releaser thread (or, for
 * blocking backends, a dispatch thread). Their callback only pushes the finished command onto
 * a lock-free stack and wakes the connection's <b>writer</b> thread, which sends the reply: the
 * releaser never touches a socket, so a slow client cannot stall it or anyone else.</li>
 * <li>Reader and writer send under {@link #replyLock}, held only while writing replies that are
 * already encoded; the bytes of one reply are never interleaved with another's.</li>
 * </ul>
 * Commands (and their buffers) come from a per-connection pool of at most
 * {@link #MAX_IN_FLIGHT}; when all are in flight the reader stops reading until a reply frees one.
 *
 * <h2>Ending</h2>
 * A client that has not finished negotiating within {@link NbdServer#HANDSHAKE_LIMIT} is
 * disconnected. NBD_CMD_DISC, end of stream, or {@link #shutdown()} (export disabled, server closing) stop
 * the reader; requests in flight still finish and get their replies, then the socket closes.
 * A request header with a bad magic cannot be resynchronised: the connection closes at once.
 */
final class NbdConnection implements IoCallback {
    /** Requests in flight per connection: above the kernel client's 128 tags and nbdcopy's 64. */
    static final int MAX_IN_FLIGHT = 256;
    /** Input buffer: many pipelined headers and small writes per read. */
    static final int INPUT_BYTES = 256 * 1024;
    /** Payloads at least this large are read from the socket straight into their buffer. */
    static final int DIRECT_PAYLOAD_BYTES = 64 * 1024;
    /** Decoded headers and payloads after which the reader sends what is done, even with more input buffered. */
    static final int EAGER_FLUSH_EVENTS = 8;
    /** Buffers per gathering write (two per reply at most); below the kernel's IOV_MAX of 1024. */
    static final int GATHER_MAX = 256;

    private final NbdServer server;
    private final Engine engine;
    private final SocketChannel channel;
    private final Negotiation negotiation;

    private final AtomicReference<Command> free = new AtomicReference<>();
    private final AtomicReference<Command> completed = new AtomicReference<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private final ReentrantLock replyLock = new ReentrantLock();
    private final ByteBuffer[] gather = new ByteBuffer[GATHER_MAX];
    private final Command[] sending = new Command[GATHER_MAX];

    // Reader thread only.
    private final RequestDecoder decoder = new RequestDecoder();
    private Export export;
    private boolean structured;
    private boolean blockStatusAllowed;
    private ExportTree.Hold hold;
    private int allocated;
    private Command pendingWrite;
    private boolean disconnect;

    private static final int NEGOTIATING = 0;
    private static final int TRANSMITTING = 1;
    private static final int EXPIRED = 2;
    /** NEGOTIATING until the handshake ends in transmission, or the handshake limit expires. */
    private final AtomicInteger phase = new AtomicInteger(NEGOTIATING);
    private volatile Thread reader;
    private volatile Thread writer;
    /** The reader, while it waits for a free command or for the last replies. */
    private volatile Thread waiter;
    private volatile boolean closing;
    /** Set once the reader is done: the writer thread ends. */
    private volatile boolean writerStop;
    /** A reply could not be written: the client is gone. */
    private volatile boolean broken;

    NbdConnection(NbdServer server, Engine engine, SocketChannel channel) {
        this.server = server;
        this.engine = engine;
        this.channel = channel;
        this.negotiation = new Negotiation(server.exports());
    }

    /** Starts the reader thread. */
    void start() {
        Thread t = Thread.ofPlatform().daemon().name("nbd-conn").unstarted(this::run);
        reader = t;
        t.start();
    }

    /** The reader thread's body. */
    private void run() {
        try {
            channel.socket().setTcpNoDelay(true);
            Runnable cancelLimit = server.limitHandshake(this::handshakeExpired);
            ByteBuffer leftover;
            try {
                leftover = handshake();
            } finally {
                cancelLimit.run();
            }
            if (leftover != null && phase.compareAndSet(NEGOTIATING, TRANSMITTING)) transmission(leftover);
        } catch (IOException e) {
            // the client went away or was shut down: nothing to tell it
        } catch (RuntimeException e) {
            server.unexpected(e);
        } finally {
            close();
        }
    }

    /**
     * The handshake limit passed (timer thread): a client still negotiating is cut off, which
     * ends the reader's blocked read. One that got to transmission keeps its connection.
     */
    private void handshakeExpired() {
        if (!phase.compareAndSet(NEGOTIATING, EXPIRED)) return;
        try {
            channel.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    /**
     * Stops the connection from another thread: the reader sees end of stream, requests in
     * flight still finish and are answered, then the socket closes. Any thread.
     */
    void shutdown() {
        closing = true;
        try {
            channel.shutdownInput();
        } catch (IOException e) {
            // already closed
        }
    }

    /** The export this connection transmits on, or null while negotiating. */
    Export export() {
        return export;
    }

    Thread readerThread() {
        return reader;
    }

    // ------------------------------------------------------------ handshake

    /** Runs option haggling; returns bytes already received for transmission, or null to close. */
    private ByteBuffer handshake() throws IOException {
        writeFully(Negotiation.greeting());
        OptionDecoder options = new OptionDecoder();
        ByteBuffer in = ByteBuffer.allocate(16 * 1024).flip();
        List<ByteBuffer> replies = new ArrayList<>();
        while (true) {
            OptionDecoder.Event event = options.decode(in);
            if (event == null) {
                if (closing) return null;
                in.compact();
                int n = channel.read(in);
                in.flip();
                if (n < 0) return null;
                continue;
            }
            replies.clear();
            Negotiation.Next next = switch (event) {
                case OptionDecoder.ClientFlags f -> negotiation.clientFlags(f.flags());
                case OptionDecoder.Option o -> negotiation.option(o, replies::add);
                case OptionDecoder.TooBig t -> negotiation.tooBig(t, replies::add);
                case OptionDecoder.BadMagic b -> Negotiation.Next.CLOSE;
            };
            for (ByteBuffer reply : replies) writeFully(reply);
            if (next == Negotiation.Next.CLOSE) return null;
            if (next == Negotiation.Next.TRANSMIT) return in;
        }
    }

    private void writeFully(ByteBuffer b) throws IOException {
        while (b.hasRemaining()) channel.write(b);
    }

    // ------------------------------------------------------------ transmission

    private void transmission(ByteBuffer leftover) throws IOException {
        export = negotiation.export();
        structured = negotiation.structuredReplies();
        blockStatusAllowed = negotiation.blockStatusAllowed();
        hold = server.exports().attach(export, this);
        if (hold == null) return;                        // disabled while we negotiated
        writer = Thread.ofPlatform().daemon().name("nbd-writer").start(this::writerLoop);
        ByteBuffer in = ByteBuffer.allocateDirect(INPUT_BYTES);
        in.put(leftover).flip();
        boolean corrupt = false;
        int sinceFlush = 0;
        while (!disconnect) {
            RequestDecoder.Result result = decoder.decode(in, requests);
            if (result == RequestDecoder.Result.EVENT) {
                // Send early in long bursts: a client waiting for replies to refill its queue
                // should not wait for the whole burst (measured: holding 32 replies starves fio).
                if (++sinceFlush >= EAGER_FLUSH_EVENTS) {
                    flushReplies();
                    sinceFlush = 0;
                }
                continue;
            }
            sinceFlush = 0;
            if (result == RequestDecoder.Result.BAD_MAGIC) {
                corrupt = true;
                break;
            }
            flushReplies();
            ByteBuffer direct = decoder.payloadTarget();
            int n;
            if (direct != null && direct.remaining() >= DIRECT_PAYLOAD_BYTES) {
                n = channel.read(direct);
            } else {
                in.compact();
                n = channel.read(in);
                in.flip();
            }
            if (n < 0) break;
        }
        if (!corrupt) drain();
    }

    /**
     * Waits until every request in flight has finished — answered, or dropped when the client
     * is gone — so that nothing still runs or waits on the export's device when it is let go.
     */
    private void drain() {
        while (true) {
            flushReplies();
            if (inFlight.get() == 0) return;
            waiter = Thread.currentThread();
            if (inFlight.get() != 0 && completed.get() == null) LockSupport.park(this);
            waiter = null;
        }
    }

    private void close() {
        closing = true;
        writerStop = true;
        Thread w = writer;
        if (w != null) LockSupport.unpark(w);
        if (hold != null) hold.detach(this);
        try {
            channel.close();
        } catch (IOException e) {
            // nothing left to tell
        }
        server.closed(this);
    }

    private void writerLoop() {
        while (!writerStop) {
            LockSupport.park(this);
            flushReplies();
        }
    }

    /** Decoded requests become commands here. Reader thread. */
    private final RequestDecoder.Handler requests = new RequestDecoder.Handler() {
        @Override
        public ByteBuffer request(int flags, int type, long cookie, long offset, long length) {
            if (type == NbdWire.CMD_DISC) {
                // No reply; what is in flight finishes first (drain). Anything after DISC is ignored.
                disconnect = true;
                return null;
            }
            Command c = take();
            c.start(type, flags, cookie, offset, length);
            c.error = validate(type, flags, offset, length);
            if (type == NbdWire.CMD_WRITE) {
                pendingWrite = c;
                return c.error == 0 ? c.buffer((int) length) : null;
            }
            if (c.error != 0) {
                completed(c);
            } else {
                execute(c);
            }
            return null;
        }

        @Override
        public void payloadDone() {
            Command c = pendingWrite;
            pendingWrite = null;
            if (c.error != 0) {
                completed(c);
                return;
            }
            c.data.position(0);
            execute(c);
        }
    };

    /**
     * Protocol checks the engine cannot make: flags per command, the export's read-only
     * setting, zero lengths and payload limits. Range, alignment and device state are the
     * engine's {@code RequestCheck}; its status maps to the errno in {@link Command#errno}.
     */
    private int validate(int type, int flags, long offset, long length) {
        int allowed = NbdWire.CMD_FLAG_FUA;              // accepted on every command, as the spec asks
        switch (type) {
            case NbdWire.CMD_READ -> {
                if (structured) allowed |= NbdWire.CMD_FLAG_DF;
            }
            case NbdWire.CMD_WRITE, NbdWire.CMD_FLUSH, NbdWire.CMD_TRIM, NbdWire.CMD_CACHE -> {
            }
            case NbdWire.CMD_WRITE_ZEROES -> allowed |= NbdWire.CMD_FLAG_NO_HOLE | NbdWire.CMD_FLAG_FAST_ZERO;
            case NbdWire.CMD_BLOCK_STATUS -> {
                if (!blockStatusAllowed) return NbdWire.EINVAL;
                allowed |= NbdWire.CMD_FLAG_REQ_ONE;
            }
            default -> {
                return NbdWire.EINVAL;
            }
        }
        if ((flags & ~allowed) != 0) return NbdWire.EINVAL;
        if (type == NbdWire.CMD_FLUSH) return offset == 0 && length == 0 ? 0 : NbdWire.EINVAL;
        boolean modifies = type == NbdWire.CMD_WRITE || type == NbdWire.CMD_TRIM || type == NbdWire.CMD_WRITE_ZEROES;
        if (modifies && export.readOnly()) return NbdWire.EPERM;
        // Zero-length requests are unspecified by the protocol; this server refuses them uncharged.
        if (length == 0) return NbdWire.EINVAL;
        if ((type == NbdWire.CMD_READ || type == NbdWire.CMD_WRITE) && length > NbdWire.MAX_PAYLOAD) {
            return (flags & NbdWire.CMD_FLAG_DF) != 0 ? NbdWire.EOVERFLOW : NbdWire.EINVAL;
        }
        return 0;
    }

    /** Runs a valid command: the data-moving ones through the engine, charged to the export's group. */
    private void execute(Command c) {
        boolean fua = (c.flags & NbdWire.CMD_FLAG_FUA) != 0;
        switch (c.type) {
            case NbdWire.CMD_READ -> submit(c, IoOp.READ, 0, c.buffer((int) c.length), Command.viewable(c.length));
            case NbdWire.CMD_WRITE -> submit(c, IoOp.WRITE, fua ? IoFlags.FUA : 0, c.data, false);
            case NbdWire.CMD_FLUSH -> submit(c, IoOp.FLUSH, 0, null, false);
            case NbdWire.CMD_TRIM -> submit(c, IoOp.DISCARD, fua ? IoFlags.FUA : 0, null, false);
            // A prefetch hint, but it reads the media for the client: charged as a read of its length.
            case NbdWire.CMD_CACHE -> submit(c, IoOp.CACHE, 0, null, false);
            case NbdWire.CMD_WRITE_ZEROES -> {
                int ioFlags = (fua ? IoFlags.FUA : 0)
                              | ((c.flags & NbdWire.CMD_FLAG_NO_HOLE) != 0 ? IoFlags.NO_UNMAP : 0)
                              | ((c.flags & NbdWire.CMD_FLAG_FAST_ZERO) != 0 ? IoFlags.FAST_ZERO : 0);
                submit(c, IoOp.WRITE_ZEROES, ioFlags, null, false);
            }
            case NbdWire.CMD_BLOCK_STATUS -> {
                blockStatus(c);
                completed(c);
            }
            default -> throw new AssertionError(c.type);
        }
    }

    private void submit(Command c, IoOp op, int ioFlags, ByteBuffer data, boolean views) {
        c.io.set(op, ioFlags, c.offset, c.length, data).target(export.device(), export.group()).callback(this, c, 0)
                .views(views ? c : null);
        // Submitted on the reader: a request nothing delays runs right here (a file backend's
        // pread included: measured, a thread hop per request cost more than the page-cache read
        // it would overlap); requests io.max parks are dispatched by the engine's own threads.
        engine.submit(c.io);
    }

    /**
     * BLOCK_STATUS reads the backend's allocation map (the memory backend's chunk table, a
     * file's SEEK_DATA/SEEK_HOLE), never the data: like lseek(2) on a file it moves no data and
     * is not a block IO, so it is not charged, just as the kernel's io controller does not see
     * SEEK_HOLE. The reads a client makes because of the answer are ordinary, charged READs.
     */
    private void blockStatus(Command c) {
        if (!export.device().contains(c.offset, c.length)) {
            c.error = NbdWire.EINVAL;
            return;
        }
        Backend backend = engine.backend(export.device());
        if (backend == null) {
            c.error = NbdWire.ESHUTDOWN;
            return;
        }
        c.startExtents((c.flags & NbdWire.CMD_FLAG_REQ_ONE) != 0);
        try {
            backend.mapExtents(c.offset, c.length, c);
        } catch (IOException | RuntimeException e) {
            c.error = NbdWire.EIO;
        }
    }

    // ------------------------------------------------------------ command pool

    /** A free command; waits (sending what is done) when {@link #MAX_IN_FLIGHT} are in flight. Reader thread. */
    private Command take() {
        Command c = pop(free);
        if (c == null && allocated < MAX_IN_FLIGHT) {
            allocated++;
            c = new Command();
        }
        while (c == null) {
            flushReplies();
            waiter = Thread.currentThread();
            c = pop(free);
            if (c == null && completed.get() == null) LockSupport.park(this);
            waiter = null;
            if (c == null) c = pop(free);
        }
        inFlight.incrementAndGet();
        return c;
    }

    /** Pops from a stack with a single consumer (so no ABA): the reader for {@link #free}. */
    private static Command pop(AtomicReference<Command> stack) {
        Command head;
        do {
            head = stack.get();
            if (head == null) return null;
        } while (!stack.compareAndSet(head, head.next));
        head.next = null;
        return head;
    }

    private static void push(AtomicReference<Command> stack, Command c) {
        Command head;
        do {
            head = stack.get();
            c.next = head;
        } while (!stack.compareAndSet(head, c));
    }

    // ------------------------------------------------------------ replies

    /** Engine callback: any thread, never blocks. */
    @Override
    public void complete(IoRequest io) {
        completed((Command) io.attachment());
        if (Thread.currentThread() != reader) {
            Thread w = writer;
            if (w != null) LockSupport.unpark(w);
        }
    }

    private void completed(Command c) {
        push(completed, c);
    }

    /**
     * Sends every queued reply, oldest first, in gathering writes, then returns the commands
     * to the pool. Reader or writer thread; the lock is held only while writing encoded replies.
     */
    private void flushReplies() {
        if (completed.get() == null) return;
        replyLock.lock();
        try {
            Command list;
            while ((list = completed.getAndSet(null)) != null) {
                Command fifo = null;
                while (list != null) {
                    Command next = list.next;
                    list.next = fifo;
                    fifo = list;
                    list = next;
                }
                int buffers = 0;
                int commands = 0;
                for (Command c = fifo; c != null; ) {
                    Command next = c.next;
                    buffers = c.encodeReply(structured, gather, buffers);
                    sending[commands++] = c;
                    if (next == null || buffers + next.replyBuffers() > GATHER_MAX) {
                        send(buffers);
                        release(buffers, commands);
                        buffers = 0;
                        commands = 0;
                    }
                    c = next;
                }
            }
        } finally {
            replyLock.unlock();
        }
    }

    private void send(int buffers) {
        if (broken) return;
        try {
            ByteBuffer last = gather[buffers - 1];
            while (last.hasRemaining()) channel.write(gather, 0, buffers);
        } catch (IOException e) {
            broken = true;
        }
    }

    private void release(int buffers, int commands) {
        java.util.Arrays.fill(gather, 0, buffers, null);
        for (int i = 0; i < commands; i++) {
            Command c = sending[i];
            sending[i] = null;
            c.data = null;
            c.clearViews();
            push(free, c);
        }
        inFlight.addAndGet(-commands);
        Thread w = waiter;
        if (w != null) LockSupport.unpark(w);
    }
}
