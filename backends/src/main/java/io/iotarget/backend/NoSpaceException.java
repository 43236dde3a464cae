package io.iotarget.backend;

import java.io.IOException;

/** The backend could not allocate space for a write (ENOSPC). */
public final class NoSpaceException extends IOException {
    private static final long serialVersionUID = 1L;

    public NoSpaceException(String message, Throwable cause) {
        super(message, cause);
    }
}
