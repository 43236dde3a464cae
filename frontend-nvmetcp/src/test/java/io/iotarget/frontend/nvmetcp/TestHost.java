package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.auth.TestChapHost;
import io.iotarget.frontend.nvmetcp.pdu.HostPdus;
import io.iotarget.frontend.nvmetcp.pdu.Pdu;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.UUID;

/**
 * A minimal NVMe/TCP host for tests: one TCP connection (one queue), one command at a time,
 * R2T answered with H2CData PDUs of at most MAXH2CDATA, C2HData gathered, digests optional.
 * Every PDU it receives is checked (type, hlen, digests). Not thread-safe.
 */
final class TestHost implements AutoCloseable {
    static final String HOST_NQN = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001";

    /** A completion: status unshifted (SCT << 8 | SC, DNR 0x4000), result DW0-1, the data the target sent. */
    record Completion(int status, long result, int sqHead, int commandId, byte[] data, boolean viaSuccessFlag) {
        int code() {
            return status & 0x7FF;
        }

        boolean dnr() {
            return (status & 0x4000) != 0;
        }
    }

    private final Socket socket;
    private final DataInputStream in;
    private final OutputStream out;
    final boolean headerDigest;
    final boolean dataDigest;
    final int maxH2CData;
    private int nextCommandId = 1;
    /** Last C2HTermReq received, or null. */
    byte[] termRequest;

    TestHost(int port, boolean headerDigest, boolean dataDigest) throws IOException {
        this("127.0.0.1", port, headerDigest, dataDigest);
    }

    TestHost(String address, int port, boolean headerDigest, boolean dataDigest) throws IOException {
        this(address, port, headerDigest, dataDigest, null);
    }

    /** Over TLS with {@code tls}'s key from the first byte, before ICReq, as NVMe/TCP puts it; null: plaintext. */
    TestHost(String address, int port, boolean headerDigest, boolean dataDigest, TlsPskClient tls) throws IOException {
        this.socket = new Socket();
        socket.connect(new InetSocketAddress(address, port), 5000);
        socket.setSoTimeout(10_000);
        socket.setTcpNoDelay(true);
        if (tls == null) {
            this.in = new DataInputStream(socket.getInputStream());
            this.out = socket.getOutputStream();
        } else {
            var protocol = tls.handshake(socket);
            this.in = new DataInputStream(protocol.getInputStream());
            this.out = protocol.getOutputStream();
        }
        this.headerDigest = headerDigest;
        this.dataDigest = dataDigest;
        out.write(HostPdus.icRequest((headerDigest ? Pdu.IC_DIGEST_HEADER : 0) | (dataDigest ? Pdu.IC_DIGEST_DATA : 0)));
        ByteBuffer resp = ByteBuffer.wrap(readExactly(Pdu.IC_HLEN)).order(ByteOrder.LITTLE_ENDIAN);
        check(resp.get(Pdu.TYPE) == Pdu.TYPE_IC_RESP, "ICResp type");
        check(resp.getInt(Pdu.PLEN) == Pdu.IC_HLEN, "ICResp plen");
        check(resp.get(Pdu.IC_PDA) == 0, "CPDA 0");
        int digests = resp.get(Pdu.IC_DIGEST);
        check(((digests & Pdu.IC_DIGEST_HEADER) != 0) == headerDigest && ((digests & Pdu.IC_DIGEST_DATA) != 0) == dataDigest, "digests echoed");
        this.maxH2CData = resp.getInt(Pdu.IC_MAXH2CDATA);
        check(maxH2CData >= 4096 && maxH2CData % 4 == 0, "MAXH2CDATA");
    }

    /** The socket, for tests that end a connection rudely (RST, half-close). */
    Socket socket() {
        return socket;
    }

    /** How long a read waits for the target before failing with SocketTimeoutException. */
    void timeout(int ms) throws IOException {
        socket.setSoTimeout(ms);
    }

    /** Raw bytes onto the wire (for malformed-input tests). */
    void sendRaw(byte[] bytes) throws IOException {
        out.write(bytes);
    }

    /** A fresh 64-byte SQE with the opcode, SGL flags, a new command id and nsid. */
    ByteBuffer sqe(int opcode, int nsid) {
        ByteBuffer sqe = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        sqe.put(0, (byte) opcode);
        sqe.put(1, (byte) 0x40);
        sqe.putShort(2, (short) nextCommandId++);
        sqe.putInt(4, nsid);
        return sqe;
    }

