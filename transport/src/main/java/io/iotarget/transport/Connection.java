package io.iotarget.transport;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.Arrays;

/**
 * One accepted TCP connection, owned by one {@link EventLoop}: non-blocking reads into the
 * loop's buffer, the bytes its handler did not consume yet, and a queue of what is to be sent.
 *
 * <h2>Input</h2>
 * A readable socket is read into the loop's shared buffer (behind whatever the handler left
 * unconsumed last time) and offered to {@link ConnectionHandler#received}. What the handler
 * leaves is copied into this connection's own small buffer (at most
 * {@link EventLoop#READ_BUFFER_BYTES}), so an idle connection holds no read buffer at all.
 * Large payloads bypass the copy: the handler names a {@linkplain ConnectionHandler#readTarget
 * read target}. {@link #pauseInput()} stops reading (the peer then meets TCP backpressure);
 * {@link #resumeInput()} offers the kept bytes again and reads on.
 *
 * <h2>Output</h2>
 * {@link #send} queues buffers and {@link #sendFile} queues file regions (sent with
 * {@code FileChannel.transferTo}, i.e. sendfile(2)) in an {@link OutputQueue}, written after
 * every callback into the handler, in gathering writes; what the socket does not take waits for
 * OP_WRITE. Each item may carry a callback that runs once its last byte is written or it is
 * dropped because the connection closed, so buffers always go back to their owner. A peer that
 * takes no bytes for longer than the transport's send timeout (on the loop's clock) is
 * disconnected. A file region whose file shrank beneath it after it was queued cannot be sent
 * and the bytes before it cannot be taken back: the connection closes with a
 * {@link FileRegionCutShortException} (logged, rate-limited) as soon as the region reaches the
 * file's new end, rather than wait for a write that will never come.
 *
 * <h2>TLS</h2>
 * {@link #startTls} switches the connection to TLS in place, as STARTTLS protocols need: what
 * was queued until then goes out in clear, then the handshake runs, and from then on the handler
 * receives plaintext and whatever it sends is encrypted: reads, writes and close go through the
 * {@link TlsLayer}, which owns the engine and everything it needs. One rule for file
 * regions: under TLS {@link #sendFile} reads the region into a loop buffer piece by piece and
 * encrypts it (sendfile(2) cannot encrypt), so handlers queue regions the same way either way.
 * The handshake's heavy steps run on the transport's TLS threads, never on the loop. Closing
 * sends close_notify (or the alert of a failed handshake) if the socket takes it at once.
 * Without TLS none of this costs anything: the plain path is the same reads and writes.
 *
 * <p>Loop thread only, except {@link #loop()}, {@link #remoteAddress()} and
 * {@link #describe()}.
 */
public final class Connection {
    /** Reads per readiness event before the loop turns to other connections. */
    private static final int READS_PER_EVENT = 4;
    static final ByteBuffer EMPTY = ByteBuffer.allocate(0);

    private final EventLoop loop;
    private final SocketChannel channel;
    private final InetSocketAddress remote;
    private final Listener listener;
    private SelectionKey key;
    /** Until the protocol gives one (and if it cannot): a handler that drops input and hears nothing. */
    private ConnectionHandler handler = Closing.INSTANCE;

    private ByteBuffer kept = EMPTY;
    /** The TLS layer once {@link #startTls} switched; null for a plain connection. */
    private TlsLayer tls;
    private boolean inputPaused;
    private boolean inputEnded;
    private boolean redeliveryQueued;

    private final OutputQueue output = new OutputQueue();
    private long lastProgressNs;
    private boolean closeWhenFlushed;
    private boolean closed;
    /** Index in the loop's connection list, for O(1) removal. */
    int loopIndex = -1;

    Connection(EventLoop loop, SocketChannel channel, InetSocketAddress remote, Listener listener) {
        this.loop = loop;
        this.channel = channel;
        this.remote = remote;
        this.listener = listener;
    }

    /** Registers with the loop and asks the protocol for a handler. Loop thread. */
    void register(Protocol protocol, String refusal) throws IOException {
        channel.configureBlocking(false);
        channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
        if (loop.sendBufferBytes > 0) channel.setOption(StandardSocketOptions.SO_SNDBUF, loop.sendBufferBytes);
        key = channel.register(loop.selector(), SelectionKey.OP_READ, this);
        loop.add(this);
        ConnectionHandler given = refusal == null ? protocol.open(this) : protocol.refuse(this, refusal);
        if (given == null) {
            close(null);
            return;
        }
        handler = given;
        handler.opened(this);
        flush();
    }

