package io.iotarget.control;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

/**
 * Clients written byte by byte for tests that need one to misbehave (stay idle, never read its
 * replies), which no real client does on purpose: NBD after negotiation, NVMe/TCP past ICReq and
 * with an IO queue. Blocking channels; no digests, no structured replies.
 */
final class RawClients {
    static final int NBD_CMD_READ = 0;
    private static final int NBD_REQUEST_MAGIC = 0x25609513;
    private static final int NBD_SIMPLE_REPLY_MAGIC = 0x67446698;
    /** NVMe/TCP PDU types and lengths (no digests). */
    private static final int IC_REQ = 0x00, IC_RESP = 0x01, CAPSULE_CMD = 0x04, CAPSULE_RESP = 0x05;
    private static final int IC_LEN = 128, CAPSULE_CMD_HLEN = 72, CAPSULE_RESP_LEN = 24;
    private static final int FABRICS = 0x7F, CONNECT = 0x01, PROPERTY_SET = 0x00, NVM_WRITE = 0x01, NVM_READ = 0x02;
    private static final int GET_LOG_PAGE = 0x02, SET_FEATURES = 0x09, ASYNC_EVENT_REQUEST = 0x0C, C2H_DATA = 0x07, DATA_SUCCESS = 0x08;
    /** CC with EN and the Linux host's queue entry sizes (IOSQES 6, IOCQES 4). */
    private static final long CC_ENABLE = 0x460001;

    private RawClients() {
    }

    /**
     * An NBD client that negotiated (fixed newstyle, GO on {@code export}), in transmission. A
     * {@code receiveBuffer} above 0 is set before connecting (a client that will not read should
     * not offer the kernel's default of megabytes).
     */
    static SocketChannel nbdTransmitting(int port, String export, int receiveBuffer) throws IOException {
        SocketChannel c = SocketChannel.open();
        if (receiveBuffer > 0) c.socket().setReceiveBufferSize(receiveBuffer);
        c.connect(new InetSocketAddress("127.0.0.1", port));
        readFully(c, 18);                                          // NBDMAGIC, IHAVEOPT, handshake flags
        byte[] name = export.getBytes(StandardCharsets.US_ASCII);
        ByteBuffer out = ByteBuffer.allocate(4 + 16 + 4 + name.length + 2);
        out.putInt(3);                                              // FIXED_NEWSTYLE | NO_ZEROES
        out.putLong(0x49484156454F5054L).putInt(7).putInt(4 + name.length + 2).putInt(name.length).put(name).putShort((short) 0);
        writeFully(c, out.flip());
        while (true) {                                              // INFO replies, then ACK
            ByteBuffer header = readFully(c, 20);
            int type = header.getInt(12);
            readFully(c, header.getInt(16));
            if (type == 1) return c;
            if (type != 3) throw new IOException("GO refused: reply type 0x" + Integer.toHexString(type));
        }
    }

    /** One NBD request header (28 bytes). */
    static ByteBuffer nbdRequest(int type, long cookie, long offset, int length) {
        return ByteBuffer.allocate(28).putInt(NBD_REQUEST_MAGIC).putShort((short) 0).putShort((short) type).putLong(cookie)
                .putLong(offset).putInt(length).flip();
    }

    /** Sends an NBD READ and waits for its simple reply; returns the NBD error (0: the data was read). */
    static int nbdRead(SocketChannel c, long cookie, long offset, int length) throws IOException {
        writeFully(c, nbdRequest(NBD_CMD_READ, cookie, offset, length));
        ByteBuffer reply = readFully(c, 16);
        if (reply.getInt(0) != NBD_SIMPLE_REPLY_MAGIC || reply.getLong(8) != cookie) throw new IOException("not the reply to " + cookie);
        int error = reply.getInt(4);
        if (error == 0) readFully(c, length);
        return error;
    }

    /** An NVMe/TCP host that sent ICReq and got ICResp. */
    static SocketChannel nvmePastIcReq(int port, int receiveBuffer) throws IOException {
        SocketChannel c = SocketChannel.open();
        if (receiveBuffer > 0) c.socket().setReceiveBufferSize(receiveBuffer);
        c.connect(new InetSocketAddress("127.0.0.1", port));
        ByteBuffer icreq = le(IC_LEN);
        icreq.put(0, (byte) IC_REQ).put(2, (byte) IC_LEN).putInt(4, IC_LEN);   // hlen, plen; pfv 0, hpda 0, no digests
        writeFully(c, icreq);
        ByteBuffer icresp = readFully(c, IC_LEN);
        if (icresp.get(0) != IC_RESP) throw new IOException("expected ICResp, got PDU type " + icresp.get(0));
        return c;
    }

