package io.iotarget.dispatch;

import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.ErrnoException;
import io.iotarget.model.Clock;
import io.iotarget.model.Device;
import io.iotarget.model.IoRequest;

import java.io.IOException;

/**
 * Logs one device's backend failures (device, op, offset, length, errno) without letting a
 * failing disk flood the log: at most {@link #LINES_PER_SECOND} lines in any one-second
 * window; the failures beyond are counted, and the count is logged with the first line of
 * the next window (or when the queue closes). A log call that throws (a logging backend out
 * of memory or descriptors, a class it cannot load) loses its line, never the request being
 * failed or the thread failing it. Any thread; failures are rare, so it locks.
 */
final class BackendErrorLog {
    /** Enough to show a pattern (one op, one range, one errno); a failing disk fails thousands of requests a second. */
    static final int LINES_PER_SECOND = 5;
    private static final long WINDOW_NS = 1_000_000_000L;
    private static final System.Logger LOG = System.getLogger(DispatchQueue.class.getName());

    private final Device device;
    private final Clock clock;
    private final System.Logger logger;
    // Guarded by this.
    private long windowStartNs;
    private int lines;
    private long suppressed;

    BackendErrorLog(Device device, Clock clock) {
        this(device, clock, LOG);
    }

    BackendErrorLog(Device device, Clock clock, System.Logger logger) {
        this.device = device;
        this.clock = clock;
        this.logger = logger;
        this.windowStartNs = clock.nanoTime() - WINDOW_NS;
    }

    synchronized void report(IoRequest io, int errno, IOException cause) {
        long now = clock.nanoTime();
        if (now - windowStartNs >= WINDOW_NS) {
            flush();
            windowStartNs = now;
            lines = 0;
        }
        if (lines == LINES_PER_SECOND) {
            suppressed++;
            return;
        }
        lines++;
        String message = "backend error on " + device.name() + " (" + device.number() + "): " + io.op() + " offset=" + io.offset()
                + " length=" + io.length() + ": " + (cause instanceof ErrnoException ? "" : BackendErrors.name(errno) + ": ") + cause.getMessage();
        // An errno says all there is; a RuntimeException is a bug whose stack trace matters.
        log(message, cause.getCause() instanceof RuntimeException ? cause : null);
    }

    /** Logs how many failures went unlogged since the last line, if any. */
    synchronized void flush() {
        if (suppressed == 0) return;
        log(suppressed + " more backend error(s) on " + device.name() + " (" + device.number() + ") not logged", null);
        suppressed = 0;
    }

    private void log(String message, Throwable thrown) {
        try {
            logger.log(System.Logger.Level.WARNING, message, thrown);
        } catch (RuntimeException | Error e) {
            // Seen: a test that used up the JVM's descriptors left the JDK unable to load its
            // time-zone data, so every log call threw NoClassDefFoundError; the request still fails.
        }
    }
}
