package io.iotarget.transport;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.concurrent.RejectedExecutionException;

/**
 * The TLS path of one {@link Connection} once it switched ({@link Connection#startTls}): its
 * {@link SSLEngine}, the two buffers of ciphertext between the engine and the socket, and the
 * steps that move bytes through them — reading and unwrapping into plaintext for the handler,
 * wrapping the connection's {@link OutputQueue} and writing the records, handing the
 * handshake's delegated tasks to the transport's TLS threads, and close_notify. The connection
 * calls in where a plain connection would read or write the socket itself.
 *
 * <pre>
 *   socket ─read─► in (ciphertext, filling) ─unwrap─► loop's plaintext buffer ─► handler.received
 *   handler.send ─► connection's queue ─wrap─► out (ciphertext, draining) ─write─► socket
 * </pre>
 *
 * {@code in} keeps at most a partial record between reads; {@code out} is filled only once it is
 * empty, with as many records as fit, so a partial write never moves bytes. Both are allocated
 * when needed and let go while empty ({@link #trim}), so an idle TLS connection holds no buffer
 * — only its engine. They are heap buffers: the JDK's AES-GCM works on arrays, and wrapping 1 MiB
 * into a heap buffer takes 101 µs against 254 µs into a direct one, unwrapping it from one ~183
 * against ~274 µs ({@code bench/run jmh TlsRecordBenchmark}, bench/results/nbd-tls.md) — far more
 * than the copy the socket call then makes into its temporary direct buffer (~30 µs per MiB).
 *
 * <p>Loop thread only, except that {@link SSLEngine#getDelegatedTask() delegated tasks} run on
 * the transport's TLS task threads while {@link #tasksRunning} keeps the loop off the engine.
 */
final class TlsLayer {
    /** Records each ciphertext buffer holds: several per read or write call, for bulk transfers. */
    private static final int RECORDS_PER_BUFFER = 4;

    /** What unwrapping stopped for. */
    enum Input {
        /** Nothing more to unwrap until more ciphertext arrives. */
        NEED_INPUT,
        /** The plaintext buffer is full: deliver it, then unwrap again. */
        PLAIN_FULL,
        /** The engine has something to send (a handshake message, an alert): wrap it, then unwrap again. */
        NEED_WRAP,
        /** The engine has work to run off the loop before it can go on. */
        NEED_TASK,
        /** The peer sent close_notify: no more input. */
        CLOSED
    }

    private final Connection connection;
    private final SocketChannel channel;
    private final OutputQueue output;
    private final SSLEngine engine;
    private final int packetBytes;
    /** Ciphertext received and not unwrapped yet, in filling mode (data from 0 to position); null while trimmed. */
    private ByteBuffer in;
    /** Bytes to write to the socket as they are, in draining mode (position to limit) or, while {@link #filling}, being filled; null while trimmed. */
    private ByteBuffer out;
    /** The engine is writing records into {@code out} (between {@link #fill()} and {@link #filled()}). */
    private boolean filling;
    /** The handshake finished: application data may flow. */
    private boolean established;
    /** The handler heard {@link ConnectionHandler#tlsEstablished}. */
    private boolean told;
    /** Delegated tasks are running on another thread: the engine is not to be touched. */
    private boolean tasksRunning;
    /** Unwrapping stopped for a message the engine could not send yet (the socket was full): resume once it is sent. */
    private boolean unwrapAfterWrite;

    /**
     * Begins the handshake with {@code engine}; the buffers queued in {@code output} until now
     * (no file regions: the connection checked) go out in clear before it.
     */
    TlsLayer(Connection connection, SocketChannel channel, OutputQueue output, SSLEngine engine) throws SSLException {
        this.connection = connection;
        this.channel = channel;
        this.output = output;
        this.engine = engine;
        this.packetBytes = engine.getSession().getPacketBufferSize();
        engine.beginHandshake();
        output.moveBuffers(this::sendClear);
    }

    /** The session of the finished handshake, or null before it finished. */
    SSLSession session() {
        return established ? engine.getSession() : null;
    }

    /**
     * Puts bytes in front of everything the engine will produce, to go out as they are: what the
     * connection had queued before the switch (the protocol's "go ahead with TLS" reply).
     */
    private void sendClear(ByteBuffer bytes) {
        int pending = out == null ? 0 : out.remaining();
        ByteBuffer merged = ByteBuffer.allocate(Math.max(bufferBytes(), pending + bytes.remaining()));
        if (out != null) merged.put(out);
        merged.put(bytes).flip();
        out = merged;
    }

    // ---------------------------------------------------------------- input

    /** One read: ciphertext in, plaintext to the handler; 0 when the socket has no more for now, -1 at its end. */
    int read() throws IOException {
        if (in == null) in = ByteBuffer.allocate(bufferBytes());
        int n = in.hasRemaining() ? channel.read(in) : 0;       // else a whole buffer waits to be unwrapped
        boolean more = !in.hasRemaining();                     // filled to the brim: the socket may have more
        input();
        return n > 0 && !more ? 0 : n;
    }