    /**
     * Connects {@code c} as queue {@code qid} of controller {@code cntlid} (0xFFFF: a new one, on
     * the admin queue) of {@code subsystem}; returns the controller id. The admin queue is then
     * enabled (CC.EN), so that IO queues may connect.
     */
    static int nvmeConnect(SocketChannel c, String subsystem, String hostNqn, int qid, int cntlid, int queueSize) throws IOException {
        return nvmeConnect(c, subsystem, hostNqn, new byte[16], qid, cntlid, queueSize);
    }

    /** As {@link #nvmeConnect(SocketChannel, String, String, int, int, int)}, with the 16-byte Host Identifier {@code hostId} (reservations know a host by it). */
    static int nvmeConnect(SocketChannel c, String subsystem, String hostNqn, byte[] hostId, int qid, int cntlid, int queueSize) throws IOException {
        ByteBuffer sqe = sqe(FABRICS, 1, 0);
        sqe.put(4, (byte) CONNECT).putShort(42, (short) qid).putShort(44, (short) (queueSize - 1));
        sqe.putInt(32, 1024).put(39, (byte) 0x01);                 // SGL: 1024 bytes in the capsule
        ByteBuffer data = le(1024);
        data.put(0, hostId).putShort(16, (short) cntlid).put(256, subsystem.getBytes(StandardCharsets.UTF_8)).put(512, hostNqn.getBytes(StandardCharsets.UTF_8));
        ByteBuffer cqe = nvmeExecute(c, sqe, data);
        int id = cqe.getShort(0) & 0xFFFF;                          // DW0 of the result: the controller id
        if (qid == 0) {
            ByteBuffer set = sqe(FABRICS, 2, 0);
            set.put(4, (byte) PROPERTY_SET).put(39, (byte) 0x5A).putInt(44, 0x14).putLong(48, CC_ENABLE);   // no data: SGL of length 0
            nvmeExecute(c, set, null);
        }
        return id;
    }

    /** A Read command capsule of {@code blocks} 512-byte blocks at {@code lba}, its data through C2HData. */
    static ByteBuffer nvmeRead(int commandId, int nsid, long lba, int blocks) {
        ByteBuffer sqe = sqe(NVM_READ, commandId, nsid);
        sqe.putInt(32, blocks * 512).put(39, (byte) 0x5A);           // SGL: transport data block
        sqe.putLong(40, lba).putInt(48, blocks - 1);
        return capsule(sqe, null);
    }

    /** What a command that may carry data back answered: its status (SCT << 8 | SC) and the data (empty on an error). */
    record Completion(int status, byte[] data) {
    }

    /**
     * Reads {@code blocks} 512-byte blocks at {@code lba} of namespace {@code nsid} on IO queue
     * {@code c}: the C2HData PDUs' bytes, then the response capsule (or the last C2HData's
     * SUCCESS flag, which stands for it). No digests.
     */
    static Completion nvmeReadBlocks(SocketChannel c, int commandId, int nsid, long lba, int blocks) throws IOException {
        writeFully(c, nvmeRead(commandId, nsid, lba, blocks));
        java.io.ByteArrayOutputStream data = new java.io.ByteArrayOutputStream();
        while (true) {
            ByteBuffer header = readFully(c, 8).order(ByteOrder.LITTLE_ENDIAN);
            int type = header.get(0), flags = header.get(1), pdo = header.get(3) & 0xFF, plen = header.getInt(4);
            ByteBuffer rest = readFully(c, plen - 8).order(ByteOrder.LITTLE_ENDIAN);
            if (type == CAPSULE_RESP) return new Completion((rest.getShort(14) & 0xFFFF) >>> 1, data.toByteArray());
            if (type != 0x07) throw new IOException("expected C2HData or a response capsule, got PDU type " + type);
            int length = rest.getInt(16 - 8);                     // DATAL, at byte 16 of the PDU
            data.write(rest.array(), pdo - 8, length);
            if ((flags & 0x08) != 0) return new Completion(0, data.toByteArray());
        }
    }

