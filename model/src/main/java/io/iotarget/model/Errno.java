package io.iotarget.model;

/**
 * The errnos a control-plane write can fail with, named and worded as in Linux so that an
 * operator who knows cgroupfs and nvmet's configfs reads them at a glance.
 */
public enum Errno {
    EPERM(1, "Operation not permitted"),
    ENOENT(2, "No such file or directory"),
    EINTR(4, "Interrupted system call"),
    EIO(5, "Input/output error"),
    E2BIG(7, "Argument list too long"),
    EAGAIN(11, "Resource temporarily unavailable"),
    ENOMEM(12, "Cannot allocate memory"),
    EACCES(13, "Permission denied"),
    EBUSY(16, "Device or resource busy"),
    EEXIST(17, "File exists"),
    ENODEV(19, "No such device"),
    ENOTDIR(20, "Not a directory"),
    EISDIR(21, "Is a directory"),
    EINVAL(22, "Invalid argument"),
    ENOSPC(28, "No space left on device"),
    EROFS(30, "Read-only file system"),
    ERANGE(34, "Numerical result out of range"),
    ENAMETOOLONG(36, "File name too long"),
    ENOTEMPTY(39, "Directory not empty"),
    EOPNOTSUPP(95, "Operation not supported"),
    EADDRINUSE(98, "Address already in use");

    private final int code;
    private final String message;

    Errno(int code, String message) {
        this.code = code;
        this.message = message;
    }

    /** The Linux x86-64 number. */
    public int code() {
        return code;
    }

    /** strerror(3) text. */
    public String message() {
        return message;
    }
}
