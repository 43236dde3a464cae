package io.iotarget.frontend.nbd;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A deliberately simple blocking NBD client for protocol tests: it can send anything,
 * including what a well-behaved client never would.
 */
final class RawClient implements AutoCloseable {
    Socket socket;
    DataInputStream in;
    DataOutputStream out;

    RawClient(int port) throws IOException {
        socket = new Socket("127.0.0.1", port);
        socket.setTcpNoDelay(true);
        socket.setSoTimeout(20_000);
        in = new DataInputStream(socket.getInputStream());
        out = new DataOutputStream(socket.getOutputStream());
    }

    /** Reads the greeting and sends client flags. */
    RawClient hello(int clientFlags) throws IOException {
        if (in.readLong() != NbdWire.NBD_MAGIC || in.readLong() != NbdWire.IHAVEOPT) throw new IOException("bad greeting");
        if (in.readUnsignedShort() != NbdWire.HANDSHAKE_FLAGS) throw new IOException("unexpected handshake flags");
        out.writeInt(clientFlags);
        out.flush();
        return this;
    }

    /** NBD_OPT_STARTTLS, then the TLS handshake as a client of {@code context}: from here on everything goes over TLS. */
    RawClient startTls(javax.net.ssl.SSLContext context) throws IOException {
        option(NbdWire.OPT_STARTTLS, new byte[0]);
        expect(optionReply().type(), NbdWire.REP_ACK);
        javax.net.ssl.SSLSocket tls = (javax.net.ssl.SSLSocket) context.getSocketFactory().createSocket(socket, "localhost", socket.getPort(), true);
        tls.startHandshake();
        socket = tls;
        in = new DataInputStream(new java.io.BufferedInputStream(tls.getInputStream()));
        out = new DataOutputStream(new java.io.BufferedOutputStream(tls.getOutputStream()));
        return this;
    }

    /** The export names NBD_OPT_LIST answers with, in order. */
    java.util.List<String> list() throws IOException {
        option(NbdWire.OPT_LIST, new byte[0]);
        java.util.List<String> names = new java.util.ArrayList<>();
        while (true) {
            OptionReply r = optionReply();
            if (r.type() == NbdWire.REP_ACK) return names;
            if (r.type() != NbdWire.REP_SERVER) throw new IOException("LIST failed: type 0x" + Integer.toHexString(r.type()) + " " + r.text());
            int length = java.nio.ByteBuffer.wrap(r.data()).getInt();
            names.add(new String(r.data(), 4, length, StandardCharsets.UTF_8));
        }
    }

    void option(int code, byte[] data) throws IOException {
        out.writeLong(NbdWire.IHAVEOPT);
        out.writeInt(code);
        out.writeInt(data.length);
        out.write(data);
        out.flush();
    }

    record OptionReply(int option, int type, byte[] data) {
        String text() {
            return new String(data, StandardCharsets.UTF_8);
        }
    }

    OptionReply optionReply() throws IOException {
        if (in.readLong() != NbdWire.OPTION_REPLY_MAGIC) throw new IOException("bad option reply magic");
        int option = in.readInt();
        int type = in.readInt();
        byte[] data = new byte[in.readInt()];
        in.readFully(data);
        return new OptionReply(option, type, data);
    }

    /** A client in transmission on {@code export}: fixed newstyle, then {@link #go}. */
    static RawClient connect(int port, String export, boolean structured) throws IOException {
        return new RawClient(port).hello(NbdWire.FLAG_C_FIXED_NEWSTYLE | NbdWire.FLAG_C_NO_ZEROES).go(export, structured);
    }

    /** After {@link #hello}: optionally structured replies and base:allocation, then GO on {@code export}. */
    RawClient go(String export, boolean structured) throws IOException {
        if (structured) {
            option(NbdWire.OPT_STRUCTURED_REPLY, new byte[0]);
            expect(optionReply().type(), NbdWire.REP_ACK);
            option(NbdWire.OPT_SET_META_CONTEXT, metaContextData(export, NbdWire.BASE_ALLOCATION));
            expect(optionReply().type(), NbdWire.REP_META_CONTEXT);
            expect(optionReply().type(), NbdWire.REP_ACK);
        }
        option(NbdWire.OPT_GO, goData(export));
        while (true) {
            OptionReply r = optionReply();
            if (r.type() == NbdWire.REP_ACK) return this;
            if (r.type() != NbdWire.REP_INFO) throw new IOException("GO failed: type 0x" + Integer.toHexString(r.type()) + " " + r.text());
        }
    }