    public EventLoop loop() {
        return loop;
    }

    public InetSocketAddress remoteAddress() {
        return remote;
    }

    /** The local address the peer connected to. */
    public InetSocketAddress localAddress() {
        try {
            return (InetSocketAddress) channel.getLocalAddress();
        } catch (IOException e) {
            return null;
        }
    }

    public boolean isClosed() {
        return closed;
    }

    /** Replaces the handler (a protocol that changes phase, e.g. handshake → transmission). */
    public void handler(ConnectionHandler next) {
        this.handler = next;
    }

    // ---------------------------------------------------------------- input

    /** Stops reading from the socket until {@link #resumeInput()}. */
    public void pauseInput() {
        if (inputPaused || closed) return;
        inputPaused = true;
        key.interestOps(key.interestOps() & ~SelectionKey.OP_READ);
    }

    /** Reads again; the bytes kept while paused are offered to the handler first (soon, on the loop). */
    public void resumeInput() {
        if (!inputPaused || closed) return;
        inputPaused = false;
        if (!inputEnded) key.interestOps(key.interestOps() | SelectionKey.OP_READ);
        if (kept.hasRemaining() || (tls != null && tls.hasInput())) redeliverSoon();
    }

    /** For the TLS layer, which stops unwrapping while the handler has paused input. */
    boolean inputPaused() {
        return inputPaused;
    }

    void redeliverSoon() {
        if (redeliveryQueued) return;
        redeliveryQueued = true;
        loop.execute(this::redeliver);
    }

    private void redeliver() {
        redeliveryQueued = false;
        if (closed || inputPaused) return;
        if (tls != null) {
            try {
                tls.input();
            } catch (IOException e) {
                close(e);
                return;
            }
        } else {
            if (!kept.hasRemaining()) return;
            ByteBuffer buffer = loop.readBuffer.clear();
            buffer.put(kept).flip();
            kept.clear().limit(0);
            deliver(buffer);
        }
        flush();
    }

    /** The socket is readable. */
    void ready(SelectionKey k) throws IOException {
        int ops = k.readyOps();
        if ((ops & SelectionKey.OP_WRITE) != 0) flush();
        if ((ops & SelectionKey.OP_READ) != 0 && !closed) read();
        if (!closed) flush();
    }

    private void read() {
        for (int round = 0; round < READS_PER_EVENT && !closed && !inputPaused && !inputEnded; round++) {
            int n;
            try {
                n = tls == null ? readPlain() : tls.read();
            } catch (IOException e) {
                close(e);
                return;
            }
            if (closed) return;
            if (n < 0) {
                endOfInput();
                return;
            }
            if (n == 0) return;
        }
    }

    /** One read of a plain connection; 0 when the socket has no more for now. */
    private int readPlain() throws IOException {
        ByteBuffer target = kept.hasRemaining() ? null : handler.readTarget(this);
        if (target != null) {
            int n = channel.read(target);
            if (n > 0) handler.received(this, EMPTY);
            return n;
        }
        ByteBuffer buffer = loop.readBuffer.clear();
        if (kept.hasRemaining()) {
            buffer.put(kept);
            kept.clear().limit(0);
        }
        int before = buffer.position();
        int n = channel.read(buffer);
        buffer.flip();
        if (buffer.hasRemaining()) deliver(buffer);
        return n > 0 && before + n < buffer.capacity() ? 0 : n;          // a buffer not filled: the socket had no more
    }

    /** The peer's stream ended (EOF, or TLS close_notify): the handler hears it once. */
    void endOfInput() {
        if (inputEnded) return;
        inputEnded = true;
        key.interestOps(key.interestOps() & ~SelectionKey.OP_READ);
        handler.inputEnded(this);
    }

    /** Offers {@code buffer} to the handler and keeps what it left. */
    void deliver(ByteBuffer buffer) {
        TlsLayer before = tls;
        handler.received(this, buffer);
        if (closed || !buffer.hasRemaining()) return;
        if (tls != before) {
            // The handler switched to TLS: what follows its last message is the start of the peer's handshake.
            tls.receivedEarly(buffer);
            buffer.position(buffer.limit());
            try {
                tls.input();
            } catch (IOException e) {
                close(e);
            }
            return;
        }
        int left = buffer.remaining();
        if (left >= EventLoop.READ_BUFFER_BYTES && !inputPaused) {
            // A full buffer the handler could not use: it would never make progress.
            fail(new IllegalStateException("protocol handler consumed nothing from a full read buffer"));
            return;
        }
        if (kept.capacity() < left) kept = ByteBuffer.allocate(Math.max(left, 4096));
        kept.clear();
        kept.put(buffer).flip();
    }

