package io.iotarget.backend;

import io.iotarget.model.IoStatus;

/**
 * What a backend failure means to a client: the errno behind it, and the {@link IoStatus}
 * that errno becomes, so that a full file system reaches an NBD client as ENOSPC and an NVMe
 * host as Capacity Exceeded rather than as a bare I/O error. Numbers are Linux's (the same on
 * x86-64 and arm64). Any thread.
 *
 * <pre>
 *  errno                         status          NBD         NVMe
 *  ENOSPC, EDQUOT                NO_SPACE        ENOSPC      Capacity Exceeded
 *  EROFS, EPERM, EACCES          READ_ONLY       EPERM       Namespace Is Write Protected
 *  EFBIG                         OUT_OF_RANGE    ENOSPC      LBA Out of Range
 *  EINVAL                        INVALID         EINVAL      Invalid Field
 *  EOPNOTSUPP                    NOT_SUPPORTED   EINVAL      Invalid Opcode
 *  ECANCELED, EBADF, ENODEV,     ABORTED         ESHUTDOWN   Abort Requested
 *  ENXIO (the file or device went away)
 *  EIO and anything else         IO_ERROR        EIO         Internal Error
 * </pre>
 */
public final class BackendErrors {
    public static final int EPERM = 1;
    public static final int EINTR = 4;
    public static final int EIO = 5;
    public static final int ENXIO = 6;
    public static final int EBADF = 9;
    public static final int EAGAIN = 11;
    public static final int ENOMEM = 12;
    public static final int EACCES = 13;
    public static final int EBUSY = 16;
    public static final int ENODEV = 19;
    public static final int EINVAL = 22;
    public static final int EFBIG = 27;
    public static final int ENOSPC = 28;
    public static final int EROFS = 30;
    public static final int ENOSYS = 38;
    public static final int ENODATA = 61;
    public static final int EOPNOTSUPP = 95;
    public static final int EDQUOT = 122;
    public static final int ECANCELED = 125;

    private BackendErrors() {
    }

    /** The errno of a failure: an {@link ErrnoException}'s own, EIO for anything else. */
    public static int errno(Throwable failure) {
        return failure instanceof ErrnoException e ? e.errno() : EIO;
    }

    public static IoStatus status(int errno) {
        return switch (errno) {
            case ENOSPC, EDQUOT -> IoStatus.NO_SPACE;
            case EROFS, EPERM, EACCES -> IoStatus.READ_ONLY;
            case EFBIG -> IoStatus.OUT_OF_RANGE;
            case EINVAL -> IoStatus.INVALID;
            case EOPNOTSUPP -> IoStatus.NOT_SUPPORTED;
            case ECANCELED, EBADF, ENODEV, ENXIO -> IoStatus.ABORTED;
            default -> IoStatus.IO_ERROR;
        };
    }

    /** "ENOSPC (28)", or "errno 42" for numbers without a name here. */
    public static String name(int errno) {
        String name = switch (errno) {
            case EPERM -> "EPERM";
            case EINTR -> "EINTR";
            case EIO -> "EIO";
            case ENXIO -> "ENXIO";
            case EBADF -> "EBADF";
            case EAGAIN -> "EAGAIN";
            case ENOMEM -> "ENOMEM";
            case EACCES -> "EACCES";
            case EBUSY -> "EBUSY";
            case ENODEV -> "ENODEV";
            case EINVAL -> "EINVAL";
            case EFBIG -> "EFBIG";
            case ENOSPC -> "ENOSPC";
            case EROFS -> "EROFS";
            case ENOSYS -> "ENOSYS";
            case ENODATA -> "ENODATA";
            case EOPNOTSUPP -> "EOPNOTSUPP";
            case EDQUOT -> "EDQUOT";
            case ECANCELED -> "ECANCELED";
            default -> null;
        };
        return name == null ? "errno " + errno : name + " (" + errno + ")";
    }
}
