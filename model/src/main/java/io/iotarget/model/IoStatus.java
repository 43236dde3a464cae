package io.iotarget.model;

/**
 * How a request ended. Errors on the IO path are values, not exceptions: the front end maps
 * each status to its protocol (an NBD errno, an NVMe status code).
 */
public enum IoStatus {
    /** Completed. */
    OK,
    /** Malformed request (bad alignment, bad flags). NBD EINVAL, NVMe Invalid Field. */
    INVALID,
    /** Range outside the device. NBD EINVAL/ENOSPC, NVMe LBA Out of Range. */
    OUT_OF_RANGE,
    /** Write to a read-only device. NBD EPERM, NVMe Namespace Is Write Protected. */
    READ_ONLY,
    /** Operation not supported by this backend. NBD EOPNOTSUPP, NVMe Invalid Opcode. */
    NOT_SUPPORTED,
    /** A fast zero was asked for and the backend cannot zero quickly. NBD ENOTSUP. */
    NOT_FAST,
    /** The backend failed. NBD EIO, NVMe Internal Error. */
    IO_ERROR,
    /** The backend ran out of space (e.g. memory backend limit). NBD ENOSPC, NVMe Capacity Exceeded. */
    NO_SPACE,
    /** COMPARE found a difference. NVMe Compare Failure. */
    COMPARE_FAILED,
    /** The target is shutting down or the device went away. NBD ESHUTDOWN, NVMe Abort. */
    ABORTED,
    /**
     * The request's {@link IoGate} forbids it: its issuer has no access (another host's
     * reservation). Final: NBD EPERM, NVMe Reservation Conflict (DNR).
     */
    FORBIDDEN,
    /**
     * The request's {@link IoGate} cannot decide here now (this node is fenced or has not read
     * the state yet): a path error another node may not have. NBD EIO, NVMe ANA Inaccessible.
     */
    UNAVAILABLE
}
