package io.iotarget.frontend.nvmetcp.pdu;

/**
 * NVMe/TCP PDU wire layouts (NVMe/TCP transport spec 1.0, Linux {@code include/linux/nvme-tcp.h}):
 * PDU types, header flags, header lengths and the byte offsets of every field this target reads
 * or writes. All integers are little-endian. Constants only.
 */
public final class Pdu {
    private Pdu() {
    }

    /*  0       1       2       3          common header (8 bytes), first in every PDU
     * | type  | flags | hlen  | pdo   |    TYPE=0 FLAGS=1 HLEN=2 PDO=3
     * |          plen (u32)           |    PLEN=4: the whole PDU, digests and padding included
     */
    public static final int TYPE = 0;
    public static final int FLAGS = 1;
    public static final int HLEN = 2;
    public static final int PDO = 3;
    public static final int PLEN = 4;
    public static final int COMMON_HEADER_BYTES = 8;

    // PDU types.
    public static final int TYPE_IC_REQ = 0x00;
    public static final int TYPE_IC_RESP = 0x01;
    public static final int TYPE_H2C_TERM = 0x02;
    public static final int TYPE_C2H_TERM = 0x03;
    public static final int TYPE_CAPSULE_CMD = 0x04;
    public static final int TYPE_CAPSULE_RESP = 0x05;
    public static final int TYPE_H2C_DATA = 0x06;
    public static final int TYPE_C2H_DATA = 0x07;
    public static final int TYPE_R2T = 0x09;

    // Header flags.
    public static final int FLAG_HDGST = 0x01;
    public static final int FLAG_DDGST = 0x02;
    public static final int FLAG_DATA_LAST = 0x04;
    public static final int FLAG_DATA_SUCCESS = 0x08;

    /** Header and data digests: CRC32C, 4 bytes each. */
    public static final int DIGEST_BYTES = 4;

    // Header lengths (hlen) per type.
    public static final int IC_HLEN = 128;
    public static final int TERM_HLEN = 24;
    public static final int CAPSULE_CMD_HLEN = 72;
    public static final int CAPSULE_RESP_HLEN = 24;
    public static final int DATA_HLEN = 24;
    public static final int R2T_HLEN = 24;
    public static final int MAX_HLEN = IC_HLEN;

    /*  8      9      10     11     12 ... 15          ICReq / ICResp (hlen = plen = 128)
     * |   PFV (u16)  | HPDA | DGST |  MAXR2T (u32)    ICReq:  HPDA=host PDU data alignment, MAXR2T 0's based
     *                | CPDA | DGST |  MAXH2CDATA(u32) ICResp: CPDA=controller PDU data alignment
     * 16..127 reserved                                DGST bit0 header digest, bit1 data digest
     */
    public static final int IC_PFV = 8;
    public static final int IC_PDA = 10;
    public static final int IC_DIGEST = 11;
    public static final int IC_MAXR2T = 12;
    public static final int IC_MAXH2CDATA = 12;
    public static final int IC_DIGEST_HEADER = 0x01;
    public static final int IC_DIGEST_DATA = 0x02;

    /*  8 .. 71   the 64-byte submission queue entry     CapsuleCmd (hlen = 72)
     *  8 .. 23   the 16-byte completion queue entry     CapsuleResp (hlen = 24)
     */
    public static final int CAPSULE_SQE = 8;
    public static final int CAPSULE_CQE = 8;

    /*  8      10     12             16             20..23     H2CData / C2HData / R2T (hlen = 24)
     * | CCCID | TTAG | DATAO / R2TO | DATAL / R2TL | reserved   CCCID = command id, TTAG = transfer tag
     */
    public static final int DATA_CCCID = 8;
    public static final int DATA_TTAG = 10;
    public static final int DATA_OFFSET = 12;
    public static final int DATA_LENGTH = 16;

    /*  8         10            14..23               H2CTermReq / C2HTermReq (hlen = 24)
     * | FES u16 | FEI u32     | reserved  | then up to 128 bytes of the offending header
     */
    public static final int TERM_FES = 8;
    public static final int TERM_FEI = 10;
    public static final int TERM_MAX_ERROR_HEADER = 128;

    // Fatal error status (FES) values.
    public static final int FES_INVALID_HEADER_FIELD = 1;
    public static final int FES_PDU_SEQUENCE_ERROR = 2;
    public static final int FES_HEADER_DIGEST_ERROR = 3;
    public static final int FES_DATA_OUT_OF_RANGE = 4;
    public static final int FES_DATA_LIMIT_EXCEEDED = 5;
    public static final int FES_UNSUPPORTED_PARAMETER = 6;

    /** The header length a host-to-controller PDU of {@code type} must carry, or -1 for types a host never sends. */
    public static int hostHeaderLength(int type) {
        return switch (type) {
            case TYPE_IC_REQ -> IC_HLEN;
            case TYPE_H2C_TERM -> TERM_HLEN;
            case TYPE_CAPSULE_CMD -> CAPSULE_CMD_HLEN;
            case TYPE_H2C_DATA -> DATA_HLEN;
            default -> -1;
        };
    }

    /** True for the PDU types that carry a header digest once digests are negotiated (all but IC and Term PDUs). */
    public static boolean digestible(int type) {
        return type != TYPE_IC_REQ && type != TYPE_IC_RESP && type != TYPE_H2C_TERM && type != TYPE_C2H_TERM;
    }
}
