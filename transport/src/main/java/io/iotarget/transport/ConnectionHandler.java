package io.iotarget.transport;

import java.nio.ByteBuffer;

/**
 * A protocol's side of one {@link Connection}. Every method runs on the connection's loop
 * thread and must not block; what the handler queues with {@link Connection#send} is written
 * when the callback returns.
 */
public interface ConnectionHandler {
    /** The connection is registered with its loop (send a greeting, arm a handshake limit here). */
    default void opened(Connection connection) {
    }

    /**
     * Bytes arrived. Consume what can be used from {@code in} (position to limit); whatever is
     * left is kept and offered again, in front of the next bytes, on the next call — so a
     * decoder may stop in the middle of a header. A handler that cannot go on (no buffer, too
     * many commands in flight) calls {@link Connection#pauseInput()} and later
     * {@link Connection#resumeInput()}, after which what was kept is offered again. The buffer
     * is the loop's: keep no reference to it.
     */
    void received(Connection connection, ByteBuffer in);

    /**
     * Where the next socket read should go instead of the loop's buffer: a large payload the
     * handler is filling (it then learns of the bytes through a {@link #received} call with an
     * empty buffer). Asked only when nothing is kept, and never under TLS; null (the default)
     * reads as usual.
     */
    default ByteBuffer readTarget(Connection connection) {
        return null;
    }

    /**
     * The TLS handshake that {@link Connection#startTls} began has finished:
     * {@link Connection#tlsSession()} now tells who the peer is. Called once, before the first
     * plaintext is {@linkplain #received received}.
     */
    default void tlsEstablished(Connection connection) {
    }

    /** The peer closed its sending side (end of stream). By default the connection closes. */
    default void inputEnded(Connection connection) {
        connection.close(null);
    }

    /** Everything queued has been written (called after a write that left nothing queued). */
    default void drained(Connection connection) {
    }

    /**
     * The connection is closed: the socket is gone, what was still queued was dropped (its
     * completion callbacks ran). Called exactly once; {@code cause} is null for an orderly end.
     */
    void closed(Connection connection, Throwable cause);
}
