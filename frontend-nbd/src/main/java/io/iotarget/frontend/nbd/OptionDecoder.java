package io.iotarget.frontend.nbd;

import java.nio.ByteBuffer;

/**
 * Decodes what a client sends during the fixed-newstyle handshake: its flags, then options.
 *
 * <pre>
 *  client flags (4 bytes)        FLAGS_BYTES=4
 *  | flags (u32)   |
 *
 *  option (16-byte header + data)
 *  0                 8            12           16
 *  | IHAVEOPT (u64)  | option u32 | length u32 | data (length bytes) ...
 *    MAGIC_OFFSET=0    CODE_OFFSET=8 LENGTH_OFFSET=12
 * </pre>
 *
 * A state machine over whatever bytes have arrived: it never takes half of a fixed field, and
 * option data longer than {@link #MAX_OPTION_DATA} is skipped rather than buffered (the
 * {@link TooBig} event lets the caller answer NBD_REP_ERR_TOO_BIG and carry on, as the spec's
 * "skip by length" allows). One instance per connection; the connection's event loop only.
 */
final class OptionDecoder {
    static final int FLAGS_BYTES = 4;
    static final int HEADER_BYTES = 16;
    static final int MAGIC_OFFSET = 0;
    static final int CODE_OFFSET = 8;
    static final int LENGTH_OFFSET = 12;
    /**
     * Largest option data kept: 64 KiB holds an INFO/GO or META_CONTEXT with many
     * 4096-byte strings; anything longer is refused unread.
     */
    static final int MAX_OPTION_DATA = 64 * 1024;

    /** What the decoder recognised. */
    sealed interface Event {
    }

    /** The client's 32-bit flags. */
    record ClientFlags(int flags) implements Event {
    }

    /** One complete option. */
    record Option(int code, byte[] data) implements Event {
    }

    /** An option whose data was too long to keep; its bytes were skipped. */
    record TooBig(int code, long length) implements Event {
    }

    /** The option header did not start with IHAVEOPT: the stream cannot be resynchronised. */
    record BadMagic(long magic) implements Event {
    }

    private enum State { CLIENT_FLAGS, HEADER, DATA, SKIP }

    private State state = State.CLIENT_FLAGS;
    private int code;
    private long skipRemaining;
    private long skipTotal;
    private byte[] data;
    private int dataFilled;

    /** Consumes what it can; returns the next event, or null when more bytes are needed. */
    Event decode(ByteBuffer in) {
        while (true) {
            switch (state) {
                case CLIENT_FLAGS -> {
                    if (in.remaining() < FLAGS_BYTES) return null;
                    state = State.HEADER;
                    return new ClientFlags(in.getInt());
                }
                case HEADER -> {
                    if (in.remaining() < HEADER_BYTES) return null;
                    int at = in.position();
                    long magic = in.getLong(at + MAGIC_OFFSET);
                    if (magic != NbdWire.IHAVEOPT) return new BadMagic(magic);
                    code = in.getInt(at + CODE_OFFSET);
                    long length = Integer.toUnsignedLong(in.getInt(at + LENGTH_OFFSET));
                    in.position(at + HEADER_BYTES);
                    if (length > MAX_OPTION_DATA) {
                        skipRemaining = skipTotal = length;
                        state = State.SKIP;
                    } else {
                        data = new byte[(int) length];
                        dataFilled = 0;
                        state = State.DATA;
                    }
                }
                case DATA -> {
                    int n = Math.min(in.remaining(), data.length - dataFilled);
                    in.get(data, dataFilled, n);
                    dataFilled += n;
                    if (dataFilled < data.length) return null;
                    state = State.HEADER;
                    byte[] done = data;
                    data = null;
                    return new Option(code, done);
                }
                case SKIP -> {
                    int n = (int) Math.min(in.remaining(), skipRemaining);
                    in.position(in.position() + n);
                    skipRemaining -= n;
                    if (skipRemaining > 0) return null;
                    state = State.HEADER;
                    return new TooBig(code, skipTotal);
                }
            }
        }
    }
}
