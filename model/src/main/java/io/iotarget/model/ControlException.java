package io.iotarget.model;

/**
 * A refused control-plane operation: the errno Linux would return from write(2), mkdir(2) or
 * rmdir(2), plus a detail naming the offending token and what was expected. A refused
 * operation has changed nothing.
 */
public final class ControlException extends Exception {
    private static final long serialVersionUID = 1L;

    private final Errno errno;
    private final String detail;

    public ControlException(Errno errno, String detail) {
        super(errno.message() + " (" + errno.name() + "): " + detail);
        this.errno = errno;
        this.detail = detail;
    }

    public Errno errno() {
        return errno;
    }

    /** What was wrong, for people: {@code "wbps=0 (expected: > 0 or max)"}. */
    public String detail() {
        return detail;
    }
}
