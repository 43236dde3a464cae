package io.iotarget.backend.file;

import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.Completion;
import io.iotarget.backend.ErrnoException;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;

/**
 * One request of a file backend on the ring, carried through its steps one SQE at a time:
 *
 * <pre>
 *  [PREFLUSH: fsync(DATASYNC)] ─► DATA ─► [FUA_FLUSH: fsync(DATASYNC)] ─► completion
 *                                  │
 *                                  ├ READ / PASSTHROUGH_IN    read, again for the rest after a short read
 *                                  ├ WRITE / PASSTHROUGH_OUT  write (RWF_DSYNC when FUA), again for the rest
 *                                  ├ FLUSH                    fsync(DATASYNC)
 *                                  └ DISCARD / WRITE_ZEROES   fallocate(PUNCH_HOLE or ZERO_RANGE);
 *                                                              FUA_FLUSH after it when FUA
 * </pre>
 *
 * A buffer the kernel cannot use in place — heap memory (the GC may move it), or direct
 * memory not 4096-aligned on an O_DIRECT file — goes through the slot's own aligned bounce
 * buffer, {@link #BOUNCE_BYTES} at a time. A fallocate mode the file system refuses
 * (EOPNOTSUPP) is remembered by the backend and the request moves to the IO pool, which writes
 * the zeroes.
 *
 * <p>The thread that took the slot owns it until {@link #begin} pushes the first SQE; from
 * then on the completion thread does, until the slot is released.
 */
final class RingSlot {
    /** Bounce buffer per slot, allocated on first use: larger unaligned transfers go through it in pieces. */
    static final int BOUNCE_BYTES = 128 * 1024;
    /** Times an operation is pushed again after EINTR, EAGAIN or ECANCELED before the request fails. */
    static final int MAX_RETRIES = 3;

    private enum Step { PREFLUSH, DATA, FUA_FLUSH }

    final int index;
    private final IoRing ring;
    private FileBackend file;
    private IoRequest io;
    private Completion done;
    private Step step;
    /** Bytes of the data step done so far. */
    private long transferred;
    /** The request buffer's native address at its position, or 0 when the data goes through {@link #bounce}. */
    private long address;
    private ByteBuffer bounce;
    private long bounceAddress;
    private int retries;

    RingSlot(IoRing ring, int index) {
        this.ring = ring;
        this.index = index;
    }

    /** Takes on {@code io} and pushes its first SQE. */
    void begin(FileBackend file, IoRequest io, Completion done) {
        this.file = file;
        this.io = io;
        this.done = done;
        this.transferred = 0;
        this.retries = 0;
        this.address = 0;
        if (io.op().carriesData()) {
            ByteBuffer data = io.data();
            if (file.transferable(data)) {
                address = MemorySegment.ofBuffer(data).address();
            } else if (bounce == null) {
                bounce = ByteBuffer.allocateDirect(BOUNCE_BYTES + FileBackend.DIRECT_ALIGNMENT).alignedSlice(FileBackend.DIRECT_ALIGNMENT);
                bounceAddress = MemorySegment.ofBuffer(bounce).address();
            }
        }
        if (io.hasFlag(IoFlags.PREFLUSH)) {
            step = Step.PREFLUSH;
            prepareFsync();
        } else {
            step = Step.DATA;
            prepareData();
        }
        ring.push(index);
    }

    private void prepareFsync() {
        ring.prepare(index, IoRing.OP_FSYNC, file.fd(), 0, 0, 0, IoRing.FSYNC_DATASYNC);
    }

    private void prepareData() {
        switch (io.op()) {
            case READ, PASSTHROUGH_IN -> prepareTransfer(IoRing.OP_READ, 0);
            case WRITE, PASSTHROUGH_OUT -> prepareTransfer(IoRing.OP_WRITE, io.hasFlag(IoFlags.FUA) ? IoRing.RWF_DSYNC : 0);
            case FLUSH -> prepareFsync();
            // fallocate's SQE carries the length in addr and the mode in len.
            case DISCARD, WRITE_ZEROES -> ring.prepare(index, IoRing.OP_FALLOCATE, file.fd(), io.offset(), io.length(),
                    FileBackend.fallocateMode(mayUnmap()), 0);
            default -> throw new IllegalStateException(io.op() + " is not a ring operation");
        }
    }

