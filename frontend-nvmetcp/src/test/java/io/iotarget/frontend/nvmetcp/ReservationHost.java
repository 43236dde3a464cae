package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.TestHost.Completion;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One host identity (host NQN and 128-bit host ID) with a controller on a target: its admin
 * queue and one IO queue, and the reservation commands as nvme-cli sends them (data in the
 * capsule). For the reservation tests; not thread-safe.
 */
final class ReservationHost implements AutoCloseable {
    final byte[] hostId;
    final TestHost admin;
    final TestHost io;
    final int cntlid;

    /** Connects host {@code id} (its ID is 16 bytes of {@code id}) to {@code nqn} on {@code port} of 127.0.0.1. */
    ReservationHost(int port, String nqn, int id) throws IOException {
        hostId = new byte[16];
        java.util.Arrays.fill(hostId, (byte) id);
        String hostNqn = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-0000000000" + String.format("%02x", id);
        admin = new TestHost(port, false, false);
        Completion c = admin.connect(nqn, hostNqn, hostId, 0, 0xFFFF, 32, 0, false);
        if (c.status() != 0) throw new IOException("admin connect: " + Integer.toHexString(c.status()));
        cntlid = (int) c.result() & 0xFFFF;
        if (admin.propertySet(0x14, 0x460001).status() != 0) throw new IOException("CC write");
        io = new TestHost(port, false, false);
        c = io.connect(nqn, hostNqn, hostId, 1, cntlid, 32, 0, false);
        if (c.status() != 0) throw new IOException("IO connect: " + Integer.toHexString(c.status()));
    }

    private static byte[] keys(long... keys) {
        ByteBuffer b = ByteBuffer.allocate(8 * keys.length).order(ByteOrder.LITTLE_ENDIAN);
        for (long k : keys) b.putLong(k);
        return b.array();
    }

    int register(int action, boolean ignoreKey, int cptpl, long current, long fresh) throws IOException {
        ByteBuffer sqe = io.sqe(0x0D, 1);
        sqe.putInt(40, action | (ignoreKey ? 1 << 3 : 0) | cptpl << 30);
        return io.execute(sqe, keys(current, fresh), 0, true).status();
    }

    int register(long key) throws IOException {
        return register(0, false, 0, 0, key);
    }

    int acquire(int action, int type, long current, long preempt) throws IOException {
        ByteBuffer sqe = io.sqe(0x11, 1);
        sqe.putInt(40, action | type << 8);
        return io.execute(sqe, keys(current, preempt), 0, true).status();
    }

    int release(int action, int type, long current) throws IOException {
        ByteBuffer sqe = io.sqe(0x15, 1);
        sqe.putInt(40, action | type << 8);
        return io.execute(sqe, keys(current), 0, true).status();
    }

    /** Reservation Report (EDS) of {@code bytes}; the status structure, or null when it failed ({@link #lastStatus}). */
    ByteBuffer report(int bytes, boolean extended) throws IOException {
        ByteBuffer sqe = io.sqe(0x0E, 1);
        sqe.putInt(40, bytes / 4 - 1);
        sqe.putInt(44, extended ? 1 : 0);
        Completion c = io.execute(sqe, null, bytes, false);
        lastStatus = c.status();
        return c.status() == 0 ? ByteBuffer.wrap(c.data()).order(ByteOrder.LITTLE_ENDIAN) : null;
    }

    int lastStatus;

    int write() throws IOException {
        return write((byte) 0);
    }

    /** Writes LBA 0 filled with {@code fill}. */
    int write(byte fill) throws IOException {
        return write(0, fill);
    }

    /** Writes LBA {@code lba} filled with {@code fill}. */
    int write(long lba, byte fill) throws IOException {
        byte[] block = new byte[512];
        java.util.Arrays.fill(block, fill);
        return io.execute(io.lbaCommand(0x01, 1, lba, 1, 0), block, 0, true).status();
    }

    int read() throws IOException {
        return io.execute(io.lbaCommand(0x02, 1, 0, 1, 0), null, 512, false).status();
    }

    /** LBA 0's bytes (a read that fails fails the test). */
    byte[] readBlock() throws IOException {
        return readBlock(0);
    }

    /** LBA {@code lba}'s bytes (a read that fails fails the test). */
    byte[] readBlock(long lba) throws IOException {
        Completion c = io.execute(io.lbaCommand(0x02, 1, lba, 1, 0), null, 512, false);
        if (c.status() != 0) throw new IOException("read failed: status 0x" + Integer.toHexString(c.status()));
        return c.data();
    }

    @Override
    public void close() throws IOException {
        io.close();
        admin.close();
    }
}
