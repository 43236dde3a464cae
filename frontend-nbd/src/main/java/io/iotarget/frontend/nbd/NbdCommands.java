package io.iotarget.frontend.nbd;

import io.iotarget.backend.Backend;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.pressure.TenantQueue;
import io.iotarget.model.IoCallback;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoStatus;
import io.iotarget.model.SharedRead;

import java.nio.ByteBuffer;

/**
 * The NBD command set on one export: protocol checks, and the mapping of each data-moving
 * command to an {@code IoRequest} on the export's device, charged to the export's group and
 * submitted through the engine — there is no other way to a backend.
 *
 * <pre>
 *  command        IoOp          flags honoured            io.stat bucket
 *  READ           READ          FUA, DF (structured)      read
 *  WRITE          WRITE         FUA                       write
 *  FLUSH          FLUSH         -                         write (0 bytes)
 *  TRIM           DISCARD       FUA                       discard
 *  CACHE          CACHE         -                         read (a prefetch the client asked for)
 *  WRITE_ZEROES   WRITE_ZEROES  FUA, NO_HOLE, FAST_ZERO   write
 *  BLOCK_STATUS   (none)        REQ_ONE                   not charged: it reads the allocation map, no data
 * </pre>
 *
 * <p>The connection's loop thread only; completions come back through the connection's
 * {@link IoCallback}.
 */
final class NbdCommands {
    private final Engine engine;
    private final Export export;
    /** Who pays: the export's group, or the client's child of it under cgroup_per_host. */
    private final Group payer;
    /** The connection as io.pressure's task, carried by every request. */
    private final TenantQueue queue;
    private final IoCallback completion;
    private final boolean structured;
    private final boolean blockStatusAllowed;
    /** The largest READ/WRITE payload the client was told: longer ones get EINVAL (EOVERFLOW for a DF read). */
    private final int maxRequest;

    NbdCommands(Engine engine, Export export, Group payer, TenantQueue queue, IoCallback completion, boolean structured,
                boolean blockStatusAllowed, int maxRequest) {
        this.engine = engine;
        this.maxRequest = maxRequest;
        this.export = export;
        this.payer = payer;
        this.queue = queue;
        this.completion = completion;
        this.structured = structured;
        this.blockStatusAllowed = blockStatusAllowed;
    }

    boolean structured() {
        return structured;
    }

    /**
     * Protocol checks the engine cannot make: flags per command, the export's read-only
     * setting, zero lengths and payload limits; and the range of READ and WRITE, before their data
     * buffers are allocated. Range, alignment and device state are otherwise the engine's
     * {@code RequestCheck}; its status maps to the errno in {@link Command#errno}.
     *
     * @return 0, or the NBD errno the command fails with (uncharged)
     */
    int validate(int type, int flags, long offset, long length) {
        int allowed = NbdWire.CMD_FLAG_FUA;              // accepted on every command, as the spec asks
        switch (type) {
            case NbdWire.CMD_READ -> {
                if (structured) allowed |= NbdWire.CMD_FLAG_DF;
            }
            case NbdWire.CMD_WRITE, NbdWire.CMD_FLUSH, NbdWire.CMD_TRIM, NbdWire.CMD_CACHE -> {
            }
            case NbdWire.CMD_WRITE_ZEROES -> allowed |= NbdWire.CMD_FLAG_NO_HOLE | NbdWire.CMD_FLAG_FAST_ZERO;
            case NbdWire.CMD_BLOCK_STATUS -> {
                if (!blockStatusAllowed) return NbdWire.EINVAL;
                allowed |= NbdWire.CMD_FLAG_REQ_ONE;
            }
            default -> {
                return NbdWire.EINVAL;
            }
        }
        if ((flags & ~allowed) != 0) return NbdWire.EINVAL;
        if (type == NbdWire.CMD_FLUSH) return offset == 0 && length == 0 ? 0 : NbdWire.EINVAL;
        boolean modifies = type == NbdWire.CMD_WRITE || type == NbdWire.CMD_TRIM || type == NbdWire.CMD_WRITE_ZEROES;
        if (modifies && export.readOnly()) return NbdWire.EPERM;
        // Zero-length requests are unspecified by the protocol; this server refuses them uncharged.
        if (length == 0) return NbdWire.EINVAL;
        boolean data = type == NbdWire.CMD_READ || type == NbdWire.CMD_WRITE;
        if (data && length > maxRequest) {
            return (flags & NbdWire.CMD_FLAG_DF) != 0 ? NbdWire.EOVERFLOW : NbdWire.EINVAL;
        }
        // The engine checks the range too; here it spares a refused request its data buffer (up to max_request).
        if (data && !export.device().contains(offset, length)) return Command.errno(IoStatus.OUT_OF_RANGE, type);
        return 0;
    }