    /** Ciphertext is waiting to be unwrapped. */
    boolean hasInput() {
        return in != null && in.position() > 0;
    }

    /** Takes bytes that arrived before the switch was noticed: the start of the peer's handshake. */
    void receivedEarly(ByteBuffer bytes) {
        if (in == null) in = ByteBuffer.allocate(Math.max(bufferBytes(), bytes.remaining()));
        if (in.remaining() < bytes.remaining()) {
            ByteBuffer bigger = ByteBuffer.allocate(in.position() + bytes.remaining());
            in.flip();
            bigger.put(in);
            in = bigger;
        }
        in.put(bytes);
    }

    /** Unwraps what has arrived and offers the plaintext to the handler, until the engine or the handler has to wait. */
    void input() throws IOException {
        while (!connection.isClosed() && !connection.inputPaused() && !tasksRunning) {
            ByteBuffer plain = connection.loop().tlsPlainBuffer().clear();
            connection.takeKept(plain);
            int before = plain.position();
            Input next = unwrap(plain);
            plain.flip();
            if (established && !told) {
                told = true;
                connection.tlsEstablished();
                if (connection.isClosed()) return;
            }
            boolean fresh = plain.limit() > before;
            if (plain.hasRemaining()) connection.deliver(plain);
            switch (next) {
                case NEED_INPUT -> {
                    return;
                }
                case PLAIN_FULL -> {
                    if (!fresh) throw new IllegalStateException("a TLS record does not fit the plaintext buffer");
                }
                case NEED_WRAP -> {
                    connection.flush();
                    if (connection.isClosed()) return;
                    if (engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
                        unwrapAfterWrite = true;             // the socket is full; write() brings us back
                        return;
                    }
                }
                case NEED_TASK -> {
                    runTasks();
                    return;
                }
                case CLOSED -> {
                    connection.endOfInput();
                    return;
                }
            }
        }
    }

    /** Unwraps whole records from {@code in} into {@code plain} (filling mode) until it has to stop; says why. */
    private Input unwrap(ByteBuffer plain) throws SSLException {
        if (!hasInput()) return Input.NEED_INPUT;
        in.flip();
        try {
            while (true) {
                SSLEngineResult r = engine.unwrap(in, plain);
                SSLEngineResult.HandshakeStatus hs = r.getHandshakeStatus();
                if (established && renegotiating(hs)) throw new SSLException("the client asked to renegotiate TLS 1.2 (refused)");
                if (hs == SSLEngineResult.HandshakeStatus.FINISHED) established = true;
                switch (r.getStatus()) {
                    case BUFFER_UNDERFLOW -> {
                        return Input.NEED_INPUT;
                    }
                    case BUFFER_OVERFLOW -> {
                        return Input.PLAIN_FULL;
                    }
                    case CLOSED -> {
                        return Input.CLOSED;
                    }
                    case OK -> {
                    }
                }
                if (hs == SSLEngineResult.HandshakeStatus.NEED_TASK) return Input.NEED_TASK;
                if (hs == SSLEngineResult.HandshakeStatus.NEED_WRAP) return Input.NEED_WRAP;
                if (!in.hasRemaining() || r.bytesConsumed() == 0) return Input.NEED_INPUT;
            }
        } finally {
            in.compact();
        }
    }

    /**
     * A TLS 1.2 session starting a handshake anew: the client renegotiates, which costs the
     * server a handshake per request and could change the identity the connection was admitted
     * with; it ends the connection. (TLS 1.3's post-handshake messages, a KeyUpdate to answer,
     * are not this.)
     */
    private boolean renegotiating(SSLEngineResult.HandshakeStatus hs) {
        return (hs == SSLEngineResult.HandshakeStatus.NEED_TASK || hs == SSLEngineResult.HandshakeStatus.NEED_WRAP
                || hs == SSLEngineResult.HandshakeStatus.NEED_UNWRAP)
               && "TLSv1.2".equals(engine.getSession().getProtocol());
    }

    // ---------------------------------------------------------------- output

    /**
     * Bytes are waiting to be written — including records being filled in right now: a
     * completion callback run during a wrap must not think the connection has nothing left to send.
     */
    boolean outputPending() {
        return out != null && (filling ? out.position() > 0 : out.hasRemaining());
    }

    /** Anything for a flush to do: bytes queued or encrypted, or a message the engine wants to send. */
    boolean hasOutput() {
        return !output.isEmpty() || outputPending()
               || (!tasksRunning && engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP);
    }

    /** Writes what is encrypted and encrypts more until the socket is full or nothing can go; true when the socket is full. */
    boolean write() throws IOException {
        boolean socketFull = false;
        while (!connection.isClosed()) {
            if (outputPending()) {
                if (channel.write(out) > 0) connection.progressed();
                if (outputPending()) {
                    socketFull = true;
                    break;
                }
            }
            if (!encrypt()) break;
        }
        if (unwrapAfterWrite && engine.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NEED_WRAP) {
            unwrapAfterWrite = false;
            connection.redeliverSoon();
        }
        return socketFull;
    }