    /**
     * The host ID {@link #connect(String, String, int, int, int, int, boolean)} sends for
     * {@code hostNqn}: one per NQN, as a real host has (a subsystem binds a host ID to one NQN).
     */
    static byte[] hostId(String hostNqn) {
        UUID id = UUID.nameUUIDFromBytes(hostNqn.getBytes(StandardCharsets.UTF_8));
        return ByteBuffer.allocate(16).putLong(id.getMostSignificantBits()).putLong(id.getLeastSignificantBits()).array();
    }

    /** Fabrics Connect on this connection's queue, as host {@code hostNqn} with its {@link #hostId}. */
    Completion connect(String subsystemNqn, String hostNqn, int qid, int cntlid, int queueSize, int katoMs, boolean noSqFlowControl) throws IOException {
        return connect(subsystemNqn, hostNqn, hostId(hostNqn), qid, cntlid, queueSize, katoMs, noSqFlowControl);
    }

    /** Fabrics Connect on this connection's queue with the given 16-byte host ID. */
    Completion connect(String subsystemNqn, String hostNqn, byte[] hostId, int qid, int cntlid, int queueSize, int katoMs, boolean noSqFlowControl) throws IOException {
        return connect(subsystemNqn, hostNqn.getBytes(StandardCharsets.UTF_8), hostId, qid, cntlid, queueSize, katoMs, noSqFlowControl);
    }

    /** Fabrics Connect with the host NQN field's bytes as given (any bytes, NUL-padded to 256). */
    Completion connect(String subsystemNqn, byte[] hostNqn, byte[] hostId, int qid, int cntlid, int queueSize, int katoMs, boolean noSqFlowControl) throws IOException {
        ByteBuffer sqe = sqe(0x7F, 0);
        sqe.put(4, (byte) 0x01);
        sqe.putShort(42, (short) qid);
        sqe.putShort(44, (short) (queueSize - 1));
        sqe.put(46, (byte) (noSqFlowControl ? 4 : 0));
        sqe.putInt(48, katoMs);
        ByteBuffer data = ByteBuffer.allocate(1024).order(ByteOrder.LITTLE_ENDIAN);
        data.put(0, hostId);
        data.putShort(16, (short) cntlid);
        data.put(256, subsystemNqn.getBytes(StandardCharsets.UTF_8));
        data.put(512, hostNqn);
        return execute(sqe, data.array(), 0, true);
    }

    Completion propertyGet(int offset, boolean eightBytes) throws IOException {
        ByteBuffer sqe = sqe(0x7F, 0);
        sqe.put(4, (byte) 0x04);
        sqe.put(40, (byte) (eightBytes ? 1 : 0));
        sqe.putInt(44, offset);
        return execute(sqe, null, 0, true);
    }

    Completion propertySet(int offset, long value) throws IOException {
        ByteBuffer sqe = sqe(0x7F, 0);
        sqe.put(4, (byte) 0x00);
        sqe.putInt(44, offset);
        sqe.putLong(48, value);
        return execute(sqe, null, 0, true);
    }

    /** AUTH_Send of one DH-HMAC-CHAP message, in the capsule (SECP 0xE9, SPSP0/1 = 1, TL = its length). */
    Completion authSend(byte[] message) throws IOException {
        return execute(authCommand(0x05, message.length), message, 0, true);
    }

    /** AUTH_Receive with AL = {@code allocation}: the message comes back as the completion's data. */
    Completion authReceive(int allocation) throws IOException {
        return execute(authCommand(0x06, allocation), null, allocation, false);
    }

    ByteBuffer authCommand(int type, int length) {
        ByteBuffer sqe = sqe(0x7F, 0);
        sqe.put(4, (byte) type);
        sqe.put(41, (byte) 1).put(42, (byte) 1).put(43, (byte) 0xE9);
        sqe.putInt(44, length);
        return sqe;
    }

    /** Runs DH-HMAC-CHAP on this queue as Linux's host does (AL 4096); fails the test on any refusal. */
    void authenticate(TestChapHost chap, boolean bidirectional) throws IOException {
        check(authSend(chap.negotiate()).status() == 0, "AUTH_Send Negotiate");
        Completion challenge = authReceive(4096);
        check(challenge.status() == 0 && TestChapHost.failure1Reason(challenge.data()) < 0, "Challenge, not Failure1");
        check(authSend(chap.reply(challenge.data())).status() == 0, "AUTH_Send Reply");
        Completion success1 = authReceive(4096);
        check(success1.status() == 0, "AUTH_Receive Success1");
        chap.checkSuccess1(success1.data());
        if (bidirectional) check(authSend(chap.success2()).status() == 0, "AUTH_Send Success2");
    }