    /**
     * Runs a valid command: the data-moving ones through the engine; BLOCK_STATUS here.
     *
     * @return true when the command went to the engine (its completion comes later, maybe on
     *         another thread), false when it is already done
     */
    boolean execute(Command c) {
        boolean fua = (c.flags & NbdWire.CMD_FLAG_FUA) != 0;
        switch (c.type) {
            // Without a buffer (a backend that shares its memory) the read must take views.
            case NbdWire.CMD_READ -> submit(c, IoOp.READ, 0, c.data, c.data == null || SharedRead.fits(c.length));
            case NbdWire.CMD_WRITE -> submit(c, IoOp.WRITE, fua ? IoFlags.FUA : 0, c.data.position(0), false);
            case NbdWire.CMD_FLUSH -> submit(c, IoOp.FLUSH, 0, null, false);
            case NbdWire.CMD_TRIM -> submit(c, IoOp.DISCARD, fua ? IoFlags.FUA : 0, null, false);
            // A prefetch hint, but it reads the media for the client: charged as a read of its length.
            case NbdWire.CMD_CACHE -> submit(c, IoOp.CACHE, 0, null, false);
            case NbdWire.CMD_WRITE_ZEROES -> {
                int ioFlags = (fua ? IoFlags.FUA : 0)
                              | ((c.flags & NbdWire.CMD_FLAG_NO_HOLE) != 0 ? IoFlags.NO_UNMAP : 0)
                              | ((c.flags & NbdWire.CMD_FLAG_FAST_ZERO) != 0 ? IoFlags.FAST_ZERO : 0);
                submit(c, IoOp.WRITE_ZEROES, ioFlags, null, false);
            }
            case NbdWire.CMD_BLOCK_STATUS -> {
                return blockStatus(c);
            }
            default -> throw new AssertionError(c.type);
        }
        return true;
    }

    private void submit(Command c, IoOp op, int ioFlags, ByteBuffer data, boolean views) {
        c.io.set(op, ioFlags, c.offset, c.length, data).target(export.device(), payer).queue(queue).callback(completion, c, 0)
                .views(views ? c.shared.expect(c.length) : null);
        c.submitted = true;
        engine.submit(c.io);
    }

    /**
     * BLOCK_STATUS reads the backend's allocation map (the memory backend's chunk table, a
     * file's SEEK_DATA/SEEK_HOLE, RBD's object map), never the data: like lseek(2) on a file it
     * moves no data and is not a block IO, so it is not charged, just as the kernel's io
     * controller does not see SEEK_HOLE. The reads a client makes because of the answer are
     * ordinary, charged READs. A map that is a network round trip (RBD) runs on the backend's
     * threads and ends through the connection's {@link IoCallback}, like a READ.
     *
     * @return true when the answer comes later through the callback, false when it is here already
     */
    private boolean blockStatus(Command c) {
        if (!export.device().contains(c.offset, c.length)) {
            c.error = NbdWire.EINVAL;
            return false;
        }
        Backend backend = engine.backend(export.device());
        if (backend == null) {
            c.error = NbdWire.ESHUTDOWN;
            return false;
        }
        c.startExtents((c.flags & NbdWire.CMD_FLAG_REQ_ONE) != 0);
        c.io.callback(completion, c, 0);
        backend.startMapExtents(c.offset, c.length, c, failure -> {
            if (failure != null) c.error = NbdWire.EIO;
            completion.complete(c.io);
        });
        return true;
    }
}
