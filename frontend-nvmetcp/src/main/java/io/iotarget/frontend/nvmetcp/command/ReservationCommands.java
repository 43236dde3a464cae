package io.iotarget.frontend.nvmetcp.command;

import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.CommandSlot;
import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.Queue;
import io.iotarget.frontend.nvmetcp.config.ActiveNamespace;
import io.iotarget.frontend.nvmetcp.reservation.NamespaceReservation;
import io.iotarget.frontend.nvmetcp.reservation.NoticeLog;
import io.iotarget.frontend.nvmetcp.reservation.ReservationState;
import io.iotarget.frontend.nvmetcp.reservation.Reservations;

import java.nio.ByteBuffer;
import java.util.function.IntConsumer;

/**
 * The reservation commands on an IO queue, and the admin side of reservations: features 0x82
 * (notification mask) and 0x83 (persistence), the log page 0x80 being {@link NoticeLog}'s.
 * Parsed on the queue's loop; whatever reads or changes a state runs off it, in the namespace's
 * turn ({@link Reservations}), which answers the slot.
 *
 * <pre>
 *  opcode  command   CDW10                                        data (host to controller)
 *  0x0D    Register  RREGA 2:0, IEKEY 3, CPTPL 31:30              CRKEY u64, NRKEY u64
 *  0x11    Acquire   RACQA 2:0, IEKEY 3, RTYPE 15:8               CRKEY u64, PRKEY u64
 *  0x15    Release   RRELA 2:0, IEKEY 3, RTYPE 15:8               CRKEY u64
 *  0x0E    Report    NUMD (0's based dwords); CDW11 bit 0 EDS     controller to host: the status
 *
 *  Report, extended (EDS=1; 128-bit host identifiers only, as nvmet):
 *   header 64 B: 0 GEN u32 | 4 RTYPE u8 | 5 REGCTL u16 | 9 PTPLS u8
 *   per registrant 64 B: 0 CNTLID u16 (0xFFFF: dynamic) | 2 RCSTS u8 (bit 0 holds) | 8 RKEY u64 | 16 HOSTID[16]
 * </pre>
 */
public final class ReservationCommands {
    public static final int REGISTER = 0x0D;
    public static final int REPORT = 0x0E;
    public static final int ACQUIRE = 0x11;
    public static final int RELEASE = 0x15;

    static final int FEATURE_NOTIFICATION_MASK = 0x82;
    static final int FEATURE_PERSISTENCE = 0x83;

    static final int CDW10_ACTION = 0x7;
    static final int CDW10_IGNORE_KEY = 1 << 3;
    static final int CDW10_TYPE_SHIFT = 8;
    static final int CDW10_CPTPL_SHIFT = 30;
    static final int CDW11_EXTENDED = 1;
    static final int CDW11_PTPL = 1;

    static final int REPORT_HEADER_BYTES = 64;
    static final int REPORT_ENTRY_BYTES = 64;
    static final int REPORT_GENERATION = 0;
    static final int REPORT_TYPE = 4;
    static final int REPORT_REGISTRANTS = 5;
    static final int REPORT_PTPLS = 9;
    static final int ENTRY_CNTLID = 0;
    static final int ENTRY_STATUS = 2;
    static final int ENTRY_KEY = 8;
    static final int ENTRY_HOST_ID = 16;
    static final int CNTLID_DYNAMIC = 0xFFFF;

    private ReservationCommands() {
    }

    public static boolean is(int opcode) {
        return opcode == REGISTER || opcode == REPORT || opcode == ACQUIRE || opcode == RELEASE;
    }

    /** An IO-queue reservation command on a namespace with resv_enable: {@link Queue#PENDING}, or a status now. */
    static int execute(Controller c, CommandSlot slot, NamespaceReservation r) {
        ByteBuffer sqe = slot.sqe;
        int cdw10 = sqe.getInt(Sqe.CDW10);
        int action = cdw10 & CDW10_ACTION;
        boolean ignoreKey = (cdw10 & CDW10_IGNORE_KEY) != 0;
        int type = (cdw10 >>> CDW10_TYPE_SHIFT) & 0xFF;
        long high = c.hostIdHigh, low = c.hostIdLow;
        Reservations service = c.target.reservations();
        switch (Sqe.opcode(sqe)) {
            case REGISTER -> {
                if (slot.dataLength != 16) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
                long current = slot.data().getLong(0), fresh = slot.data().getLong(8);
                int cptpl = cdw10 >>> CDW10_CPTPL_SHIFT;
                boolean persistable = service.persistable();
                service.change(answer(slot), r, s -> s.register(high, low, action, ignoreKey, cptpl, current, fresh, persistable));
            }
            case ACQUIRE -> {
                if (slot.dataLength != 16) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
                long current = slot.data().getLong(0), preempt = slot.data().getLong(8);
                service.change(answer(slot), r, s -> s.acquire(high, low, action, ignoreKey, type, current, preempt),
                               action == ReservationState.PREEMPT_AND_ABORT);
            }
            case RELEASE -> {
                if (slot.dataLength != 8) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
                long current = slot.data().getLong(0);
                service.change(answer(slot), r, s -> s.release(high, low, action, ignoreKey, type, current));
            }
            default -> {
                long dwords = Integer.toUnsignedLong(cdw10) + 1;
                if (dwords * 4 != slot.dataLength) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
                if (slot.dataLength < REPORT_HEADER_BYTES) return Status.INVALID_FIELD | Status.DNR;
                if ((sqe.getInt(Sqe.CDW11) & CDW11_EXTENDED) == 0) return Status.HOST_ID_INCONSISTENT | Status.DNR;
                ByteBuffer out = slot.data();
                service.read(answer(slot), r, s -> report(s, out));
            }
        }
        return Queue.PENDING;
    }