    /** Connect the admin queue, enable the controller (CC.EN with the Linux host's sizes), wait for RDY. */
    int bringUp(String subsystemNqn, String hostNqn, int katoMs) throws IOException {
        Completion c = connect(subsystemNqn, hostNqn, 0, 0xFFFF, 32, katoMs, false);
        check(c.status() == 0, "admin connect status " + Integer.toHexString(c.status()));
        int cntlid = (int) c.result() & 0xFFFF;
        check(propertySet(0x14, 0x460001).status() == 0, "CC write");
        check((propertyGet(0x1C, false).result() & 1) == 1, "CSTS.RDY");
        return cntlid;
    }

    Completion identify(int cns, int nsid) throws IOException {
        ByteBuffer sqe = sqe(0x06, nsid);
        sqe.putInt(40, cns);
        return execute(sqe, null, 4096, false);
    }

    Completion getLogPage(int lid, int bytes, long offset, boolean retain) throws IOException {
        ByteBuffer sqe = sqe(0x02, 0xFFFFFFFF);
        int numd = bytes / 4 - 1;
        sqe.putInt(40, lid | (retain ? 1 << 15 : 0) | (numd & 0xFFFF) << 16);
        sqe.putInt(44, numd >>> 16);
        sqe.putLong(48, offset);
        return execute(sqe, null, bytes, false);
    }

    Completion setFeatures(int fid, int cdw11) throws IOException {
        ByteBuffer sqe = sqe(0x09, 0);
        sqe.putInt(40, fid);
        sqe.putInt(44, cdw11);
        return execute(sqe, null, 0, false);
    }

    /** An LBA command: SLBA in CDW10-11, NLB (0's based) and flags in CDW12. */
    ByteBuffer lbaCommand(int opcode, int nsid, long slba, int blocks, int cdw12Flags) {
        ByteBuffer sqe = sqe(opcode, nsid);
        sqe.putLong(40, slba);
        sqe.putInt(48, (blocks - 1) | cdw12Flags);
        return sqe;
    }

    /**
     * Sends a command and waits for its completion. {@code dataOut} goes in the capsule when
     * {@code inCapsule}, else through R2T/H2CData; {@code dataInLength} bytes are expected back.
     */
    Completion execute(ByteBuffer sqe, byte[] dataOut, int dataInLength, boolean inCapsule) throws IOException {
        int commandId = sqe.getShort(2) & 0xFFFF;
        boolean capsuleData = dataOut != null && inCapsule;
        int sglLength = dataOut != null ? dataOut.length : dataInLength;
        sqe.putLong(24, 0);
        sqe.putInt(32, sglLength);
        sqe.put(39, (byte) (capsuleData ? 0x01 : 0x5A));
        out.write(HostPdus.capsule(sqe.array(), capsuleData ? dataOut : null, headerDigest, dataDigest));
        byte[] received = new byte[dataInLength];
        int receivedBytes = 0;
        while (true) {
            ByteBuffer h = readPdu();
            int type = h.get(Pdu.TYPE);
            switch (type) {
                case Pdu.TYPE_R2T -> {
                    check(dataOut != null && !capsuleData, "R2T only for host data not in the capsule");
                    check((h.getShort(Pdu.DATA_CCCID) & 0xFFFF) == commandId, "R2T command id");
                    int tag = h.getShort(Pdu.DATA_TTAG) & 0xFFFF;
                    int offset = h.getInt(Pdu.DATA_OFFSET);
                    int length = h.getInt(Pdu.DATA_LENGTH);
                    check(length > 0 && offset + length <= dataOut.length, "R2T range");
                    for (int at = offset; at < offset + length; at += maxH2CData) {
                        int n = Math.min(maxH2CData, offset + length - at);
                        out.write(HostPdus.h2cData(commandId, tag, at, Arrays.copyOfRange(dataOut, at, at + n),
                                at + n == offset + length, headerDigest, dataDigest));
                    }
                }
                case Pdu.TYPE_C2H_DATA -> {
                    check((h.getShort(Pdu.DATA_CCCID) & 0xFFFF) == commandId, "C2HData command id");
                    int offset = h.getInt(Pdu.DATA_OFFSET);
                    int length = h.getInt(Pdu.DATA_LENGTH);
                    check(offset == receivedBytes && offset + length <= dataInLength, "C2HData in order and in range");
                    byte[] payload = lastData;
                    check(payload.length == length, "C2HData length");
                    System.arraycopy(payload, 0, received, offset, length);
                    receivedBytes += length;
                    int flags = h.get(Pdu.FLAGS);
                    if ((flags & Pdu.FLAG_DATA_SUCCESS) != 0) {
                        check((flags & Pdu.FLAG_DATA_LAST) != 0, "SUCCESS only with LAST");
                        return new Completion(0, 0, 0xFFFF, commandId, received, true);
                    }
                }
                case Pdu.TYPE_CAPSULE_RESP -> {
                    int cqe = Pdu.CAPSULE_CQE;
                    int status = (h.getShort(cqe + 14) & 0xFFFF) >>> 1;
                    check((h.getShort(cqe + 12) & 0xFFFF) == commandId, "CQE command id " + (h.getShort(cqe + 12) & 0xFFFF) + " for " + commandId);
                    if (status == 0) check(receivedBytes == dataInLength, "all data before a successful response");
                    return new Completion(status, h.getLong(cqe), h.getShort(cqe + 8) & 0xFFFF, commandId, received, false);
                }
                default -> throw new IOException("unexpected PDU type " + type);
            }
        }
    }

