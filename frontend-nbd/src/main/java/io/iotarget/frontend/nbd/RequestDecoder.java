package io.iotarget.frontend.nbd;

import java.nio.ByteBuffer;

/**
 * Decodes transmission-phase requests (compact headers).
 *
 * <pre>
 *  0        4        6        8                  16                 24         28
 *  | magic  | flags  | type   | cookie (u64)     | offset (u64)     | length   | data (WRITE only)
 *    MAGIC_OFFSET=0  FLAGS_OFFSET=4  TYPE_OFFSET=6  COOKIE_OFFSET=8  OFFSET_OFFSET=16  LENGTH_OFFSET=24
 * </pre>
 *
 * A state machine: a header is taken only when all 28 bytes are there; a WRITE's payload then
 * streams into the buffer the handler gave (or is skipped when the handler refused the
 * request, so the stream stays in step). Allocation-free. The connection's loop thread only.
 */
final class RequestDecoder {
    static final int HEADER_BYTES = 28;
    static final int MAGIC_OFFSET = 0;
    static final int FLAGS_OFFSET = 4;
    static final int TYPE_OFFSET = 6;
    static final int COOKIE_OFFSET = 8;
    static final int OFFSET_OFFSET = 16;
    static final int LENGTH_OFFSET = 24;

    /** What {@link Handler#request} returns when it cannot take the request yet: the header stays unread. */
    static final ByteBuffer BLOCKED = ByteBuffer.allocate(0);

    /** Receives decoded requests. */
    interface Handler {
        /**
         * A request header arrived. For a WRITE, returns the buffer its {@code length} payload
         * bytes go to (exactly that many remaining), or null to have them skipped; for other
         * commands null. {@link #BLOCKED} (any command) leaves the header unconsumed: the
         * decoder returns {@link Result#BLOCKED} and offers the same header again next time.
         */
        ByteBuffer request(int flags, int type, long cookie, long offset, long length);

        /** The payload of the WRITE announced last has arrived (or was skipped). */
        void payloadDone();
    }

    enum Result {
        /** A header or a payload was delivered to the handler; call again. */
        EVENT,
        /** Everything buffered was consumed; feed more bytes. */
        NEED_MORE,
        /** A header did not start with the request magic: the stream cannot be resynchronised. */
        BAD_MAGIC,
        /** The handler could not take the request now; the header is still in the buffer. */
        BLOCKED
    }

    private enum State { HEADER, PAYLOAD, SKIP }

    private State state = State.HEADER;
    private ByteBuffer payload;
    private long skipRemaining;

    /** Consumes what it can from {@code in} and delivers at most one event. */
    Result decode(ByteBuffer in, Handler handler) {
        switch (state) {
            case HEADER -> {
                if (in.remaining() < HEADER_BYTES) return Result.NEED_MORE;
                int at = in.position();
                if (in.getInt(at + MAGIC_OFFSET) != NbdWire.REQUEST_MAGIC) return Result.BAD_MAGIC;
                int flags = Short.toUnsignedInt(in.getShort(at + FLAGS_OFFSET));
                int type = Short.toUnsignedInt(in.getShort(at + TYPE_OFFSET));
                long cookie = in.getLong(at + COOKIE_OFFSET);
                long offset = in.getLong(at + OFFSET_OFFSET);
                long length = Integer.toUnsignedLong(in.getInt(at + LENGTH_OFFSET));
                ByteBuffer target = handler.request(flags, type, cookie, offset, length);
                if (target == BLOCKED) return Result.BLOCKED;
                in.position(at + HEADER_BYTES);
                if (type == NbdWire.CMD_WRITE) {
                    if (target != null) {
                        payload = target;
                        state = State.PAYLOAD;
                    } else {
                        skipRemaining = length;
                        state = State.SKIP;
                    }
                }
                return Result.EVENT;
            }
            case PAYLOAD -> {
                int n = Math.min(in.remaining(), payload.remaining());
                if (n > 0) {
                    payload.put(payload.position(), in, in.position(), n);
                    payload.position(payload.position() + n);
                    in.position(in.position() + n);
                }
                if (payload.hasRemaining()) return Result.NEED_MORE;
                payload = null;
                state = State.HEADER;
                handler.payloadDone();
                return Result.EVENT;
            }
            case SKIP -> {
                int n = (int) Math.min(in.remaining(), skipRemaining);
                in.position(in.position() + n);
                skipRemaining -= n;
                if (skipRemaining > 0) return Result.NEED_MORE;
                state = State.HEADER;
                handler.payloadDone();
                return Result.EVENT;
            }
        }
        throw new AssertionError(state);
    }

    /** True when the next event will be a request header (not the rest of a WRITE's payload). */
    boolean atHeader() {
        return state == State.HEADER;
    }

    /**
     * While a WRITE payload is being stored: the buffer the rest goes to, so a caller with
     * nothing buffered can read from the socket straight into it (then call {@link #decode}
     * with an empty buffer to finish). Null otherwise.
     */
    ByteBuffer payloadTarget() {
        return state == State.PAYLOAD ? payload : null;
    }
}