    // ---------------------------------------------------------------- output

    /** Queues {@code bytes} (position to limit) to be sent; the buffer is the connection's until written. */
    public void send(ByteBuffer bytes) {
        send(bytes, null);
    }

    /**
     * Queues {@code bytes}; {@code whenDone} runs on the loop once they are written (encrypted,
     * under TLS), or when they are dropped because the connection closed ({@link #isClosed()}
     * tells which).
     */
    public void send(ByteBuffer bytes, Runnable whenDone) {
        if (closed) {
            if (whenDone != null) whenDone.run();
            return;
        }
        if (!outputWaiting()) lastProgressNs = loop.nowNs();
        output.add(bytes, whenDone);
    }

    /**
     * Queues {@code length} bytes of {@code file} from {@code position}, to be sent by
     * sendfile(2) — or, under TLS, read and encrypted piece by piece.
     */
    public void sendFile(FileChannel file, long position, long length, Runnable whenDone) {
        if (closed) {
            if (whenDone != null) whenDone.run();
            return;
        }
        if (!outputWaiting()) lastProgressNs = loop.nowNs();
        output.add(file, position, length, whenDone);
    }

    /** Bytes queued and not yet written (under TLS: not yet encrypted); tests wait on it. */
    long queuedBytes() {
        return output.bytes();
    }

    /** Something is queued, or encrypted and not written. */
    private boolean outputWaiting() {
        return !output.isEmpty() || (tls != null && tls.outputPending());
    }

    /** Writes what the socket takes now. Called by the loop after every callback; handlers rarely need it. */
    public void flush() {
        if (closed) return;
        if (tls == null ? output.isEmpty() : !tls.hasOutput()) return;
        boolean socketFull;
        try {
            socketFull = tls == null ? writePlain() : tls.write();
        } catch (IOException e) {
            close(e);
            return;
        }
        if (closed) return;                             // a completion callback closed it
        int ops = key.interestOps();
        int wanted = socketFull ? ops | SelectionKey.OP_WRITE : ops & ~SelectionKey.OP_WRITE;
        if (wanted != ops) key.interestOps(wanted);
        if (!socketFull && output.isEmpty()) {
            if (closeWhenFlushed) {
                close(null);
                return;
            }
            handler.drained(this);
        }
    }

    /** Writes the queue until it is empty or the socket is full; true when the socket is full. */
    private boolean writePlain() throws IOException {
        while (!output.isEmpty()) {
            OutputQueue.Item head = output.head();
            if (head.file != null) {
                long n = head.file.transferTo(head.position, head.remaining, channel);
                if (n > 0) {
                    progress(n);
                    head.position += n;
                    head.remaining -= n;
                }
                if (head.remaining == 0) {
                    output.completeHead();
                    continue;
                }
                if (n == 0) ensureRegionInsideFile(head);
                return true;
            }
            if (!writeBuffers()) return true;
        }
        return false;
    }

    /**
     * transferTo sent nothing: either the socket is full (wait for OP_WRITE) or the region's
     * next byte is past the end of its file, which shrank after the region was queued — then
     * OP_WRITE would fire at once and find nothing to send, again and again, a loop spinning
     * until the send timeout. Told apart by the file's size now (fstat, only when 0 came back);
     * past the end, the connection ends: the reply header is already queued or on the wire, so
     * the promised bytes can be neither sent nor replaced by an error. The front ends answer
     * EIO instead when they find the shrink before they queue the header
     * ({@link io.iotarget.model.SharedRead#regionInsideFile}).
     */
    private void ensureRegionInsideFile(OutputQueue.Item head) throws IOException {
        long fileBytes = head.file.size();
        if (head.position < fileBytes) return;
        throw regionCutShort(head, fileBytes);
    }

    /** The cause a connection whose file region lies past its file's end closes with; logged, rate-limited. */
    FileRegionCutShortException regionCutShort(OutputQueue.Item head, long fileBytes) {
        FileRegionCutShortException e = new FileRegionCutShortException(head.position, head.remaining, fileBytes);
        loop.regionCutShort(describe() + ": " + e.getMessage() + "; the connection ends");
        return e;
    }

