package io.iotarget.transport;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * The TLS record layer of one {@link Connection}: its {@link SSLEngine} and the two buffers of
 * ciphertext between the engine and the socket. The connection decides what to unwrap and wrap
 * and when; this class keeps the buffers' modes straight and says what the engine needs next.
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

    final SSLEngine engine;
    private final int packetBytes;
    /** Ciphertext received and not unwrapped yet, in filling mode (data from 0 to position); null while trimmed. */
    private ByteBuffer in;
    /** Bytes to write to the socket as they are, in draining mode (position to limit) or, while {@link #filling}, being filled; null while trimmed. */
    private ByteBuffer out;
    /** The engine is writing records into {@code out} (between {@link #fill()} and {@link #filled()}). */
    boolean filling;
    /** The handshake finished: application data may flow. */
    boolean established;
    /** The handler heard {@link ConnectionHandler#tlsEstablished}. */
    boolean told;
    /** Delegated tasks are running on another thread: the engine is not to be touched. */
    boolean tasksRunning;
    /** Unwrapping stopped for a message the engine could not send yet (the socket was full): resume once it is sent. */
    boolean unwrapAfterWrite;

    TlsLayer(SSLEngine engine) throws SSLException {
        this.engine = engine;
        this.packetBytes = engine.getSession().getPacketBufferSize();
        engine.beginHandshake();
    }

    /**
     * Puts bytes in front of everything the engine will produce, to go out as they are: what the
     * connection had queued before the switch (the protocol's "go ahead with TLS" reply).
     */
    void sendClear(ByteBuffer bytes) {
        int pending = out == null ? 0 : out.remaining();
        ByteBuffer merged = ByteBuffer.allocate(Math.max(bufferBytes(), pending + bytes.remaining()));
        if (out != null) merged.put(out);
        merged.put(bytes).flip();
        out = merged;
    }

    // ---------------------------------------------------------------- input

    /** Reads what the socket has into {@code in}; -1 at end of stream. */
    int read(SocketChannel channel) throws IOException {
        if (in == null) in = ByteBuffer.allocate(bufferBytes());
        if (!in.hasRemaining()) return 0;               // a whole buffer waits to be unwrapped
        return channel.read(in);
    }

    /** True when {@code in} was filled to the brim by the last read (the socket may have more). */
    boolean inputFull() {
        return in != null && !in.hasRemaining();
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

    /** Unwraps whole records from {@code in} into {@code plain} (filling mode) until it has to stop; says why. */
    Input unwrap(ByteBuffer plain) throws SSLException {
        if (!hasInput()) return Input.NEED_INPUT;
        in.flip();
        try {
            while (true) {
                SSLEngineResult r = engine.unwrap(in, plain);
                SSLEngineResult.HandshakeStatus hs = r.getHandshakeStatus();
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

    // ---------------------------------------------------------------- output

    /**
     * Bytes are waiting to be written — including records being filled in right now: a
     * completion callback run during a wrap must not think the connection has nothing left to send.
     */
    boolean outputPending() {
        return out != null && (filling ? out.position() > 0 : out.hasRemaining());
    }

    /** Writes what the socket takes of {@code out}. */
    int write(SocketChannel channel) throws IOException {
        return channel.write(out);
    }

    /** The empty {@code out}, cleared for the engine to fill; call {@link #filled()} after. */
    ByteBuffer fill() {
        if (out == null) out = ByteBuffer.allocate(bufferBytes());
        filling = true;
        return out.clear();
    }

    /** What {@link #fill()} returned has been filled: it drains from now on. */
    void filled() {
        out.flip();
        filling = false;
    }

    /** Room for one more record of the largest size in {@code out} while it fills. */
    boolean roomForRecord() {
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