    private byte[] lastData;

    /** Reads one controller PDU, checks digests, keeps its data in {@link #lastData}; returns the header. */
    ByteBuffer readPdu() throws IOException {
        byte[] common = readExactly(8);
        ByteBuffer c = ByteBuffer.wrap(common).order(ByteOrder.LITTLE_ENDIAN);
        int type = common[Pdu.TYPE];
        int flags = common[Pdu.FLAGS];
        int hlen = common[Pdu.HLEN] & 0xFF;
        int pdo = common[Pdu.PDO] & 0xFF;
        int plen = c.getInt(Pdu.PLEN);
        byte[] rest = readExactly(plen - 8);
        byte[] pdu = new byte[plen];
        System.arraycopy(common, 0, pdu, 0, 8);
        System.arraycopy(rest, 0, pdu, 8, rest.length);
        ByteBuffer h = ByteBuffer.wrap(pdu).order(ByteOrder.LITTLE_ENDIAN);
        if (type == Pdu.TYPE_C2H_TERM) {
            termRequest = pdu;
            throw new EOFException("C2HTermReq FES " + h.getShort(Pdu.TERM_FES));
        }
        check(hlen == 24, "controller PDUs have hlen 24");
        boolean hd = (flags & Pdu.FLAG_HDGST) != 0;
        check(hd == headerDigest, "header digest flag as negotiated");
        if (hd) check(h.getInt(hlen) == HostPdus.crc(pdu, 0, hlen), "header digest");
        int dataStart = pdo == 0 ? plen : pdo;
        boolean dd = (flags & Pdu.FLAG_DDGST) != 0;
        int dataEnd = plen - (dd ? 4 : 0);
        if (type == Pdu.TYPE_C2H_DATA) {
            check(dd == dataDigest, "data digest flag as negotiated");
            check(pdo == hlen + (hd ? 4 : 0), "C2HData pdo");
            if (dd) check(h.getInt(dataEnd) == HostPdus.crc(pdu, dataStart, dataEnd - dataStart), "data digest");
            lastData = Arrays.copyOfRange(pdu, dataStart, dataEnd);
        } else {
            check(plen == hlen + (hd ? 4 : 0), "no data in " + type);
        }
        return h;
    }

    private byte[] readExactly(int n) throws IOException {
        byte[] b = new byte[n];
        in.readFully(b);
        return b;
    }

    /** True once the target has closed the connection (reads EOF within the socket timeout). */
    boolean closedByTarget() {
        try {
            return in.read() < 0;
        } catch (IOException e) {
            return true;
        }
    }

    /** True when the target closes the connection within {@code ms} (EOF or reset), false when it is still open then. */
    boolean closedByTargetWithin(int ms) throws IOException {
        socket.setSoTimeout(ms);
        try {
            return in.read() < 0;
        } catch (java.net.SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true;
        }
    }

    private static void check(boolean ok, String what) throws IOException {
        if (!ok) throw new IOException("protocol check failed: " + what);
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
