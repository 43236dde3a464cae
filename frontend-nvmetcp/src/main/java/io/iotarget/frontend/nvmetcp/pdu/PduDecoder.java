package io.iotarget.frontend.nvmetcp.pdu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/**
 * Takes host-to-controller PDUs off a byte stream: a state machine fed with whatever the
 * socket returned, however the stream was cut. It checks the framing (type, hlen, plen, pdo,
 * digest flags), verifies header digests, moves data straight into the buffer the handler
 * names, and checks data digests as the bytes pass.
 *
 * <pre>
 *   COMMON_HEADER ─► HEADER ─► (onHeader) ─┬─ no data ─────────────────────────────► (onPdu)
 *    8 bytes         rest of hlen            └─► PADDING ─► DATA ─► [DATA_DIGEST] ─► (onPdu)
 *                    + header digest              pdo - hlen - hdgst
 * </pre>
 *
 * A field is never half-consumed: header and digest bytes collect in the decoder's own buffer
 * until the field is whole. Framing errors and header digest mismatches are fatal
 * ({@link PduHandler#onFatal}); a data digest mismatch is reported with the PDU, for the
 * handler to act on.
 *
 * <p>One owner thread (the connection's reader); allocates nothing after construction.
 */
public final class PduDecoder {
    private enum State { COMMON_HEADER, HEADER, HELD, PADDING, DATA, DATA_DIGEST, HALTED }