    /** A Write command capsule of {@code data} (whole 512-byte blocks) at {@code lba}, the data in the capsule. */
    static ByteBuffer nvmeWrite(int commandId, int nsid, long lba, byte[] data) {
        ByteBuffer sqe = sqe(NVM_WRITE, commandId, nsid);
        sqe.putInt(32, data.length).put(39, (byte) 0x01);           // SGL: data in the capsule
        sqe.putLong(40, lba).putInt(48, data.length / 512 - 1);
        return capsule(sqe, ByteBuffer.wrap(data));
    }

    /** Reads the next response capsule of {@code c}: its command id (high 16 bits) and status (low 16 bits: SCT << 8 | SC, with DNR 0x4000). */
    static int nvmeResponse(SocketChannel c) throws IOException {
        ByteBuffer resp = readFully(c, CAPSULE_RESP_LEN).order(ByteOrder.LITTLE_ENDIAN);
        if (resp.get(0) != CAPSULE_RESP) throw new IOException("expected a response capsule, got PDU type " + resp.get(0));
        return (resp.getShort(8 + 12) & 0xFFFF) << 16 | (resp.getShort(8 + 14) & 0xFFFF) >>> 1;
    }

    /** {@link #nvmeResponse} read on a thread of its own, so a caller can bound its wait (a node that may never answer). */
    static java.util.concurrent.CompletableFuture<Integer> nvmeResponseLater(SocketChannel c) {
        java.util.concurrent.CompletableFuture<Integer> next = new java.util.concurrent.CompletableFuture<>();
        Thread.ofVirtual().start(() -> {
            try {
                next.complete(nvmeResponse(c));
            } catch (IOException e) {
                next.completeExceptionally(e);
            }
        });
        return next;
    }

    /**
     * A reservation command (Register 0x0D, Acquire 0x11, Release 0x15) on namespace 1 with its
     * keys in the capsule; returns the status (SCT << 8 | SC, with DNR 0x4000).
     */
    static int nvmeReservation(SocketChannel c, int commandId, int opcode, int cdw10, long... keys) throws IOException {
        ByteBuffer sqe = sqe(opcode, commandId, 1);
        sqe.putInt(32, 8 * keys.length).put(39, (byte) 0x01).putInt(40, cdw10);
        ByteBuffer data = le(8 * keys.length);
        for (long k : keys) data.putLong(k);
        writeFully(c, capsule(sqe, data));
        ByteBuffer resp = readFully(c, CAPSULE_RESP_LEN).order(ByteOrder.LITTLE_ENDIAN);
        if (resp.get(0) != CAPSULE_RESP) throw new IOException("expected a response capsule, got PDU type " + resp.get(0));
        return (resp.getShort(8 + 14) & 0xFFFF) >>> 1;
    }

    /** Set Features {@code fid} (CDW11 {@code value}) on an admin queue; returns the status. */
    static int nvmeSetFeatures(SocketChannel c, int commandId, int fid, int value) throws IOException {
        ByteBuffer sqe = sqe(SET_FEATURES, commandId, 0);
        sqe.put(39, (byte) 0x5A).putInt(40, fid).putInt(44, value);
        writeFully(c, capsule(sqe, null));
        return nvmeCompletion(c)[1];
    }

    /** Sends an Asynchronous Event Request; it completes when an event comes ({@link #nvmeCompletion} reads it). */
    static void nvmeAsyncEventRequest(SocketChannel c, int commandId) throws IOException {
        ByteBuffer sqe = sqe(ASYNC_EVENT_REQUEST, commandId, 0);
        sqe.put(39, (byte) 0x5A);
        writeFully(c, capsule(sqe, null));
    }

    /** The next response capsule on {@code c}: {command id, status, DW0}. */
    static int[] nvmeCompletion(SocketChannel c) throws IOException {
        ByteBuffer resp = readFully(c, CAPSULE_RESP_LEN).order(ByteOrder.LITTLE_ENDIAN);
        if (resp.get(0) != CAPSULE_RESP) throw new IOException("expected a response capsule, got PDU type " + resp.get(0));
        return new int[] {resp.getShort(8 + 12) & 0xFFFF, (resp.getShort(8 + 14) & 0xFFFF) >>> 1, resp.getInt(8)};
    }

