package io.iotarget.dispatch;

import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.ErrnoException;
import io.iotarget.model.Clock;
import io.iotarget.model.Device;
import io.iotarget.model.IoRequest;
import io.iotarget.model.RateLimitedLog;

import java.io.IOException;

/**
 * Logs one device's backend failures (device, op, offset, length, errno) without letting a
 * failing disk flood the log: at most {@link #LINES_PER_SECOND} lines in any one-second
 * window, the rest counted ({@link RateLimitedLog}). A log call that throws loses its line,
 * never the request being failed or the thread failing it.
 */
final class BackendErrorLog {
    /** Enough to show a pattern (one op, one range, one errno); a failing disk fails thousands of requests a second. */
    static final int LINES_PER_SECOND = 5;
    private static final System.Logger LOG = System.getLogger(DispatchQueue.class.getName());

    private final Device device;
    private final RateLimitedLog log;

    BackendErrorLog(Device device, Clock clock) {
        this(device, clock, LOG);
    }

    BackendErrorLog(Device device, Clock clock, System.Logger logger) {
        this.device = device;
        this.log = new RateLimitedLog(logger, clock, LINES_PER_SECOND, "backend error(s) on " + device.name() + " (" + device.number() + ")");
    }

    void report(IoRequest io, int errno, IOException cause) {
        String message = "backend error on " + device.name() + " (" + device.number() + "): " + io.op() + " offset=" + io.offset()
                + " length=" + io.length() + ": " + (cause instanceof ErrnoException ? "" : BackendErrors.name(errno) + ": ") + cause.getMessage();
        // An errno says all there is; a RuntimeException is a bug whose stack trace matters.
        log.log(message, cause.getCause() instanceof RuntimeException ? cause : null);
    }

    /** Logs how many failures went unlogged since the last line, if any. */
    void flush() {
        log.flush();
    }
}