    private final PduHandler handler;
    private final ByteBuffer header = ByteBuffer.allocate(Pdu.MAX_HLEN + Pdu.DIGEST_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    private final ByteBuffer digest = ByteBuffer.allocate(Pdu.DIGEST_BYTES).order(ByteOrder.LITTLE_ENDIAN);
    private final CRC32C crc = new CRC32C();

    private boolean headerDigests;
    private boolean dataDigests;

    private State state = State.COMMON_HEADER;
    private int headerFill;
    private int headerBytes;        // hlen + header digest
    private int hlen;
    private int padding;
    private int dataLength;
    private int dataLeft;
    private boolean pduHasDataDigest;
    private ByteBuffer destination;

    public PduDecoder(PduHandler handler) {
        this.handler = handler;
    }

    /** Digests negotiated by ICReq/ICResp; they apply from the next PDU on. */
    public void digests(boolean header, boolean data) {
        this.headerDigests = header;
        this.dataDigests = data;
    }

    /** Stops decoding for good (the handler terminates the connection). */
    public void halt() {
        state = State.HALTED;
    }

    public boolean halted() {
        return state == State.HALTED;
    }

    /** True while a header's handler holds its data back ({@link PduHandler#HOLD}). */
    public boolean held() {
        return state == State.HELD;
    }

    /** The held PDU's data goes to {@code destination} (exactly the data's length remaining); decoding may go on. */
    public void resume(ByteBuffer destination) {
        if (state != State.HELD) throw new IllegalStateException("no PDU is held");
        startData(destination);
    }

    /**
     * Consumes all of {@code in}, delivering every PDU completed on the way; keeps partial ones.
     * Stops early, leaving the rest of {@code in}, while a PDU is {@linkplain #held() held}.
     */
    public void decode(ByteBuffer in) {
        while (in.hasRemaining()) {
            switch (state) {
                case COMMON_HEADER -> readCommonHeader(in);
                case HEADER -> readHeader(in);
                case PADDING -> skipPadding(in);
                case DATA -> readData(in);
                case DATA_DIGEST -> readDataDigest(in);
                case HELD -> {
                    return;
                }
                case HALTED -> {
                    in.position(in.limit());
                    return;
                }
            }
        }
    }

    private void readCommonHeader(ByteBuffer in) {
        if (!fillHeader(in, Pdu.COMMON_HEADER_BYTES)) return;
        int type = header.get(Pdu.TYPE) & 0xff;
        int flags = header.get(Pdu.FLAGS) & 0xff;
        int expectedHlen = Pdu.hostHeaderLength(type);
        if (expectedHlen < 0) {
            fatal(Pdu.FES_INVALID_HEADER_FIELD, Pdu.TYPE);
            return;
        }
        hlen = header.get(Pdu.HLEN) & 0xff;
        if (hlen != expectedHlen) {
            fatal(Pdu.FES_INVALID_HEADER_FIELD, Pdu.HLEN);
            return;
        }
        boolean withHeaderDigest = headerDigests && Pdu.digestible(type);
        if (((flags & Pdu.FLAG_HDGST) != 0) != withHeaderDigest) {
            fatal(Pdu.FES_INVALID_HEADER_FIELD, Pdu.FLAGS);
            return;
        }
        headerBytes = hlen + (withHeaderDigest ? Pdu.DIGEST_BYTES : 0);
        long plen = Integer.toUnsignedLong(header.getInt(Pdu.PLEN));
        if (plen < headerBytes || (type == Pdu.TYPE_IC_REQ && plen != Pdu.IC_HLEN)) {
            fatal(Pdu.FES_INVALID_HEADER_FIELD, Pdu.PLEN);
            return;
        }
        padding = 0;
        pduHasDataDigest = false;
        if (plen == headerBytes) {
            dataLength = 0;
        } else if (type == Pdu.TYPE_H2C_TERM) {
            // The offending header a host echoes back: no pdo, no digests.
            dataLength = (int) Math.min(plen - headerBytes, Pdu.TERM_MAX_ERROR_HEADER);
        } else {
            int pdo = header.get(Pdu.PDO) & 0xff;
            pduHasDataDigest = (flags & Pdu.FLAG_DDGST) != 0;
            if (pduHasDataDigest != dataDigests) {
                fatal(Pdu.FES_INVALID_HEADER_FIELD, Pdu.FLAGS);
                return;
            }
            if (pdo < headerBytes || pdo >= plen) {
                fatal(Pdu.FES_INVALID_HEADER_FIELD, Pdu.PDO);
                return;
            }
            long length = plen - pdo - (pduHasDataDigest ? Pdu.DIGEST_BYTES : 0);
            if (length <= 0 || length > Integer.MAX_VALUE) {
                fatal(Pdu.FES_INVALID_HEADER_FIELD, Pdu.PLEN);
                return;
            }
            padding = pdo - headerBytes;
            dataLength = (int) length;
        }
        state = State.HEADER;
        readHeader(in);
    }

    private void readHeader(ByteBuffer in) {
        if (!fillHeader(in, headerBytes)) return;
        if (headerBytes > hlen) {
            crc.reset();
            crc.update(header.array(), header.arrayOffset(), hlen);
            if ((int) crc.getValue() != header.getInt(hlen)) {
                fatal(Pdu.FES_HEADER_DIGEST_ERROR, 0);
                return;
            }
        }
        header.limit(hlen).position(0);
        ByteBuffer target = handler.onHeader(header, dataLength);
        if (state == State.HALTED) return;
        if (target == PduHandler.HOLD) {
            state = State.HELD;
            return;
        }
        startData(target);
    }

    private void startData(ByteBuffer target) {
        destination = target;
        if (destination != null && destination.remaining() != dataLength) {
            throw new IllegalStateException("handler gave " + destination.remaining() + " bytes of room for " + dataLength);
        }
        if (dataLength == 0) {
            finishPdu(true);
            return;
        }
        dataLeft = dataLength;
        crc.reset();
        state = padding > 0 ? State.PADDING : State.DATA;
    }

    private void skipPadding(ByteBuffer in) {
        int n = Math.min(padding, in.remaining());
        in.position(in.position() + n);
        padding -= n;
        if (padding == 0) state = State.DATA;
    }

    private void readData(ByteBuffer in) {
        int n = Math.min(dataLeft, in.remaining());
        int from = in.position();
        if (destination != null) {
            destination.put(destination.position(), in, from, n);
            destination.position(destination.position() + n);
        }
        if (pduHasDataDigest) {
            int limit = in.limit();
            in.limit(from + n);
            crc.update(in);                 // advances in's position by n
            in.limit(limit);
        } else {
            in.position(from + n);
        }
        dataLeft -= n;
        if (dataLeft > 0) return;
        if (pduHasDataDigest) {
            digest.clear();
            state = State.DATA_DIGEST;
        } else {
            finishPdu(true);
        }
    }

    private void readDataDigest(ByteBuffer in) {
        int n = Math.min(digest.remaining(), in.remaining());
        digest.put(digest.position(), in, in.position(), n);
        digest.position(digest.position() + n);
        in.position(in.position() + n);
        if (digest.hasRemaining()) return;
        finishPdu((int) crc.getValue() == digest.getInt(0));
    }

    private void finishPdu(boolean dataDigestOk) {
        header.limit(hlen).position(0);
        handler.onPdu(header, dataDigestOk);
        destination = null;
        headerFill = 0;
        header.clear();
        if (state != State.HALTED) state = State.COMMON_HEADER;
    }

    /** Copies header bytes until {@code target} are present; true when they are. */
    private boolean fillHeader(ByteBuffer in, int target) {
        int n = Math.min(target - headerFill, in.remaining());
        header.put(headerFill, in, in.position(), n);
        in.position(in.position() + n);
        headerFill += n;
        return headerFill == target;
    }

    private void fatal(int fes, int fei) {
        state = State.HALTED;
        handler.onFatal(fes, fei);
    }
}