    /** Gives the slot up from its loop: the reservation threads answer it (CommandSlot#finish). The queue's loop. */
    private static IntConsumer answer(CommandSlot slot) {
        slot.leaveLoop();
        return slot::finish;
    }

    /** Fills the extended status structure: as many registrants as fit, REGCTL counting them all. */
    private static int report(ReservationState s, ByteBuffer out) {
        Identify.zeroed(out);
        out.putInt(REPORT_GENERATION, s.generation());
        out.put(REPORT_TYPE, (byte) s.type());
        out.putShort(REPORT_REGISTRANTS, (short) s.registrants().size());
        out.put(REPORT_PTPLS, (byte) (s.ptpl() ? 1 : 0));
        int at = REPORT_HEADER_BYTES;
        for (ReservationState.Registrant reg : s.registrants()) {
            if (at + REPORT_ENTRY_BYTES > out.limit()) break;
            out.putShort(at + ENTRY_CNTLID, (short) CNTLID_DYNAMIC);
            out.put(at + ENTRY_STATUS, (byte) (s.holds(reg.hostHigh(), reg.hostLow()) ? 1 : 0));
            out.putLong(at + ENTRY_KEY, reg.key());
            out.order(java.nio.ByteOrder.BIG_ENDIAN).putLong(at + ENTRY_HOST_ID, reg.hostHigh()).putLong(at + ENTRY_HOST_ID + 8, reg.hostLow())
               .order(java.nio.ByteOrder.LITTLE_ENDIAN);
            at += REPORT_ENTRY_BYTES;
        }
        return Status.SUCCESS;
    }

    /** Whether a command of this opcode writes the namespace for the access check (nvmet's write group; the rest read). */
    static boolean writes(int opcode) {
        return opcode == IoCommands.FLUSH || opcode == IoCommands.WRITE || opcode == IoCommands.WRITE_ZEROES
               || opcode == IoCommands.DATASET_MANAGEMENT;
    }

    // ---------------------------------------------------------------- features (admin queue)

    /** Set Features 0x82 / 0x83: a status, or {@link Queue#PENDING} for PTPL, which the store keeps. */
    static int setFeature(Controller c, CommandSlot slot, int fid) {
        int nsid = Sqe.nsid(slot.sqe);
        int cdw11 = slot.sqe.getInt(Sqe.CDW11);
        if (fid == FEATURE_NOTIFICATION_MASK) {
            if ((cdw11 & ~NoticeLog.MASK_BITS) != 0) return Status.INVALID_FIELD | Status.DNR;
            if (nsid == -1) {
                var table = c.subsystem.table;
                for (int i = 0; i < table.size(); i++) if (table.get(i).reservation() != null) c.reservationMask(table.get(i).nsid(), cdw11);
                return Status.SUCCESS;
            }
            NamespaceReservation r = reservation(c, nsid);
            if (r == null) return Status.INVALID_FIELD | Status.DNR;
            c.reservationMask(nsid, cdw11);
            return Status.SUCCESS;
        }
        NamespaceReservation r = reservation(c, nsid);
        boolean on = (cdw11 & CDW11_PTPL) != 0;
        Reservations service = c.target.reservations();
        if (r == null || (on && !service.persistable())) return Status.INVALID_FIELD | Status.DNR;
        service.change(answer(slot), r, s -> s.persist(on));
        return Queue.PENDING;
    }

    /** Get Features 0x82 / 0x83 into the slot's result. */
    static int getFeature(Controller c, CommandSlot slot, int fid) {
        int nsid = Sqe.nsid(slot.sqe);
        NamespaceReservation r = reservation(c, nsid);
        if (r == null) return Status.INVALID_FIELD | Status.DNR;
        if (fid == FEATURE_NOTIFICATION_MASK) {
            slot.result = c.reservationMask(nsid);
        } else {
            ReservationState s = r.state();
            if (s == null) return Status.ANA_INACCESSIBLE;
            slot.result = s.ptpl() ? 1 : 0;
        }
        return Status.SUCCESS;
    }

    private static NamespaceReservation reservation(Controller c, int nsid) {
        ActiveNamespace ns = c.subsystem.table.find(nsid);
        return ns == null ? null : ns.reservation();
    }
}