    /** Get Log Page 0Ch (ANA), {@code bytes} long, without RAE (it unmasks the ANA change event); the page, status checked. */
    static ByteBuffer nvmeAnaLog(SocketChannel c, int commandId, int bytes) throws IOException {
        ByteBuffer sqe = sqe(GET_LOG_PAGE, commandId, 0xFFFFFFFF);
        int numd = bytes / 4 - 1;
        sqe.putInt(32, bytes).put(39, (byte) 0x5A).putInt(40, 0x0C | (numd & 0xFFFF) << 16).putInt(44, numd >>> 16);
        writeFully(c, capsule(sqe, null));
        ByteBuffer page = le(bytes);
        while (true) {
            ByteBuffer header = readFully(c, 8).order(ByteOrder.LITTLE_ENDIAN);
            int type = header.get(0), flags = header.get(1), hlen = header.get(2) & 0xFF, pdo = header.get(3) & 0xFF, plen = header.getInt(4);
            if (type != C2H_DATA) {
                ByteBuffer rest = readFully(c, plen - 8).order(ByteOrder.LITTLE_ENDIAN);
                if (type != CAPSULE_RESP) throw new IOException("expected C2HData or a response, got PDU type " + type);
                int status = (rest.getShort(14) & 0xFFFF) >>> 1;
                if (status != 0) throw new IOException("Get Log Page failed: status 0x" + Integer.toHexString(status));
                return page;
            }
            ByteBuffer rest = readFully(c, hlen - 8).order(ByteOrder.LITTLE_ENDIAN);
            int offset = rest.getInt(4), length = rest.getInt(8);
            readFully(c, pdo - hlen);
            ByteBuffer data = readFully(c, plen - pdo);
            page.put(offset, data, 0, length);
            if ((flags & DATA_SUCCESS) != 0) return page;
        }
    }

    /** The state of ANA group {@code grpid} on an ANA log page, 0 if the page does not list it. */
    static int anaState(ByteBuffer page, int grpid) {
        int groups = page.getShort(8) & 0xFFFF;
        int at = 16;
        for (int i = 0; i < groups; i++) {
            int nsids = page.getInt(at + 4);
            if (page.getInt(at) == grpid) return page.get(at + 16) & 0x0F;
            at += 32 + 4 * nsids;
        }
        return 0;
    }

    private static ByteBuffer sqe(int opcode, int commandId, int nsid) {
        ByteBuffer sqe = le(64);
        sqe.put(0, (byte) opcode).put(1, (byte) 0x40).putShort(2, (short) commandId).putInt(4, nsid);   // SGL, not PRPs
        return sqe;
    }

    private static ByteBuffer capsule(ByteBuffer sqe, ByteBuffer data) {
        int dataBytes = data == null ? 0 : data.capacity();
        ByteBuffer pdu = le(CAPSULE_CMD_HLEN + dataBytes);
        pdu.put(0, (byte) CAPSULE_CMD).put(2, (byte) CAPSULE_CMD_HLEN).put(3, (byte) (dataBytes > 0 ? CAPSULE_CMD_HLEN : 0))
                .putInt(4, CAPSULE_CMD_HLEN + dataBytes).put(8, sqe, 0, 64);
        if (data != null) pdu.put(CAPSULE_CMD_HLEN, data, 0, dataBytes);
        return pdu;
    }

    /** Sends one admin or fabrics command and reads its response capsule; returns the 16-byte CQE, status checked. */
    private static ByteBuffer nvmeExecute(SocketChannel c, ByteBuffer sqe, ByteBuffer data) throws IOException {
        writeFully(c, capsule(sqe, data));
        ByteBuffer resp = readFully(c, CAPSULE_RESP_LEN).order(ByteOrder.LITTLE_ENDIAN);
        if (resp.get(0) != CAPSULE_RESP) throw new IOException("expected a response capsule, got PDU type " + resp.get(0));
        int status = (resp.getShort(8 + 14) & 0xFFFF) >>> 1;
        if (status != 0) throw new IOException("command 0x" + Integer.toHexString(sqe.get(0) & 0xFF) + " failed: status 0x" + Integer.toHexString(status));
        return resp.slice(8, 16).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static ByteBuffer le(int bytes) {
        return ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    static ByteBuffer readFully(SocketChannel c, int n) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) if (c.read(b) < 0) throw new IOException("closed by the server");
        return b.flip();
    }

    static void writeFully(SocketChannel c, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) c.write(b);
    }
}