    /** One gathering write of the buffers at the head of the queue; true when all of them went. */
    private boolean writeBuffers() throws IOException {
        ByteBuffer[] gather = loop.gather;
        int count = output.gather(gather);
        long n = channel.write(gather, 0, count);
        Arrays.fill(gather, 0, count, null);
        if (n > 0) progress(n);
        return output.completeWritten(count) && !closed;
    }

    private void progress(long bytes) {
        output.consumed(bytes);
        lastProgressNs = loop.nowNs();
    }

    /** The peer took some of the output (TLS records, written). */
    void progressed() {
        lastProgressNs = loop.nowNs();
    }

    /** Nanoseconds the queued output has been waiting for the peer to take any of it; 0 when nothing is queued. */
    long stalledNs(long nowNs) {
        return outputWaiting() ? nowNs - lastProgressNs : 0;
    }

    /** Lets go of the kept-input buffer (and TLS buffers) when they hold nothing: an idle connection holds no read memory. */
    void trim() {
        if (!kept.hasRemaining()) kept = EMPTY;
        if (tls != null) tls.trim();
    }

    // ---------------------------------------------------------------- TLS

    /**
     * Switches to TLS with {@code engine}, which the caller has set up (server mode, protocols,
     * client authentication). What is queued now still goes out in clear, first: call this right
     * after queuing the reply that tells the peer to begin its handshake (NBD's ACK to
     * NBD_OPT_STARTTLS), and stop consuming input — what follows in the buffer is the peer's
     * handshake. From then on {@link ConnectionHandler#received} gets plaintext (after
     * {@link ConnectionHandler#tlsEstablished}), what is sent is encrypted, and
     * {@link ConnectionHandler#readTarget} is not asked. A failed handshake closes the connection
     * with its {@link SSLException}.
     */
    public void startTls(SSLEngine engine) throws SSLException {
        if (tls != null) throw new IllegalStateException("TLS is already on");
        if (output.hasFileRegion()) throw new IllegalStateException("a file region is queued to go out in clear before TLS");
        tls = new TlsLayer(this, channel, output, engine);
    }

    /** The session of the finished TLS handshake (the peer's certificates), or null: no TLS, or not yet. */
    public SSLSession tlsSession() {
        return tls == null ? null : tls.session();
    }

    /** Moves what the handler left unconsumed last time to the front of {@code into}. */
    void takeKept(ByteBuffer into) {
        if (!kept.hasRemaining()) return;
        into.put(kept);
        kept.clear().limit(0);
    }

    /** The TLS handshake finished: the handler hears it. */
    void tlsEstablished() {
        handler.tlsEstablished(this);
    }

    // ---------------------------------------------------------------- ending

    /** Closes once everything queued has been written (or at once if nothing is). */
    public void closeWhenFlushed() {
        closeWhenFlushed = true;
        if (!outputWaiting()) close(null);
    }

    /** Stops reading for good: the peer's further bytes are not read. */
    public void endInput() {
        if (closed || inputEnded) return;
        inputEnded = true;
        key.interestOps(key.interestOps() & ~SelectionKey.OP_READ);
        kept = EMPTY;
    }

    /** A failure while handling this connection: it closes with {@code cause}. */
    void fail(Throwable cause) {
        if (!(cause instanceof IOException)) loop.survive(cause);
        close(cause);
    }

    /**
     * Closes now: the socket goes (after a TLS close_notify, if it fits), queued output is
     * dropped (each item's callback runs), the handler hears {@link ConnectionHandler#closed}
     * once. Idempotent.
     */
    public void close(Throwable cause) {
        if (closed) return;
        closed = true;
        if (tls != null) tls.close();
        if (key != null) key.cancel();
        try {
            channel.close();
        } catch (IOException e) {
            // closing anyway
        }
        output.dropAll();
        kept = EMPTY;
        loop.remove(this);
        if (listener != null) listener.released(this);
        handler.closed(this, cause);
    }

    /** "ADDR:PORT" of the peer, for logs and refusals. Any thread. */
    public String describe() {
        return remote == null ? "?" : remote.getAddress().getHostAddress() + ":" + remote.getPort();
    }

    /** The handler of a connection refused before it had one. */
    private enum Closing implements ConnectionHandler {
        INSTANCE;

        @Override
        public void received(Connection connection, ByteBuffer in) {
            in.position(in.limit());
        }

        @Override
        public void closed(Connection connection, Throwable cause) {
        }
    }
}