    /**
     * Fills the empty output buffer with records: the engine's own messages first, queued data
     * once the handshake is done. True when something was produced.
     */
    private boolean encrypt() throws IOException {
        if (tasksRunning) return false;
        ByteBuffer records = fill();
        try {
            while (roomForRecord() && !connection.isClosed()) {
                SSLEngineResult.HandshakeStatus hs = engine.getHandshakeStatus();
                SSLEngineResult r;
                if (hs == SSLEngineResult.HandshakeStatus.NEED_TASK) {
                    runTasks();
                    break;
                } else if (hs == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
                    r = engine.wrap(Connection.EMPTY, records);
                } else if (established && !output.isEmpty()) {
                    r = wrapQueued(records);
                } else {
                    break;                              // the handshake waits for the peer, or nothing is queued
                }
                if (r.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.FINISHED) established = true;
                if (r.getStatus() == SSLEngineResult.Status.CLOSED && !output.isEmpty()) {
                    // The session is over (the peer's close_notify ends both directions in Bouncy Castle's
                    // engine): what is queued can never go, and waiting for it would keep the connection
                    // until a timeout ends it (a client's NBD_OPT_ABORT, answered, then close_notify and FIN).
                    throw new IOException("the TLS session is closed; " + output.bytes() + " byte(s) of replies cannot be sent");
                }
                if (r.getStatus() != SSLEngineResult.Status.OK || r.bytesProduced() == 0) break;
            }
        } finally {
            filled();
        }
        return outputPending();
    }

    /** Encrypts from the head of the queue into {@code records}: buffers in one gathering wrap, or a piece of a file region. */
    private SSLEngineResult wrapQueued(ByteBuffer records) throws IOException {
        OutputQueue.Item head = output.head();
        if (head.file != null) {
            ByteBuffer chunk = connection.loop().tlsFileChunk().clear();
            if (head.remaining < chunk.capacity()) chunk.limit((int) head.remaining);
            if (head.file.read(chunk, head.position) < 0) throw connection.regionCutShort(head, head.file.size());
            chunk.flip();
            SSLEngineResult r = engine.wrap(chunk, records);
            head.position += r.bytesConsumed();
            head.remaining -= r.bytesConsumed();
            output.consumed(r.bytesConsumed());
            if (head.remaining == 0) output.completeHead();
            return r;
        }
        ByteBuffer[] gather = connection.loop().gather;
        int count = output.gather(gather);
        SSLEngineResult r = engine.wrap(gather, 0, count, records);
        Arrays.fill(gather, 0, count, null);
        output.consumed(r.bytesConsumed());
        output.completeWritten(count);
        return r;
    }

    /** Hands the engine's delegated tasks to the transport's TLS threads; the loop resumes this connection after them. */
    private void runTasks() {
        if (tasksRunning) return;
        tasksRunning = true;
        EventLoop loop = connection.loop();
        try {
            loop.tlsTasks().execute(() -> {
                try {
                    for (Runnable task; (task = engine.getDelegatedTask()) != null; ) task.run();
                } finally {
                    loop.execute(this::tasksDone);
                }
            });
        } catch (RejectedExecutionException e) {
            tasksRunning = false;
            connection.close(new IOException("the transport is closing", e));
        }
    }

    private void tasksDone() {
        tasksRunning = false;
        if (connection.isClosed()) return;
        try {
            input();
        } catch (IOException e) {
            connection.close(e);
            return;
        }
        connection.flush();
    }

    /**
     * Tells the peer the session ends — close_notify, or the alert of a failed handshake — if the
     * socket takes it now. Never waits: a peer that does not read learns it from the TCP close.
     */
    void close() {
        if (tasksRunning || filling) return;                // the engine is busy: a plain TCP close
        try {
            if (outputPending()) channel.write(out);
            if (outputPending()) return;
            engine.closeOutbound();
            ByteBuffer records = fill();
            try {
                while (roomForRecord() && engine.getHandshakeStatus() == SSLEngineResult.HandshakeStatus.NEED_WRAP) {
                    SSLEngineResult r = engine.wrap(Connection.EMPTY, records);
                    if (r.bytesProduced() == 0 || r.getStatus() == SSLEngineResult.Status.CLOSED) break;
                }
            } finally {
                filled();
            }
            channel.write(out);
        } catch (IOException | RuntimeException e) {
            // closing anyway
        }
    }

    /** The empty {@code out}, cleared for the engine to fill; call {@link #filled()} after. */
    private ByteBuffer fill() {
        if (out == null) out = ByteBuffer.allocate(bufferBytes());
        filling = true;
        return out.clear();
    }

    /** What {@link #fill()} returned has been filled: it drains from now on. */
    private void filled() {
        out.flip();
        filling = false;
    }

    /** Room for one more record of the largest size in {@code out} while it fills. */
    private boolean roomForRecord() {
        return out.remaining() >= packetBytes;
    }

    /** Lets go of buffers that hold nothing (loop's sweep). */
    void trim() {
        if (in != null && in.position() == 0) in = null;
        if (out != null && !out.hasRemaining()) out = null;
    }

    private int bufferBytes() {
        return RECORDS_PER_BUFFER * packetBytes;
    }
}