    private boolean mayUnmap() {
        return io.op() == IoOp.DISCARD || !io.hasFlag(IoFlags.NO_UNMAP);
    }

    private void prepareTransfer(byte opcode, int rwFlags) {
        long remaining = io.length() - transferred;
        long at = io.offset() + transferred;
        if (address != 0) {
            ring.prepare(index, opcode, file.fd(), at, address + transferred, (int) remaining, rwFlags);
            return;
        }
        int n = (int) Math.min(remaining, BOUNCE_BYTES);
        if (opcode == IoRing.OP_WRITE) bounce.put(0, io.data(), io.data().position() + (int) transferred, n);
        ring.prepare(index, opcode, file.fd(), at, bounceAddress, n, rwFlags);
    }

    /** The kernel finished this slot's SQE with {@code res}. Completion thread. */
    void completed(int res) {
        if (res < 0) {
            failedStep(-res);
            return;
        }
        switch (step) {
            case PREFLUSH -> {
                step = Step.DATA;
                prepareData();
                ring.push(index);
            }
            case DATA -> dataDone(res);
            case FUA_FLUSH -> end(IoStatus.OK);
        }
    }

    private void dataDone(int res) {
        IoOp op = io.op();
        boolean read = op == IoOp.READ || op == IoOp.PASSTHROUGH_IN;
        if (read || op == IoOp.WRITE || op == IoOp.PASSTHROUGH_OUT) {
            if (res == 0) {
                fail(new ErrnoException(read ? "io_uring read (end of file: the file shrank)" : "io_uring write (no progress)", BackendErrors.EIO));
                return;
            }
            if (read && address == 0) io.data().put(io.data().position() + (int) transferred, bounce, 0, res);
            transferred += res;
            if (transferred < io.length()) {
                prepareData();
                ring.push(index);
                return;
            }
        } else if (io.hasFlag(IoFlags.FUA) && op != IoOp.FLUSH) {
            step = Step.FUA_FLUSH;
            prepareFsync();
            ring.push(index);
            return;
        }
        end(IoStatus.OK);
    }

    private void failedStep(int errno) {
        boolean retriable = errno == BackendErrors.EINTR || errno == BackendErrors.EAGAIN || errno == BackendErrors.ECANCELED;
        if (retriable && retries++ < MAX_RETRIES) {
            ring.push(index);                       // the SQE still describes the same operation
            return;
        }
        if (step == Step.DATA && errno == BackendErrors.EOPNOTSUPP && (io.op() == IoOp.DISCARD || io.op() == IoOp.WRITE_ZEROES)) {
            file.fallocateRefused(mayUnmap());
            moveToPool();
            return;
        }
        fail(new ErrnoException("io_uring " + operation(), errno));
    }

    private String operation() {
        if (step != Step.DATA) return "fsync";
        return switch (io.op()) {
            case READ, PASSTHROUGH_IN -> "read";
            case WRITE, PASSTHROUGH_OUT -> "write";
            case FLUSH -> "fsync";
            default -> "fallocate";
        };
    }

    private void end(IoStatus status) {
        IoRequest request = io;
        Completion completion = done;
        clear();
        ring.release(this);
        completion.completed(request, status);
    }

    private void fail(ErrnoException cause) {
        IoRequest request = io;
        Completion completion = done;
        clear();
        ring.release(this);
        completion.failed(request, cause);
    }

    /** The request starts over on the IO pool, whose synchronous calls have the fallbacks. */
    private void moveToPool() {
        FileBackend backend = file;
        IoRequest request = io;
        Completion completion = done;
        clear();
        ring.release(this);
        IoStatus refused = ring.fallback().execute(backend, request, completion);
        if (refused != null) completion.completed(request, refused);
    }

    private void clear() {
        file = null;
        io = null;
        done = null;
    }
}
