package io.iotarget.frontend.nvmetcp.command;

import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.CommandSet;
import io.iotarget.frontend.nvmetcp.CommandSlot;
import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.NvmeTcpCounter;
import io.iotarget.frontend.nvmetcp.Queue;
import io.iotarget.frontend.nvmetcp.config.ActiveNamespace;
import io.iotarget.frontend.nvmetcp.reservation.NamespaceReservation;
import io.iotarget.engine.Engine;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoGroup;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;

import java.nio.ByteBuffer;

/**
 * The NVM command set on an IO queue. Every command that touches the media becomes one or more
 * {@link IoRequest}s charged to the group that pays for the host's IO on the namespace
 * ({@link Controller#payer}: the namespace's group, the host's, or a per-host child) and submitted through the engine; there is
 * no other way to a backend.
 *
 * <pre>
 *  opcode  command            IoOp              io.stat bucket   notes
 *  0x00    Flush              FLUSH             write (0 bytes)  no LBA fields
 *  0x01    Write              WRITE             write            FUA (CDW12 bit 30)
 *  0x02    Read               READ              read
 *  0x05    Compare            COMPARE           read             host data compared with the media
 *  0x08    Write Zeroes       WRITE_ZEROES      write            DEAC (bit 25) may unmap, else NO_UNMAP
 *  0x09    Dataset Management DISCARD per range discard          only with AD (CDW11 bit 2); hints alone do nothing
 *  0x0C    Verify             VERIFY            read             reads the media, transfers nothing
 *  0x0D 0x0E 0x11 0x15 Reservation Register, Report, Acquire, Release (ReservationCommands), with resv_enable
 *  other                      -                 -                Invalid Opcode | DNR
 * </pre>
 *
 * SLBA is CDW10-11, NLB (0's based) CDW12 bits 15:0. A range outside the namespace fails with
 * LBA Out of Range before anything is charged; so does a data length that does not match NLB.
 * On a namespace with {@code resv_enable}, a command another host's reservation forbids fails
 * with Reservation Conflict before that too (Flush, Write, Write Zeroes and Dataset Management
 * write; the others read).
 *
 * <p>The queue's event loop only; completions arrive through {@link CommandSlot#complete}.
 */
public final class IoCommands implements CommandSet.IoQueue {
    static final int FLUSH = 0x00;
    public static final int WRITE = Sqe.OPCODE_WRITE;
    public static final int READ = Sqe.OPCODE_READ;
    static final int COMPARE = 0x05;
    static final int WRITE_ZEROES = 0x08;
    static final int DATASET_MANAGEMENT = 0x09;
    static final int VERIFY = 0x0C;

    static final int CDW12_NLB_MASK = 0xFFFF;
    static final int CDW12_FUA = 1 << 30;
    static final int CDW12_DEALLOCATE = 1 << 25;
    static final int CDW11_DSM_DEALLOCATE = 1 << 2;
    /*  DSM range (16 bytes): 0 context attributes u32 | 4 NLB u32 (not 0's based) | 8 SLBA u64 */
    static final int DSM_RANGE_BYTES = 16;
    static final int DSM_RANGE_NLB = 4;
    static final int DSM_RANGE_SLBA = 8;

    private final Engine engine;
    private final Queue connection;

    public IoCommands(Engine engine, Queue connection) {
        this.engine = engine;
        this.connection = connection;
    }

    /** Before any data is asked for: the controller must be enabled and the opcode one of ours. */
    @Override
    public int precheck(Controller c, CommandSlot slot) {
        if (!c.ready()) return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
        return switch (Sqe.opcode(slot.sqe)) {
            case FLUSH, WRITE, READ, COMPARE, WRITE_ZEROES, DATASET_MANAGEMENT, VERIFY,
                 ReservationCommands.REGISTER, ReservationCommands.REPORT, ReservationCommands.ACQUIRE, ReservationCommands.RELEASE -> Status.SUCCESS;
            default -> Status.INVALID_OPCODE | Status.DNR;
        };
    }

    /** Runs the command: a status now, or {@link Queue#PENDING} when requests were submitted. */
    @Override
    public int execute(Controller c, CommandSlot slot) {
        ByteBuffer sqe = slot.sqe;
        ActiveNamespace ns = c.subsystem.table.find(Sqe.nsid(sqe));
        if (ns == null) return Status.INVALID_NAMESPACE | Status.DNR;
        int path = Status.of(connection.port.anaState(ns.anaGroup()));
        if (path != Status.SUCCESS) return path;
        int opcode = Sqe.opcode(sqe);
        NamespaceReservation reservation = ns.reservation();
        if (ReservationCommands.is(opcode)) {
            return reservation == null ? Status.INVALID_OPCODE | Status.DNR : ReservationCommands.execute(c, slot, reservation);
        }
        slot.enterEngine(ns);
        if (reservation != null) {
            int access = reservation.check(c.hostIdHigh, c.hostIdLow, ReservationCommands.writes(opcode));
            if (access != Status.SUCCESS) return access;
        }
        IoGroup payer = c.payer(ns);
        if (payer == null) {
            c.target.counters().increment(NvmeTcpCounter.HOST_GROUP_REFUSED);
            return Status.INTERNAL | Status.DNR;
        }
        return switch (opcode) {
            case FLUSH -> slot.dataLength != 0 ? Status.SGL_DATA_LENGTH_INVALID | Status.DNR
                    : submitOne(slot, ns, payer, IoOp.FLUSH, 0, 0, 0, null);
            case READ, WRITE, COMPARE, WRITE_ZEROES, VERIFY -> lbaCommand(slot, ns, payer, opcode);
            case DATASET_MANAGEMENT -> datasetManagement(slot, ns, payer);
            default -> Status.INVALID_OPCODE | Status.DNR;
        };
    }

