package io.iotarget.backend;

import java.io.IOException;

/** A backend call failed with a Linux errno; {@link BackendErrors#status} says what it means to a client. */
public final class ErrnoException extends IOException {
    private static final long serialVersionUID = 1L;
    private final int errno;

    /** @param call what failed, for the message ("pwrite", "io_uring read") */
    public ErrnoException(String call, int errno) {
        super(call + " failed: " + BackendErrors.name(errno));
        this.errno = errno;
    }

    public ErrnoException(String call, int errno, Throwable cause) {
        super(call + " failed: " + BackendErrors.name(errno), cause);
        this.errno = errno;
    }

    public int errno() {
        return errno;
    }
}
