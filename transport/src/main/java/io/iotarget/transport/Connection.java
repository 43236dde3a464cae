package io.iotarget.transport;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.concurrent.RejectedExecutionException;

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
 * {@code FileChannel.transferTo}, i.e. sendfile(2)). The queue is written after every callback
 * into the handler, in gathering writes; what the socket does not take waits for OP_WRITE. Each
 * item may carry a callback that runs once its last byte is written or it is dropped because the
 * connection closed, so buffers always go back to their owner. A peer that takes no bytes for
 * longer than the transport's send timeout is disconnected.
 *
 * <h2>TLS</h2>
 * {@link #startTls} switches the connection to TLS in place, as STARTTLS protocols need: what
 * was queued until then goes out in clear, then the handshake runs, and from then on the handler
 * receives plaintext and whatever it sends is encrypted ({@link TlsLayer}). One rule for file
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
    /** Buffers per gathering write: below the kernel's IOV_MAX of 1024. */
    static final int GATHER_MAX = 1000;
    /** Reads per readiness event before the loop turns to other connections. */
    private static final int READS_PER_EVENT = 4;
    private static final ByteBuffer EMPTY = ByteBuffer.allocate(0);

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

    private final ArrayDeque<Item> queue = new ArrayDeque<>();
    private Item freeItems;
    private long queuedBytes;
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

    private void redeliverSoon() {
        if (redeliveryQueued) return;
        redeliveryQueued = true;
        loop.execute(this::redeliver);
    }

    private void redeliver() {
        redeliveryQueued = false;
        if (closed || inputPaused) return;
        if (tls != null) {
            try {
                tlsInput();
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
                n = tls == null ? readPlain() : readTls();
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

    /** One read of a TLS connection: ciphertext in, plaintext to the handler; 0 when the socket has no more for now. */
    private int readTls() throws IOException {
        int n = tls.read(channel);
        boolean more = tls.inputFull();
        tlsInput();
        return n > 0 && !more ? 0 : n;
    }

    private void endOfInput() {
        inputEnded = true;
        key.interestOps(key.interestOps() & ~SelectionKey.OP_READ);
        handler.inputEnded(this);
    }

    /** Offers {@code buffer} to the handler and keeps what it left. */
    private void deliver(ByteBuffer buffer) {
        TlsLayer before = tls;
        handler.received(this, buffer);
        if (closed || !buffer.hasRemaining()) return;
        if (tls != before) {
            // The handler switched to TLS: what follows its last message is the start of the peer's handshake.
            tls.receivedEarly(buffer);
            buffer.position(buffer.limit());
            try {
                tlsInput();
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
        Item item = item();
        item.buffer = bytes;
        item.whenDone = whenDone;
        enqueue(item, bytes.remaining());
    }

    /**
     * Queues {@code length} bytes of {@code file} from {@code position}, to be sent by
     * sendfile(2) — or, under TLS, read and encrypted piece by piece.
     */
    public void sendFile(FileChannel file, long position, long length, Runnable whenDone) {
        Item item = item();
        item.file = file;
        item.position = position;
        item.remaining = length;
        item.whenDone = whenDone;
        enqueue(item, length);
    }

    private void enqueue(Item item, long bytes) {
        if (closed) {
            done(item);
            return;
        }
        if (!outputWaiting()) lastProgressNs = System.nanoTime();
        queue.add(item);
        queuedBytes += bytes;
    }

    /** Something is queued, or encrypted and not written. */
    private boolean outputWaiting() {
        return !queue.isEmpty() || (tls != null && tls.outputPending());
    }

    /** Writes what the socket takes now. Called by the loop after every callback; handlers rarely need it. */
    public void flush() {
        if (closed) return;
        if (tls == null ? queue.isEmpty() : !tlsHasOutput()) return;
        boolean socketFull;
        try {
            socketFull = tls == null ? writePlain() : writeTls();
        } catch (IOException e) {
            close(e);
            return;
        }
        if (closed) return;                             // a completion callback closed it
        int ops = key.interestOps();
        int wanted = socketFull ? ops | SelectionKey.OP_WRITE : ops & ~SelectionKey.OP_WRITE;
        if (wanted != ops) key.interestOps(wanted);
        if (!socketFull && queue.isEmpty()) {
            if (closeWhenFlushed) {
                close(null);
                return;
            }
            handler.drained(this);
        }
    }

    /** Writes the queue until it is empty or the socket is full; true when the socket is full. */
    private boolean writePlain() throws IOException {
        while (!queue.isEmpty()) {
            Item head = queue.peek();
            if (head.file != null) {
                long n = head.file.transferTo(head.position, head.remaining, channel);
                if (n > 0) progress(n);
                head.position += n;
                head.remaining -= n;
                if (head.remaining > 0) return true;
                done(queue.poll());
                continue;
            }
            if (!writeBuffers()) return true;
        }
        return false;
    }

    /** One gathering write of the buffers at the head of the queue; true when all of them went. */
    private boolean writeBuffers() throws IOException {
        ByteBuffer[] gather = loop.gather;
        int count = gather(gather);
        long n = channel.write(gather, 0, count);
        Arrays.fill(gather, 0, count, null);
        if (n > 0) progress(n);
        return doneWithWritten(count);
    }

    /** Puts the buffers at the head of the queue (up to the first file region) into {@code gather}; how many. */
    private int gather(ByteBuffer[] gather) {
        int count = 0;
        for (Item item : queue) {
            if (item.file != null || count == GATHER_MAX) break;
            gather[count++] = item.buffer;
        }
        return count;
    }

    /** Completes the fully written buffers among the first {@code count} items; true when all of them were. */
    private boolean doneWithWritten(int count) {
        for (int i = 0; i < count && !closed; i++) {
            Item head = queue.peek();
            if (head.buffer.hasRemaining()) return false;
            done(queue.poll());
        }
        return !closed;
    }

    private void progress(long bytes) {
        queuedBytes -= bytes;
        lastProgressNs = System.nanoTime();
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
        for (Item item : queue) {
            if (item.file != null) throw new IllegalStateException("a file region is queued to go out in clear before TLS");
        }
        TlsLayer layer = new TlsLayer(engine);
        for (Item item; (item = queue.poll()) != null; ) {
            queuedBytes -= item.buffer.remaining();
            layer.sendClear(item.buffer);
            done(item);
        }
        tls = layer;
    }

    /** The session of the finished TLS handshake (the peer's certificates), or null: no TLS, or not yet. */
    public SSLSession tlsSession() {
        return tls != null && tls.established ? tls.engine.getSession() : null;
    }

    /** Anything for a TLS flush to do: bytes queued or encrypted, or a message the engine wants to send. */
    private boolean tlsHasOutput() {
        return !queue.isEmpty() || tls.outputPending()
               || (!tls.tasksRunning && tls.engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP);
    }

    /** Unwraps what has arrived and offers the plaintext to the handler, until the engine or the handler has to wait. */
    private void tlsInput() throws IOException {
        while (!closed && !inputPaused && !tls.tasksRunning) {
            ByteBuffer plain = loop.tlsPlainBuffer().clear();
            if (kept.hasRemaining()) {
                plain.put(kept);
                kept.clear().limit(0);
            }
            int before = plain.position();
            TlsLayer.Input next = tls.unwrap(plain);
            plain.flip();
            if (tls.established && !tls.told) {
                tls.told = true;
                handler.tlsEstablished(this);
                if (closed) return;
            }
            boolean fresh = plain.limit() > before;
            if (plain.hasRemaining()) deliver(plain);
            switch (next) {
                case NEED_INPUT -> {
                    return;
                }
                case PLAIN_FULL -> {
                    if (!fresh) throw new IllegalStateException("a TLS record does not fit the plaintext buffer");
                }
                case NEED_WRAP -> {
                    flush();
                    if (closed) return;
                    if (tls.engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
                        tls.unwrapAfterWrite = true;         // the socket is full; writeTls brings us back
                        return;
                    }
                }
                case NEED_TASK -> {
                    runTlsTasks();
                    return;
                }
                case CLOSED -> {
                    if (!inputEnded) endOfInput();
                    return;
                }
            }
        }
    }

    /** Writes what is encrypted and encrypts more until the socket is full or nothing can go; true when the socket is full. */
    private boolean writeTls() throws IOException {
        boolean socketFull = false;
        while (!closed) {
            if (tls.outputPending()) {
                if (tls.write(channel) > 0) lastProgressNs = System.nanoTime();
                if (tls.outputPending()) {
                    socketFull = true;
                    break;
                }
            }
            if (!encrypt()) break;
        }
        if (tls.unwrapAfterWrite && tls.engine.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NEED_WRAP) {
            tls.unwrapAfterWrite = false;
            redeliverSoon();
        }
        return socketFull;
    }

    /**
     * Fills the empty output buffer with records: the engine's own messages first, queued data
     * once the handshake is done. True when something was produced.
     */
    private boolean encrypt() throws IOException {
        if (tls.tasksRunning) return false;
        ByteBuffer out = tls.fill();
        try {
            while (tls.roomForRecord() && !closed) {
                SSLEngineResult.HandshakeStatus hs = tls.engine.getHandshakeStatus();
                SSLEngineResult r;
                if (hs == SSLEngineResult.HandshakeStatus.NEED_TASK) {
                    runTlsTasks();
                    break;
                } else if (hs == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
                    r = tls.engine.wrap(EMPTY, out);
                } else if (tls.established && !queue.isEmpty()) {
                    r = wrapQueued(out);
                } else {
                    break;                              // the handshake waits for the peer, or nothing is queued
                }
                if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.FINISHED) tls.established = true;
                if (r.getStatus() != SSLEngineResult.Status.OK || r.bytesProduced() == 0) break;
            }
        } finally {
            tls.filled();
        }
        return tls.outputPending();
    }

    /** Encrypts from the head of the queue into {@code out}: buffers in one gathering wrap, or a piece of a file region. */
    private SSLEngineResult wrapQueued(ByteBuffer out) throws IOException {
        Item head = queue.peek();
        if (head.file != null) {
            ByteBuffer chunk = loop.tlsFileChunk().clear();
            if (head.remaining < chunk.capacity()) chunk.limit((int) head.remaining);
            if (head.file.read(chunk, head.position) < 0) {
                throw new EOFException("the file region ends " + head.remaining + " bytes early");
            }
            chunk.flip();
            SSLEngineResult r = tls.engine.wrap(chunk, out);
            head.position += r.bytesConsumed();
            head.remaining -= r.bytesConsumed();
            queuedBytes -= r.bytesConsumed();
            if (head.remaining == 0) done(queue.poll());
            return r;
        }
        ByteBuffer[] gather = loop.gather;
        int count = gather(gather);
        SSLEngineResult r = tls.engine.wrap(gather, 0, count, out);
        Arrays.fill(gather, 0, count, null);
        queuedBytes -= r.bytesConsumed();
        doneWithWritten(count);
        return r;
    }

    /** Hands the engine's delegated tasks to the transport's TLS threads; the loop resumes this connection after them. */
    private void runTlsTasks() {
        if (tls.tasksRunning) return;
        tls.tasksRunning = true;
        SSLEngine engine = tls.engine;
        try {
            loop.tlsTasks().execute(() -> {
                try {
                    for (Runnable task; (task = engine.getDelegatedTask()) != null; ) task.run();
                } finally {
                    loop.execute(this::tlsTasksDone);
                }
            });
        } catch (RejectedExecutionException e) {
            tls.tasksRunning = false;
            close(new IOException("the transport is closing", e));
        }
    }

    private void tlsTasksDone() {
        tls.tasksRunning = false;
        if (closed) return;
        try {
            tlsInput();
        } catch (IOException e) {
            close(e);
            return;
        }
        flush();
    }

    /**
     * Tells the peer the session ends — close_notify, or the alert of a failed handshake — if the
     * socket takes it now. Never waits: a peer that does not read learns it from the TCP close.
     */
    private void closeTls() {
        if (tls.tasksRunning || tls.filling) return;         // the engine is busy: a plain TCP close
        try {
            if (tls.outputPending()) tls.write(channel);
            if (tls.outputPending()) return;
            tls.engine.closeOutbound();
            ByteBuffer out = tls.fill();
            try {
                while (tls.roomForRecord() && tls.engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
                    SSLEngineResult r = tls.engine.wrap(EMPTY, out);
                    if (r.bytesProduced() == 0 || r.getStatus() == SSLEngineResult.Status.CLOSED) break;
                }
            } finally {
                tls.filled();
            }
            tls.write(channel);
        } catch (IOException | RuntimeException e) {
            // closing anyway
        }
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
        if (tls != null) closeTls();
        if (key != null) key.cancel();
        try {
            channel.close();
        } catch (IOException e) {
            // closing anyway
        }
        for (Item item; (item = queue.poll()) != null; ) done(item);
        queuedBytes = 0;
        kept = EMPTY;
        loop.remove(this);
        if (listener != null) listener.released(this);
        handler.closed(this, cause);
    }

    /** "ADDR:PORT" of the peer, for logs and refusals. Any thread. */
    public String describe() {
        return remote == null ? "?" : remote.getAddress().getHostAddress() + ":" + remote.getPort();
    }

    // ---------------------------------------------------------------- queue items

    private Item item() {
        Item item = freeItems;
        if (item == null) return new Item();
        freeItems = item.next;
        item.next = null;
        return item;
    }

    private void done(Item item) {
        Runnable whenDone = item.whenDone;
        item.buffer = null;
        item.file = null;
        item.whenDone = null;
        item.next = freeItems;
        freeItems = item;
        if (whenDone != null) whenDone.run();
    }

    /** One queued piece of output: a buffer, or a file region. */
    private static final class Item {
        ByteBuffer buffer;
        FileChannel file;
        long position;
        long remaining;
        Runnable whenDone;
        Item next;
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
