package io.iotarget.transport;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;

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
        if (kept.hasRemaining() && !redeliveryQueued) {
            redeliveryQueued = true;
            loop.execute(this::redeliver);
        }
    }

    public boolean inputPaused() {
        return inputPaused;
    }

    private void redeliver() {
        redeliveryQueued = false;
        if (closed || inputPaused || !kept.hasRemaining()) return;
        ByteBuffer buffer = loop.readBuffer.clear();
        buffer.put(kept).flip();
        kept.clear().limit(0);
        deliver(buffer);
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
                ByteBuffer target = kept.hasRemaining() ? null : handler.readTarget(this);
                if (target != null) {
                    n = channel.read(target);
                    if (n > 0) handler.received(this, EMPTY);
                } else {
                    ByteBuffer buffer = loop.readBuffer.clear();
                    if (kept.hasRemaining()) {
                        buffer.put(kept);
                        kept.clear().limit(0);
                    }
                    int before = buffer.position();
                    n = channel.read(buffer);
                    buffer.flip();
                    if (buffer.hasRemaining()) deliver(buffer);
                    if (n > 0 && before + n < buffer.capacity()) n = 0;     // the socket had no more
                }
            } catch (IOException e) {
                close(e);
                return;
            }
            if (n < 0) {
                inputEnded = true;
                key.interestOps(key.interestOps() & ~SelectionKey.OP_READ);
                handler.inputEnded(this);
                return;
            }
            if (n == 0) return;
        }
    }

    /** Offers {@code buffer} to the handler and keeps what it left. */
    private void deliver(ByteBuffer buffer) {
        handler.received(this, buffer);
        if (closed || !buffer.hasRemaining()) return;
        int left = buffer.remaining();
        if (left == EventLoop.READ_BUFFER_BYTES && !inputPaused) {
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
     * Queues {@code bytes}; {@code whenDone} runs on the loop once they are written, or when they
     * are dropped because the connection closed ({@link #isClosed()} tells which).
     */
    public void send(ByteBuffer bytes, Runnable whenDone) {
        Item item = item();
        item.buffer = bytes;
        item.whenDone = whenDone;
        enqueue(item, bytes.remaining());
    }

    /** Queues {@code length} bytes of {@code file} from {@code position}, to be sent by sendfile(2). */
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
        if (queue.isEmpty()) lastProgressNs = System.nanoTime();
        queue.add(item);
        queuedBytes += bytes;
    }

    /** Bytes queued and not yet written. */
    public long queuedBytes() {
        return queuedBytes;
    }

    /** Writes what the socket takes now. Called by the loop after every callback; handlers rarely need it. */
    public void flush() {
        if (closed || queue.isEmpty()) return;
        try {
            while (!queue.isEmpty()) {
                Item head = queue.peek();
                if (head.file != null) {
                    long n = head.file.transferTo(head.position, head.remaining, channel);
                    if (n > 0) progress(n);
                    head.position += n;
                    head.remaining -= n;
                    if (head.remaining > 0) break;
                    done(queue.poll());
                    continue;
                }
                if (!writeBuffers()) break;
            }
        } catch (IOException e) {
            close(e);
            return;
        }
        if (closed) return;                             // a completion callback closed it
        boolean pending = !queue.isEmpty();
        int ops = key.interestOps();
        int wanted = pending ? ops | SelectionKey.OP_WRITE : ops & ~SelectionKey.OP_WRITE;
        if (wanted != ops) key.interestOps(wanted);
        if (!pending) {
            if (closeWhenFlushed) {
                close(null);
                return;
            }
            handler.drained(this);
        }
    }

    /** One gathering write of the buffers at the head of the queue; true when all of them went. */
    private boolean writeBuffers() throws IOException {
        ByteBuffer[] gather = loop.gather;
        int count = 0;
        for (Item item : queue) {
            if (item.file != null || count == GATHER_MAX) break;
            gather[count++] = item.buffer;
        }
        long n = channel.write(gather, 0, count);
        java.util.Arrays.fill(gather, 0, count, null);
        if (n > 0) progress(n);
        for (int i = 0; i < count; i++) {
            Item head = queue.peek();
            if (head.buffer.hasRemaining()) return false;
            done(queue.poll());
        }
        return true;
    }

    private void progress(long bytes) {
        queuedBytes -= bytes;
        lastProgressNs = System.nanoTime();
    }

    /** Nanoseconds the queued output has been waiting for the peer to take any of it; 0 when nothing is queued. */
    long stalledNs(long nowNs) {
        return queue.isEmpty() ? 0 : nowNs - lastProgressNs;
    }

    /** Lets go of the kept-input buffer when it holds nothing (an idle connection holds no read memory). */
    void trim() {
        if (!kept.hasRemaining()) kept = EMPTY;
    }

    // ---------------------------------------------------------------- ending

    /** Closes once everything queued has been written (or at once if nothing is). */
    public void closeWhenFlushed() {
        closeWhenFlushed = true;
        if (queue.isEmpty()) close(null);
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
     * Closes now: the socket goes, queued output is dropped (each item's callback runs), the
     * handler hears {@link ConnectionHandler#closed} once. Idempotent.
     */
    public void close(Throwable cause) {
        if (closed) return;
        closed = true;
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
