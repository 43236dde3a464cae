package io.iotarget.frontend.nvmetcp.command;

import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.CommandSlot;
import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.Queue;
import java.nio.ByteBuffer;

/**
 * The admin queue's commands, run inline on its event loop: fabrics Property Get/Set,
 * Identify, Get Log Page, Get/Set Features, Asynchronous Event Request, Keep Alive and Abort.
 * A discovery controller runs the subset nvmet's discovery controller runs.
 *
 * <pre>
 *  Features  FID   Set                                   Get
 *  Arbitration, Power Management, Temperature Threshold,
 *  Error Recovery, IRQ Coalescing/Config, Write Atomicity
 *            0x01-0x0A (those)  -                        0 (mandatory, nothing to report)
 *  Number of Queues  0x07  result (max_qid-1) both halves   same
 *  Async Event Config 0x0B  mask ⊆ what we raise, else     the mask
 *                           Invalid Field
 *  Keep Alive Timer  0x0F  ms, timer restarted           ms
 *  Host Identifier   0x81  Command Sequence Error        the 16-byte host id (EXHID required)
 *  Resv Notif. Mask  0x82  per resv namespace (or all:   the namespace's mask
 *                          NSID FFFFFFFFh), bits 1-3
 *  Resv Persistence  0x83  PTPL (CDW11 bit 0), kept by   PTPL
 *                          the store; 1 needs persistence
 * </pre>
 */
public final class AdminCommands {
    static final int GET_LOG_PAGE = 0x02;
    static final int IDENTIFY = 0x06;
    static final int ABORT = 0x08;
    static final int SET_FEATURES = 0x09;
    static final int GET_FEATURES = 0x0A;
    static final int ASYNC_EVENT_REQUEST = 0x0C;
    static final int KEEP_ALIVE = 0x18;

    static final int FEATURE_ARBITRATION = 0x01;
    static final int FEATURE_POWER_MANAGEMENT = 0x02;
    static final int FEATURE_TEMPERATURE_THRESHOLD = 0x04;
    static final int FEATURE_ERROR_RECOVERY = 0x05;
    static final int FEATURE_NUMBER_OF_QUEUES = 0x07;
    static final int FEATURE_IRQ_COALESCING = 0x08;
    static final int FEATURE_IRQ_CONFIG = 0x09;
    static final int FEATURE_WRITE_ATOMICITY = 0x0A;
    static final int FEATURE_ASYNC_EVENT_CONFIG = 0x0B;
    static final int FEATURE_KEEP_ALIVE_TIMER = 0x0F;
    static final int FEATURE_HOST_IDENTIFIER = 0x81;
    static final int CDW11_EXTENDED_HOST_ID = 1;

    private AdminCommands() {
    }

    public static int precheck(Controller c, CommandSlot slot) {
        int opcode = Sqe.opcode(slot.sqe);
        if (opcode == Sqe.OPCODE_FABRICS) {
            int type = slot.sqe.get(Sqe.FABRICS_TYPE);
            return type == Fabrics.TYPE_PROPERTY_GET || type == Fabrics.TYPE_PROPERTY_SET ? Status.SUCCESS
                    : Status.INVALID_OPCODE | Status.DNR;
        }
        boolean known = switch (opcode) {
            case GET_LOG_PAGE, IDENTIFY, SET_FEATURES, GET_FEATURES, ASYNC_EVENT_REQUEST, KEEP_ALIVE -> true;
            case ABORT -> !c.discovery();
            default -> false;
        };
        if (!known) return Status.INVALID_OPCODE | Status.DNR;
        return c.ready() ? Status.SUCCESS : Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
    }