    private int lbaCommand(CommandSlot slot, ActiveNamespace ns, IoGroup payer, int opcode) {
        ByteBuffer sqe = slot.sqe;
        long slba = sqe.getLong(Sqe.CDW10);
        int cdw12 = sqe.getInt(Sqe.CDW12);
        long blocks = (cdw12 & CDW12_NLB_MASK) + 1L;
        long length = blocks << ns.lbaShift();
        slot.startLba = slba;
        boolean carriesData = opcode == READ || opcode == WRITE || opcode == COMPARE;
        if (slot.dataLength != (carriesData ? length : 0)) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
        if (!ns.contains(slba, blocks)) return Status.LBA_OUT_OF_RANGE | Status.DNR;
        boolean writes = opcode == WRITE || opcode == WRITE_ZEROES;
        if (writes && ns.readOnly()) return Status.NAMESPACE_WRITE_PROTECTED | Status.DNR;
        int fua = (cdw12 & CDW12_FUA) != 0 ? IoFlags.FUA : 0;
        long offset = slba << ns.lbaShift();
        return switch (opcode) {
            case READ -> {
                // Without a buffer its namespace's backend shared every read when the command came in;
                // one enabled since under the same nsid may not: the host tries again.
                if (!slot.hasBuffer() && !ns.sharesReads()) yield Status.NAMESPACE_NOT_READY;
                connection.count(Queue.COUNT_READS, length);
                IoRequest io = prepareOne(slot, ns, payer, IoOp.READ, 0, offset, length, slot.hasBuffer() ? slot.data() : null);
                if (connection.offersViews(length)) io.views(slot.shared.expect(length));
                yield submit(slot, ns, payer, 1);
            }
            case WRITE -> {
                connection.count(Queue.COUNT_WRITES, length);
                if (slot.awaitingData) {
                    // Through R2T: the write passes io.max and iocost first and asks for its data
                    // only once admitted, so while it waits it holds no buffer (CommandSlot.admitted).
                    slot.request(0).set(IoOp.WRITE, fua, offset, length, null).target(ns.device(), payer)
                            .callback(slot, null, 0).dataLater();
                    yield submit(slot, ns, payer, 1);
                }
                yield submitOne(slot, ns, payer, IoOp.WRITE, fua, offset, length, slot.data());
            }
            case COMPARE -> {
                connection.count(Queue.COUNT_READS, 0);
                yield submitOne(slot, ns, payer, IoOp.COMPARE, 0, offset, length, slot.data());
            }
            case VERIFY -> {
                connection.count(Queue.COUNT_READS, 0);
                yield submitOne(slot, ns, payer, IoOp.VERIFY, 0, offset, length, null);
            }
            default -> {
                connection.count(Queue.COUNT_WRITES, 0);
                int unmap = (cdw12 & CDW12_DEALLOCATE) != 0 ? 0 : IoFlags.NO_UNMAP;
                yield submitOne(slot, ns, payer, IoOp.WRITE_ZEROES, fua | unmap, offset, length, null);
            }
        };
    }

    /**
     * Dataset Management: with AD, one DISCARD per non-empty range, all checked before any is
     * submitted; without AD the attributes are hints and nothing happens (nvmet does the same).
     */
    private int datasetManagement(CommandSlot slot, ActiveNamespace ns, IoGroup payer) {
        ByteBuffer sqe = slot.sqe;
        int ranges = (sqe.getInt(Sqe.CDW10) & 0xFF) + 1;
        if (slot.dataLength == 0 || slot.dataLength > ranges * DSM_RANGE_BYTES) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
        if ((sqe.getInt(Sqe.CDW11) & CDW11_DSM_DEALLOCATE) == 0) return Status.SUCCESS;
        if (ns.readOnly()) return Status.NAMESPACE_WRITE_PROTECTED | Status.DNR;
        ByteBuffer data = slot.data();
        int present = slot.dataLength / DSM_RANGE_BYTES;
        int count = 0;
        for (int i = 0; i < present; i++) {
            int at = i * DSM_RANGE_BYTES;
            long blocks = Integer.toUnsignedLong(data.getInt(at + DSM_RANGE_NLB));
            long slba = data.getLong(at + DSM_RANGE_SLBA);
            if (blocks == 0) continue;
            if (!ns.contains(slba, blocks)) {
                slot.startLba = slba;
                return Status.LBA_OUT_OF_RANGE | Status.DNR;
            }
            slot.request(count++).set(IoOp.DISCARD, 0, slba << ns.lbaShift(), blocks << ns.lbaShift(), null)
                    .target(ns.device(), payer).callback(slot, null, 0);
        }
        if (count == 0) return Status.SUCCESS;
        return submit(slot, ns, payer, count);
    }

    private int submitOne(CommandSlot slot, ActiveNamespace ns, IoGroup payer, IoOp op, int flags, long offset, long length, ByteBuffer data) {
        prepareOne(slot, ns, payer, op, flags, offset, length, data);
        return submit(slot, ns, payer, 1);
    }

    private static IoRequest prepareOne(CommandSlot slot, ActiveNamespace ns, IoGroup payer, IoOp op, int flags, long offset, long length, ByteBuffer data) {
        return slot.request(0).set(op, flags, offset, length, data).target(ns.device(), payer).callback(slot, null, 0);
    }

    /** Submits the slot's first {@code count} requests unless the namespace is being disabled; the slot exits it on completion. */
    private int submit(CommandSlot slot, ActiveNamespace ns, IoGroup payer, int count) {
        if (!ns.inFlight().enter()) return Status.INVALID_NAMESPACE | Status.DNR;
        slot.submitAll(count, engine, connection.pressureQueue(payer));
        return Queue.PENDING;
    }
}
