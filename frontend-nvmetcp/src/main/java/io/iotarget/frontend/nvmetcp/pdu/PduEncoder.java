package io.iotarget.frontend.nvmetcp.pdu;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * Writes controller-to-host PDU headers. Each method appends one header (plus its header
 * digest when {@code headerDigest}) at {@code out}'s position and advances it; data and data
 * digests are the caller's (see {@link #dataDigest}). {@code out} must be little-endian.
 *
 * <p>One owner thread (the connection's writer): the CRC32C state is reused.
 */
public final class PduEncoder {
    /*  CQE (16 bytes, CapsuleResp offset 8)
     *  0          4          8      10     12     14
     * | DW0 result | DW1     | SQHD | SQID | CID  | STATUS: phase bit 0, status << 1
     */
    public static final int CQE_RESULT = 0;
    public static final int CQE_SQHD = 8;
    public static final int CQE_SQID = 10;
    public static final int CQE_CID = 12;
    public static final int CQE_STATUS = 14;

    private final CRC32C crc = new CRC32C();
    private final boolean headerDigest;

    public PduEncoder(boolean headerDigest) {
        this.headerDigest = headerDigest;
    }

    /** Bytes {@link #capsuleResponse} appends. */
    public int responseBytes() {
        return Pdu.CAPSULE_RESP_HLEN + digestBytes();
    }

    /** Bytes {@link #dataHeader} and {@link #r2t} append. */
    public int dataHeaderBytes() {
        return Pdu.DATA_HLEN + digestBytes();
    }

    private int digestBytes() {
        return headerDigest ? Pdu.DIGEST_BYTES : 0;
    }

    /** ICResp: never digested, always 128 bytes. */
    public static void icResponse(ByteBuffer out, int digestBits, int maxH2CData) {
        int p = out.position();
        for (int i = 0; i < Pdu.IC_HLEN; i++) out.put(p + i, (byte) 0);
        common(out, p, Pdu.TYPE_IC_RESP, 0, Pdu.IC_HLEN, 0, Pdu.IC_HLEN);
        out.putShort(p + Pdu.IC_PFV, (short) 0);
        out.put(p + Pdu.IC_PDA, (byte) 0);
        out.put(p + Pdu.IC_DIGEST, (byte) digestBits);
        out.putInt(p + Pdu.IC_MAXH2CDATA, maxH2CData);
        out.position(p + Pdu.IC_HLEN);
    }

    /**
     * CapsuleResp carrying a completion queue entry.
     *
     * @param status the NVMe status in Linux's unshifted form (SCT &lt;&lt; 8 | SC, DNR 0x4000)
     */
    public void capsuleResponse(ByteBuffer out, long result, int sqHead, int sqId, int commandId, int status) {
        int p = out.position();
        int flags = headerDigest ? Pdu.FLAG_HDGST : 0;
        common(out, p, Pdu.TYPE_CAPSULE_RESP, flags, Pdu.CAPSULE_RESP_HLEN, 0, responseBytes());
        int cqe = p + Pdu.CAPSULE_CQE;
        out.putLong(cqe + CQE_RESULT, result);
        out.putShort(cqe + CQE_SQHD, (short) sqHead);
        out.putShort(cqe + CQE_SQID, (short) sqId);
        out.putShort(cqe + CQE_CID, (short) commandId);
        out.putShort(cqe + CQE_STATUS, (short) (status << 1));
        finish(out, p, Pdu.CAPSULE_RESP_HLEN);
    }

    /**
     * C2HData header for {@code length} bytes at {@code offset} of the command's data; the data
     * (and its digest, when {@code dataDigest}) follow it on the wire.
     */
    public void dataHeader(ByteBuffer out, int commandId, int offset, int length, boolean last, boolean success, boolean dataDigest) {
        int p = out.position();
        int flags = (headerDigest ? Pdu.FLAG_HDGST : 0) | (dataDigest ? Pdu.FLAG_DDGST : 0)
                    | (last ? Pdu.FLAG_DATA_LAST : 0) | (success ? Pdu.FLAG_DATA_SUCCESS : 0);
        int pdo = dataHeaderBytes();
        common(out, p, Pdu.TYPE_C2H_DATA, flags, Pdu.DATA_HLEN, pdo, pdo + length + (dataDigest ? Pdu.DIGEST_BYTES : 0));
        out.putShort(p + Pdu.DATA_CCCID, (short) commandId);
        out.putShort(p + Pdu.DATA_TTAG, (short) 0);
        out.putInt(p + Pdu.DATA_OFFSET, offset);
        out.putInt(p + Pdu.DATA_LENGTH, length);
        out.putInt(p + 20, 0);
        finish(out, p, Pdu.DATA_HLEN);
    }

    /** R2T: asks the host for {@code length} bytes at {@code offset}, to be sent with {@code transferTag}. */
    public void r2t(ByteBuffer out, int commandId, int transferTag, int offset, int length) {
        int p = out.position();
        int flags = headerDigest ? Pdu.FLAG_HDGST : 0;
        common(out, p, Pdu.TYPE_R2T, flags, Pdu.R2T_HLEN, 0, dataHeaderBytes());
        out.putShort(p + Pdu.DATA_CCCID, (short) commandId);
        out.putShort(p + Pdu.DATA_TTAG, (short) transferTag);
        out.putInt(p + Pdu.DATA_OFFSET, offset);
        out.putInt(p + Pdu.DATA_LENGTH, length);
        out.putInt(p + 20, 0);
        finish(out, p, Pdu.R2T_HLEN);
    }

    /** C2HTermReq (never digested) echoing up to 128 bytes of the offending header. */
    public static void termRequest(ByteBuffer out, int fes, int fei, ByteBuffer offendingHeader) {
        int p = out.position();
        int echo = offendingHeader == null ? 0 : Math.min(offendingHeader.remaining(), Pdu.TERM_MAX_ERROR_HEADER);
        for (int i = 0; i < Pdu.TERM_HLEN; i++) out.put(p + i, (byte) 0);
        common(out, p, Pdu.TYPE_C2H_TERM, 0, Pdu.TERM_HLEN, 0, Pdu.TERM_HLEN + echo);
        out.putShort(p + Pdu.TERM_FES, (short) fes);
        out.putInt(p + Pdu.TERM_FEI, fei);
        if (echo > 0) out.put(p + Pdu.TERM_HLEN, offendingHeader, offendingHeader.position(), echo);
        out.position(p + Pdu.TERM_HLEN + echo);
    }

    /** The data digest of {@code data}'s remaining bytes, position unchanged, as it goes on the wire. */
    public int dataDigest(ByteBuffer data) {
        int position = data.position();
        crc.reset();
        crc.update(data);
        data.position(position);
        return (int) crc.getValue();
    }

    private static void common(ByteBuffer out, int p, int type, int flags, int hlen, int pdo, int plen) {
        out.put(p + Pdu.TYPE, (byte) type);
        out.put(p + Pdu.FLAGS, (byte) flags);
        out.put(p + Pdu.HLEN, (byte) hlen);
        out.put(p + Pdu.PDO, (byte) pdo);
        out.putInt(p + Pdu.PLEN, plen);
    }

    /** Appends the header digest over [p, p + hlen) if negotiated and moves the position past the header. */
    private void finish(ByteBuffer out, int p, int hlen) {
        if (headerDigest) {
            int limit = out.limit();
            out.limit(p + hlen).position(p);
            crc.reset();
            crc.update(out);
            out.limit(limit);
            out.putInt(p + hlen, (int) crc.getValue());
        }
        out.position(p + hlen + digestBytes());
    }
}
