package io.iotarget.frontend.nvmetcp.wire;

import io.iotarget.model.IoStatus;

/**
 * NVMe completion status codes in Linux's unshifted form: {@code SCT << 8 | SC}, with
 * {@link #DNR} (do not retry) at bit 14; the wire carries them shifted left by one (bit 0 is
 * the phase tag). Constants and the one mapping from the engine's {@link IoStatus}.
 */
public final class Status {
    public static final int SUCCESS = 0x000;
    // Generic command status (SCT 0).
    public static final int INVALID_OPCODE = 0x001;
    public static final int INVALID_FIELD = 0x002;
    public static final int INTERNAL = 0x006;
    public static final int ABORT_REQUESTED = 0x007;
    public static final int INVALID_NAMESPACE = 0x00B;
    public static final int COMMAND_SEQUENCE_ERROR = 0x00C;
    public static final int SGL_DATA_LENGTH_INVALID = 0x00F;
    public static final int SGL_TYPE_INVALID = 0x011;
    public static final int SGL_OFFSET_INVALID = 0x016;
    public static final int NAMESPACE_WRITE_PROTECTED = 0x020;
    public static final int LBA_OUT_OF_RANGE = 0x080;
    public static final int CAPACITY_EXCEEDED = 0x081;
    /** Retried by the host (no DNR). */
    public static final int NAMESPACE_NOT_READY = 0x082;
    /** A persistent reservation held by another host forbids the command (sent with DNR). */
    public static final int RESERVATION_CONFLICT = 0x083;
    // Command specific status (SCT 1).
    public static final int ASYNC_EVENT_LIMIT = 0x105;
    public static final int CONNECT_INCOMPATIBLE_FORMAT = 0x180;
    public static final int CONNECT_CONTROLLER_BUSY = 0x181;
    public static final int CONNECT_INVALID_PARAMETERS = 0x182;
    public static final int CONNECT_INVALID_HOST = 0x184;
    /** Reservation Report without EDS while host identifiers are 128-bit. */
    public static final int HOST_ID_INCONSISTENT = 0x118;
    public static final int AUTH_REQUIRED = 0x191;
    // Media and data integrity errors (SCT 2).
    public static final int COMPARE_FAILURE = 0x285;
    // Path related status (SCT 3): sent without DNR, so that a multipath host fails over.
    public static final int ANA_PERSISTENT_LOSS = 0x301;
    public static final int ANA_INACCESSIBLE = 0x302;
    public static final int ANA_TRANSITION = 0x303;

    public static final int DNR = 0x4000;

    private Status() {
    }

    /** nvmet_check_ana_state: what an IO command to a namespace of a group in {@code state} gets, SUCCESS when it may run. */
    public static int of(AnaState state) {
        return switch (state) {
            case OPTIMIZED, NON_OPTIMIZED -> SUCCESS;
            case INACCESSIBLE -> ANA_INACCESSIBLE;
            case PERSISTENT_LOSS -> ANA_PERSISTENT_LOSS;
            case CHANGE -> ANA_TRANSITION;
        };
    }

    /** How an engine completion reads to an NVMe host; every failure but an abort is final (DNR). */
    public static int of(IoStatus status) {
        return switch (status) {
            case OK -> SUCCESS;
            case INVALID, NOT_FAST -> INVALID_FIELD | DNR;
            case OUT_OF_RANGE -> LBA_OUT_OF_RANGE | DNR;
            case READ_ONLY -> NAMESPACE_WRITE_PROTECTED | DNR;
            case NOT_SUPPORTED -> INVALID_OPCODE | DNR;
            case IO_ERROR -> INTERNAL | DNR;
            case NO_SPACE -> CAPACITY_EXCEEDED | DNR;
            case COMPARE_FAILED -> COMPARE_FAILURE | DNR;
            case ABORTED -> ABORT_REQUESTED;
            case FORBIDDEN -> RESERVATION_CONFLICT | DNR;
            case UNAVAILABLE -> ANA_INACCESSIBLE;
        };
    }
}