    static byte[] goData(String export) {
        byte[] name = export.getBytes(StandardCharsets.UTF_8);
        var b = java.nio.ByteBuffer.allocate(4 + name.length + 2 + 2);
        return b.putInt(name.length).put(name).putShort((short) 1).putShort((short) NbdWire.INFO_BLOCK_SIZE).array();
    }

    static byte[] metaContextData(String export, String... queries) {
        byte[] name = export.getBytes(StandardCharsets.UTF_8);
        int length = 4 + name.length + 4;
        for (String q : queries) length += 4 + q.length();
        var b = java.nio.ByteBuffer.allocate(length).putInt(name.length).put(name).putInt(queries.length);
        for (String q : queries) b.putInt(q.length()).put(q.getBytes(StandardCharsets.UTF_8));
        return b.array();
    }

    void request(int flags, int type, long cookie, long offset, long length) throws IOException {
        out.writeInt(NbdWire.REQUEST_MAGIC);
        out.writeShort(flags);
        out.writeShort(type);
        out.writeLong(cookie);
        out.writeLong(offset);
        out.writeInt((int) length);
        out.flush();
    }

    void write(int flags, long cookie, long offset, byte[] data) throws IOException {
        out.writeInt(NbdWire.REQUEST_MAGIC);
        out.writeShort(flags);
        out.writeShort(NbdWire.CMD_WRITE);
        out.writeLong(cookie);
        out.writeLong(offset);
        out.writeInt(data.length);
        out.write(data);
        out.flush();
    }

    /** A reply: simple (chunkType -1) or one structured chunk. */
    record Reply(long cookie, int error, int chunkType, int chunkFlags, byte[] payload) {
    }

    /** Reads a simple reply (with {@code readLength} bytes of data when it is a successful READ) or one structured chunk. */
    Reply reply(int readLength) throws IOException {
        return reply(cookie -> readLength);
    }

    /** Like {@link #reply(int)}, with a simple reply's data length chosen by its cookie (replies come in completion order). */
    Reply reply(java.util.function.LongToIntFunction readLength) throws IOException {
        int magic = in.readInt();
        if (magic == NbdWire.SIMPLE_REPLY_MAGIC) {
            int error = in.readInt();
            long cookie = in.readLong();
            byte[] data = new byte[error == 0 ? readLength.applyAsInt(cookie) : 0];
            in.readFully(data);
            return new Reply(cookie, error, -1, 0, data);
        }
        if (magic != NbdWire.STRUCTURED_REPLY_MAGIC) throw new IOException("bad reply magic 0x" + Integer.toHexString(magic));
        int flags = in.readUnsignedShort();
        int type = in.readUnsignedShort();
        long cookie = in.readLong();
        byte[] payload = new byte[in.readInt()];
        in.readFully(payload);
        int error = type == NbdWire.REPLY_TYPE_ERROR ? java.nio.ByteBuffer.wrap(payload).getInt() : 0;
        return new Reply(cookie, error, type, flags, payload);
    }

    /** True when the server closed the connection (EOF) within the socket timeout. */
    boolean closedByServer() throws IOException {
        try {
            while (in.read() >= 0) {
                // discard anything still in flight
            }
            return true;
        } catch (EOFException e) {
            return true;
        } catch (java.net.SocketException e) {
            return true;
        }
    }

    private static void expect(int got, int want) throws IOException {
        if (got != want) throw new IOException("option reply type 0x" + Integer.toHexString(got) + " (expected 0x" + Integer.toHexString(want) + ")");
    }

    /** Closes with a reset (SO_LINGER 0), as a killed client whose replies were unread. */
    void abort() throws IOException {
        socket.setSoLinger(true, 0);
        socket.close();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
