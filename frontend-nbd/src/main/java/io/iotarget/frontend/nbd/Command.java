package io.iotarget.frontend.nbd;

import io.iotarget.backend.Backend;
import io.iotarget.buffer.PooledBuffer;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.SharedRead;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * One request of a connection from header to reply: the NBD fields, the engine request it
 * became, its data buffer and its encoded reply header. Pooled per connection and reused, so
 * the IO path allocates nothing once the pool is warm; the data buffer is the buffer pool's,
 * held by the one request.
 *
 * <p>Ownership: the connection's loop fills it and submits {@link #io}; the engine owns it
 * until the callback; then the loop encodes the reply, queues it on the connection, and takes
 * the command back into its pool once the reply is written ({@link #sent}). The hand-overs are
 * ordered by the engine's own synchronisation and the connection's completion stack.
 */
final class Command implements Backend.ExtentSink {
    /*  Simple reply (16 bytes)
     *  0        4        8                 16
     *  | magic  | error  | cookie (u64)    | [data: READ only]
     *
     *  Structured reply chunk (20-byte header)
     *  0        4        6       8                 16        20
     *  | magic  | flags  | type  | cookie (u64)    | length  | payload ...
     *
     *  payloads used here:
     *    OFFSET_DATA   | offset (u64) | data ...
     *    ERROR         | error (u32) | message length (u16) | message |
     *    BLOCK_STATUS  | context id (u32) | n × (extent length u32 | status flags u32) |
     */
    static final int SIMPLE_REPLY_BYTES = 16;
    static final int CHUNK_HEADER_BYTES = 20;
    static final int CHUNK_LENGTH_OFFSET = 16;
    /** Room for a chunk header plus the longest fixed part and error message. */
    static final int REPLY_CAPACITY = 128;
    /** A BLOCK_STATUS reply's buffer: one page, 512 extents. */
    static final int EXTENTS_BYTES = 4096;
    static final int MAX_EXTENTS = EXTENTS_BYTES / 8;
    final IoRequest io = new IoRequest();
    /** Runs on the loop when the reply's last byte is written, or dropped with the connection. */
    final Runnable sent;
    final ByteBuffer reply = ByteBuffer.allocateDirect(REPLY_CAPACITY);

    int type;
    int flags;
    long cookie;
    long offset;
    long length;
    /** An NBD errno decided before submission (validation), or 0. */
    int error;
    /** The buffer of this request: READ/WRITE data or BLOCK_STATUS extents; null otherwise (and for shared reads). */
    ByteBuffer data;
    /** Where {@link #data} comes from: the export group's share of the buffer pool; released when the command is recycled. */
    PooledBuffer pooled;
    /** {@link #io} went to the engine and the command was not recycled since (loop thread). */
    boolean submitted;
    /** Link in the connection's free and completion stacks. */
    Command next;

    Command(java.util.function.Consumer<Command> whenSent) {
        this.sent = () -> whenSent.accept(this);
    }

    private int extents;
    private int maxExtents;
    /**
     * A READ's data when the backend shared it (its memory, or a page-cache range sent with
     * sendfile(2)); else the data is in {@link #data}. Measured: 1 MiB reads cost a memcpy of
     * the MiB less.
     */
    final SharedRead shared = new SharedRead();

    void start(int type, int flags, long cookie, long offset, long length) {
        this.type = type;
        this.flags = flags;
        this.cookie = cookie;
        this.offset = offset;
        this.length = length;
        this.error = 0;
        this.data = null;
        io.reset();
    }

    /** Gives the command its pool buffer: {@link #data} is its first {@code buffer.size()} bytes. */
    void buffer(PooledBuffer buffer) {
        pooled = buffer;
        data = buffer.buffer();
    }

    /** Back to the pool, on every path (reply sent, dropped, never run). */
    void releaseBuffer() {
        data = null;
        if (pooled == null) return;
        pooled.release();
        pooled = null;
    }

    // ------------------------------------------------------------ block status

    /** Prepares the data buffer (of {@link #EXTENTS_BYTES}) to receive extents; at most one with REQ_ONE. */
    void startExtents(boolean one) {
        data.limit(0);
        extents = 0;
        maxExtents = one ? 1 : MAX_EXTENTS;
    }

    @Override
    public boolean extent(long length, boolean hole, boolean zero) {
        // The request's length is a u32, so an extent inside it always fits the u32 field.
        int status = (hole ? NbdWire.STATE_HOLE : 0) | (zero ? NbdWire.STATE_ZERO : 0);
        int at = extents * 8;
        data.limit(at + 8);
        data.putInt(at, (int) length).putInt(at + 4, status);
        return ++extents < maxExtents;
    }

    // ------------------------------------------------------------ replies

    /**
     * Encodes the reply into {@link #reply} (flipped, ready to send) and puts it, followed by
     * the buffers that must follow it on the wire, into {@code out} from {@code at}.
     *
     * @return the index after the last buffer put
     */
    int encodeReply(boolean structured, ByteBuffer[] out, int at) {
        // BLOCK_STATUS never goes through the engine, so its request has no status.
        int errno = error != 0 ? error : io.status() == null ? 0 : errno(io.status(), type);
        reply.clear();
        out[at++] = reply;
        if (errno != 0) {
            if (!structured) {
                simpleHeader(errno);
                reply.flip();
                return at;
            }
            byte[] message = message(errno);
            chunkHeader(NbdWire.REPLY_TYPE_ERROR, 6 + message.length).putInt(errno).putShort((short) message.length).put(message);
            reply.flip();
            return at;
        }
        switch (type) {
            case NbdWire.CMD_READ -> {
                if (structured) {
                    chunkHeader(NbdWire.REPLY_TYPE_OFFSET_DATA, 8 + (int) length).putLong(offset);
                } else {
                    simpleHeader(0);
                }
                reply.flip();
                if (shared.region() != null) {
                    return at;                          // the data follows from the file
                } else if (shared.viewCount() == 0) {
                    out[at++] = data.position(0);
                } else {
                    at = shared.views(out, at);
                }
                return at;
            }
            case NbdWire.CMD_BLOCK_STATUS -> {
                data.position(0);
                chunkHeader(NbdWire.REPLY_TYPE_BLOCK_STATUS, 4 + data.remaining()).putInt(NbdWire.BASE_ALLOCATION_ID);
                reply.flip();
                out[at++] = data;
                return at;
            }
            default -> {
                simpleHeader(0);
                reply.flip();
                return at;
            }
        }
    }

    private void simpleHeader(int errno) {
        reply.putInt(NbdWire.SIMPLE_REPLY_MAGIC).putInt(errno).putLong(cookie);
    }

    private ByteBuffer chunkHeader(int chunkType, int payloadLength) {
        return reply.putInt(NbdWire.STRUCTURED_REPLY_MAGIC).putShort((short) NbdWire.REPLY_FLAG_DONE)
                .putShort((short) chunkType).putLong(cookie).putInt(payloadLength);
    }

    /** The NBD errno for how the engine finished a command of this type. */
    static int errno(IoStatus status, int type) {
        return switch (status) {
            case OK -> 0;
            case INVALID, NOT_SUPPORTED -> NbdWire.EINVAL;
            // The spec's split: writes past the end are out of space, everything else is a bad argument.
            case OUT_OF_RANGE -> type == NbdWire.CMD_WRITE || type == NbdWire.CMD_WRITE_ZEROES ? NbdWire.ENOSPC : NbdWire.EINVAL;
            case READ_ONLY, FORBIDDEN -> NbdWire.EPERM;
            case NOT_FAST -> NbdWire.ENOTSUP;
            case IO_ERROR, COMPARE_FAILED, UNAVAILABLE -> NbdWire.EIO;
            case NO_SPACE -> NbdWire.ENOSPC;
            case ABORTED -> NbdWire.ESHUTDOWN;
        };
    }

    private static final byte[] EPERM_TEXT = ascii("export is read-only");
    private static final byte[] EIO_TEXT = ascii("I/O error");
    private static final byte[] EINVAL_TEXT = ascii("invalid request (range, alignment, flags or command)");
    private static final byte[] ENOSPC_TEXT = ascii("no space: write beyond the end or backend full");
    private static final byte[] EOVERFLOW_TEXT = ascii("request larger than the maximum payload");
    private static final byte[] ENOTSUP_TEXT = ascii("zeroing is not fast on this backend");
    private static final byte[] ESHUTDOWN_TEXT = ascii("export or server shutting down");

    private static byte[] message(int errno) {
        return switch (errno) {
            case NbdWire.EPERM -> EPERM_TEXT;
            case NbdWire.EIO -> EIO_TEXT;
            case NbdWire.ENOSPC -> ENOSPC_TEXT;
            case NbdWire.EOVERFLOW -> EOVERFLOW_TEXT;
            case NbdWire.ENOTSUP -> ENOTSUP_TEXT;
            case NbdWire.ESHUTDOWN -> ESHUTDOWN_TEXT;
            default -> EINVAL_TEXT;
        };
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }
}
