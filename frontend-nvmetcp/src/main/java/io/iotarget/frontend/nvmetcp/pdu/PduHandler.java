package io.iotarget.frontend.nvmetcp.pdu;

import java.nio.ByteBuffer;

/**
 * Receives what a {@link PduDecoder} takes off the stream, on the decoder's thread. The header
 * buffer holds the PDU's {@code hlen} header bytes from index 0 (little-endian; read it with
 * absolute gets); it is the decoder's and is overwritten by the next PDU.
 */
public interface PduHandler {
    /**
     * What {@link #onHeader} returns when the data's destination is not available yet: the
     * decoder stops before the data and consumes nothing more until {@link PduDecoder#resume}.
     */
    ByteBuffer HOLD = ByteBuffer.allocate(0);

    /**
     * A header arrived and its digest (if any) matched.
     *
     * @param dataLength bytes of data the PDU carries, 0 for none
     * @return where the data goes: a buffer with exactly {@code dataLength} bytes between its
     *         position and limit (the decoder fills it, advancing its position), or null to read
     *         and drop the data (the command has already failed, the bytes must still be consumed),
     *         or {@link #HOLD}
     */
    ByteBuffer onHeader(ByteBuffer header, int dataLength);

    /**
     * The PDU is complete.
     *
     * @param dataDigestOk false when a data digest was present and did not match the data
     */
    void onPdu(ByteBuffer header, boolean dataDigestOk);

    /**
     * The stream cannot be decoded any further (bad framing, header digest mismatch): the
     * connection must be terminated with a Term PDU carrying {@code fes} and {@code fei}.
     * The decoder consumes nothing more.
     *
     * @param fes fatal error status, {@code Pdu.FES_*}
     * @param fei field error information: the byte offset of the offending header field
     */
    void onFatal(int fes, int fei);
}
