package io.iotarget.control;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.util.Arrays;

/**
 * A host of the reservation tests against {@code serve} processes: one controller (admin queue
 * and one IO queue, {@link RawClients}) of a host identity on a node, the reservation commands
 * with their keys in the capsule, and writes of filled blocks. Not thread-safe; the IO queue is
 * open for a test that sends commands without waiting ({@link #io}).
 */
final class ReservationClient implements AutoCloseable {
    static final int REGISTER = 0x0D, ACQUIRE = 0x11, RELEASE = 0x15;
    /** Acquire's actions (CDW10 bits 2:0) and the Write Exclusive type (bits 15:8). */
    static final int ACQUIRE_ACQUIRE = 0, ACQUIRE_PREEMPT_AND_ABORT = 2, RELEASE_CLEAR = 1;
    static final int WRITE_EXCLUSIVE = 1 << 8;
    static final int BLOCK = 512;

    /** One host identity: its NQN and its 16-byte Host Identifier (every byte {@code id}). */
    record Host(String nqn, byte[] hostId) {
        static Host of(int id) {
            byte[] hostId = new byte[16];
            Arrays.fill(hostId, (byte) id);
            return new Host("nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000" + String.format("%02x", id), hostId);
        }
    }

    final SocketChannel admin;
    final SocketChannel io;

    private ReservationClient(SocketChannel admin, SocketChannel io) {
        this.admin = admin;
        this.io = io;
    }

    /** A new controller of {@code host} on subsystem {@code nqn} at 127.0.0.1:{@code port}. */
    static ReservationClient connect(String nqn, int port, Host host) throws IOException {
        SocketChannel admin = RawClients.nvmePastIcReq(port, 0);
        int cntlid = RawClients.nvmeConnect(admin, nqn, host.nqn(), host.hostId(), 0, 0xFFFF, 32);
        SocketChannel io = RawClients.nvmePastIcReq(port, 0);
        RawClients.nvmeConnect(io, nqn, host.nqn(), host.hostId(), 1, cntlid, 32);
        return new ReservationClient(admin, io);
    }

    /** A reservation command on namespace 1; its status (SCT << 8 | SC, DNR 0x4000). */
    int reservation(int commandId, int opcode, int cdw10, long... keys) throws IOException {
        return RawClients.nvmeReservation(io, commandId, opcode, cdw10, keys);
    }

    /** Writes {@code blocks} blocks at {@code lba} of namespace 1, every byte {@code fill}, and waits for the status. */
    int write(int commandId, long lba, int blocks, byte fill) throws IOException {
        byte[] data = new byte[blocks * BLOCK];
        Arrays.fill(data, fill);
        RawClients.writeFully(io, RawClients.nvmeWrite(commandId, 1, lba, data));
        return RawClients.nvmeResponse(io) & 0xFFFF;
    }

    /** Writes block {@code lba} filled with {@code fill} and waits for its status. */
    int write(int commandId, long lba, byte fill) throws IOException {
        return write(commandId, lba, 1, fill);
    }

    @Override
    public void close() throws IOException {
        io.close();
        admin.close();
    }
}