    /** A status, or {@link Queue#PENDING} for an AER parked until an event or a PTPL change in the store. */
    public static int execute(Controller c, Queue queue, CommandSlot slot) {
        ByteBuffer sqe = slot.sqe;
        int opcode = Sqe.opcode(sqe);
        if (opcode != Sqe.OPCODE_FABRICS && opcode != IDENTIFY && opcode != GET_LOG_PAGE && slot.dataLength != 0
            && !(opcode == GET_FEATURES && (sqe.getInt(Sqe.CDW10) & 0xFF) == FEATURE_HOST_IDENTIFIER)) {
            return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
        }
        return switch (opcode) {
            case Sqe.OPCODE_FABRICS -> sqe.get(Sqe.FABRICS_TYPE) == Fabrics.TYPE_PROPERTY_GET
                    ? Fabrics.propertyGet(c, slot) : Fabrics.propertySet(c, slot);
            case IDENTIFY -> Identify.execute(c, slot);
            case GET_LOG_PAGE -> LogPages.execute(c, slot);
            case SET_FEATURES -> setFeatures(c, slot);
            case GET_FEATURES -> getFeatures(c, slot);
            case ASYNC_EVENT_REQUEST -> c.asyncEventRequest(slot);
            case KEEP_ALIVE -> Status.SUCCESS;
            case ABORT -> {
                slot.result = 1;                             // command not aborted
                yield Status.SUCCESS;
            }
            default -> Status.INVALID_OPCODE | Status.DNR;
        };
    }

    private static int setFeatures(Controller c, CommandSlot slot) {
        int fid = slot.sqe.getInt(Sqe.CDW10) & 0xFF;
        int cdw11 = slot.sqe.getInt(Sqe.CDW11);
        if (c.discovery() && fid != FEATURE_KEEP_ALIVE_TIMER && fid != FEATURE_ASYNC_EVENT_CONFIG) return Status.INVALID_FIELD | Status.DNR;
        switch (fid) {
            case FEATURE_NUMBER_OF_QUEUES -> slot.result = queueCount(c);
            case FEATURE_ASYNC_EVENT_CONFIG -> {
                if (!c.aenConfig(cdw11)) return Status.INVALID_FIELD | Status.DNR;
            }
            case FEATURE_KEEP_ALIVE_TIMER -> c.kato(Integer.toUnsignedLong(cdw11));
            case FEATURE_HOST_IDENTIFIER -> {
                return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
            }
            case ReservationCommands.FEATURE_NOTIFICATION_MASK, ReservationCommands.FEATURE_PERSISTENCE -> {
                return ReservationCommands.setFeature(c, slot, fid);
            }
            default -> {
                return Status.INVALID_FIELD | Status.DNR;
            }
        }
        return Status.SUCCESS;
    }

    private static int getFeatures(Controller c, CommandSlot slot) {
        int fid = slot.sqe.getInt(Sqe.CDW10) & 0xFF;
        if (c.discovery() && fid != FEATURE_KEEP_ALIVE_TIMER && fid != FEATURE_ASYNC_EVENT_CONFIG) return Status.INVALID_FIELD | Status.DNR;
        switch (fid) {
            case FEATURE_ARBITRATION, FEATURE_POWER_MANAGEMENT, FEATURE_TEMPERATURE_THRESHOLD, FEATURE_ERROR_RECOVERY,
                 FEATURE_IRQ_COALESCING, FEATURE_IRQ_CONFIG, FEATURE_WRITE_ATOMICITY -> slot.result = 0;
            case FEATURE_NUMBER_OF_QUEUES -> slot.result = queueCount(c);
            case FEATURE_ASYNC_EVENT_CONFIG -> slot.result = Integer.toUnsignedLong(c.aenConfig());
            case FEATURE_KEEP_ALIVE_TIMER -> slot.result = c.katoMs();
            case ReservationCommands.FEATURE_NOTIFICATION_MASK, ReservationCommands.FEATURE_PERSISTENCE -> {
                return ReservationCommands.getFeature(c, slot, fid);
            }
            case FEATURE_HOST_IDENTIFIER -> {
                if ((slot.sqe.getInt(Sqe.CDW11) & CDW11_EXTENDED_HOST_ID) == 0 || slot.dataLength != c.hostId.length) {
                    return Status.INVALID_FIELD | Status.DNR;
                }
                slot.data().put(0, c.hostId);
            }
            default -> {
                return Status.INVALID_FIELD | Status.DNR;
            }
        }
        return Status.SUCCESS;
    }

    /** Number of Queues result: IO submission and completion queues allocated, both 0's based. */
    private static long queueCount(Controller c) {
        long n = c.maxQid() - 1;
        return n | n << 16;
    }
}
