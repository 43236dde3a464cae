package io.iotarget.frontend.nvmetcp.wire;

import java.nio.ByteBuffer;

/**
 * The 64-byte submission queue entry, read in place (little-endian, absolute gets). Offsets
 * follow the NVMe base and fabrics specs ({@code struct nvme_command} in Linux).
 *
 * <pre>
 *  0      1       2        4         8 ........ 24                 40     44     48     52     56     60
 * | OPC | FLAGS | CID u16 | NSID u32 | CDW2-3, MPTR | SGL1 (16 bytes) | CDW10 | CDW11 | CDW12 | CDW13 | CDW14 | CDW15 |
 *        FUSE bits 1:0, PSDT bits 7:6     SGL1: address u64 @24, length u32 @32, identifier u8 @39
 *
 *  Fabrics (OPC 0x7F): FCTYPE u8 @4.  Connect: RECFMT u16 @40, QID u16 @42, SQSIZE u16 @44,
 *  CATTR u8 @46, KATO u32 @48.  Property Get/Set: ATTRIB u8 @40, OFST u32 @44, VALUE u64 @48.
 * </pre>
 */
public final class Sqe {
    public static final int BYTES = 64;
    /** Identify MDTS = 8 (2^8 pages of 4 KiB): the largest transfer of one command. */
    public static final int MDTS = 8;
    public static final int MAX_TRANSFER_BYTES = 4096 << MDTS;

    public static final int OPCODE = 0;
    public static final int FLAGS = 1;
    public static final int COMMAND_ID = 2;
    public static final int NSID = 4;
    public static final int SGL_ADDRESS = 24;
    public static final int SGL_LENGTH = 32;
    public static final int SGL_IDENTIFIER = 39;
    public static final int CDW10 = 40;
    public static final int CDW11 = 44;
    public static final int CDW12 = 48;

    public static final int FABRICS_TYPE = 4;
    public static final int CONNECT_RECFMT = 40;
    public static final int CONNECT_QID = 42;
    public static final int CONNECT_SQSIZE = 44;
    public static final int CONNECT_CATTR = 46;
    public static final int CONNECT_KATO = 48;
    public static final int PROPERTY_ATTRIB = 40;
    public static final int PROPERTY_OFFSET = 44;
    public static final int PROPERTY_VALUE = 48;

    /** FLAGS: PSDT = 01b (SGL for data), no fused operation: the only value a fabrics command may carry. */
    public static final int FLAGS_SGL = 0x40;
    /** SGL identifier: Data Block, subtype Offset: the data is in the capsule. */
    public static final int SGL_IN_CAPSULE = 0x01;
    /** SGL identifier: Transport Data Block, subtype A: the data moves with R2T/H2CData or C2HData. */
    public static final int SGL_TRANSPORT = 0x5A;

    public static final int OPCODE_FABRICS = 0x7F;
    /** The NVM command set's Write and Read, which the transport treats apart (data after R2T, reads the backend may share). */
    public static final int OPCODE_WRITE = 0x01;
    public static final int OPCODE_READ = 0x02;
    /** Opcode bits 1:0: 01b host-to-controller data, 10b controller-to-host data (NVMe "data transfer" convention). */
    public static final int DIRECTION_TO_CONTROLLER = 0b01;
    public static final int DIRECTION_TO_HOST = 0b10;

    private Sqe() {
    }

    public static int opcode(ByteBuffer sqe) {
        return sqe.get(OPCODE) & 0xff;
    }

    public static int commandId(ByteBuffer sqe) {
        return sqe.getShort(COMMAND_ID) & 0xffff;
    }

    public static int nsid(ByteBuffer sqe) {
        return sqe.getInt(NSID);
    }

    /** The data direction bits: of the fabrics command type for fabrics commands, else of the opcode. */
    public static int direction(ByteBuffer sqe) {
        int op = opcode(sqe);
        return (op == OPCODE_FABRICS ? sqe.get(FABRICS_TYPE) : op) & 0b11;
    }
}
