package io.iotarget.frontend.nvmetcp.pdu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.zip.CRC32C;

/** Host-to-controller PDUs as a host would put them on the wire, for tests and the test initiator. */
public final class HostPdus {
    private HostPdus() {
    }

    public static byte[] icRequest(int digestBits) {
        ByteBuffer b = le(Pdu.IC_HLEN);
        common(b, Pdu.TYPE_IC_REQ, 0, Pdu.IC_HLEN, 0, Pdu.IC_HLEN);
        b.putShort(Pdu.IC_PFV, (short) 0);
        b.put(Pdu.IC_PDA, (byte) 0);
        b.put(Pdu.IC_DIGEST, (byte) digestBits);
        b.putInt(Pdu.IC_MAXR2T, 0);
        return b.array();
    }

    /** A command capsule: the 64-byte SQE and optional in-capsule data. */
    public static byte[] capsule(byte[] sqe, byte[] data, boolean headerDigest, boolean dataDigest) {
        return pdu(Pdu.TYPE_CAPSULE_CMD, Pdu.CAPSULE_CMD_HLEN, 0, sqe, 8, data, headerDigest, dataDigest);
    }

    /** H2CData carrying {@code data} at {@code offset} of command {@code commandId}'s data. */
    public static byte[] h2cData(int commandId, int transferTag, int offset, byte[] data, boolean last,
                                 boolean headerDigest, boolean dataDigest) {
        byte[] fields = new byte[16];
        ByteBuffer f = ByteBuffer.wrap(fields).order(ByteOrder.LITTLE_ENDIAN);
        f.putShort(0, (short) commandId);
        f.putShort(2, (short) transferTag);
        f.putInt(4, offset);
        f.putInt(8, data.length);
        return pdu(Pdu.TYPE_H2C_DATA, Pdu.DATA_HLEN, last ? Pdu.FLAG_DATA_LAST : 0, fields, 8, data, headerDigest, dataDigest);
    }

    private static byte[] pdu(int type, int hlen, int extraFlags, byte[] fields, int fieldsAt, byte[] data,
                              boolean headerDigest, boolean dataDigest) {
        int hd = headerDigest ? Pdu.DIGEST_BYTES : 0;
        boolean withData = data != null && data.length > 0;
        int dd = withData && dataDigest ? Pdu.DIGEST_BYTES : 0;
        int pdo = withData ? hlen + hd : 0;
        int plen = hlen + hd + (withData ? data.length : 0) + dd;
        int flags = extraFlags | (headerDigest ? Pdu.FLAG_HDGST : 0) | (dd > 0 ? Pdu.FLAG_DDGST : 0);
        ByteBuffer b = le(plen);
        common(b, type, flags, hlen, pdo, plen);
        b.put(fieldsAt, fields);
        if (headerDigest) b.putInt(hlen, crc(b.array(), 0, hlen));
        if (withData) {
            b.put(hlen + hd, data);
            if (dd > 0) b.putInt(hlen + hd + data.length, crc(data, 0, data.length));
        }
        return b.array();
    }

    private static void common(ByteBuffer b, int type, int flags, int hlen, int pdo, int plen) {
        b.put(Pdu.TYPE, (byte) type);
        b.put(Pdu.FLAGS, (byte) flags);
        b.put(Pdu.HLEN, (byte) hlen);
        b.put(Pdu.PDO, (byte) pdo);
        b.putInt(Pdu.PLEN, plen);
    }

    public static int crc(byte[] a, int off, int len) {
        CRC32C c = new CRC32C();
        c.update(a, off, len);
        return (int) c.getValue();
    }

    private static ByteBuffer le(int n) {
        return ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
    }
}
