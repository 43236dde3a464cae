package io.iotarget.model;

/**
 * Warnings that something outside the server can cause at any rate (a failing disk, a client
 * without the key): at most {@code linesPerSecond} lines in any one-second window; the events
 * beyond are counted, and the count is logged with the first line of the next window (or at
 * {@link #flush}). A log call that throws (a logging backend out of memory or descriptors, a
 * class it cannot load) loses its line, never the caller's work. Any thread; such events are
 * rare next to IO, so it locks.
 */
public final class RateLimitedLog {
    private static final long WINDOW_NS = 1_000_000_000L;

    private final System.Logger logger;
    private final Clock clock;
    private final int linesPerSecond;
    /** What the count of unlogged events is of: "N more " + this + " not logged". */
    private final String what;
    // Guarded by this.
    private long windowStartNs;
    private int lines;
    private long suppressed;

    public RateLimitedLog(System.Logger logger, Clock clock, int linesPerSecond, String what) {
        this.logger = logger;
        this.clock = clock;
        this.linesPerSecond = linesPerSecond;
        this.what = what;
        this.windowStartNs = clock.nanoTime() - WINDOW_NS;
    }

    /** Logs {@code message} (a WARNING, with {@code thrown} if not null) unless this window's lines are used up. */
    public synchronized void warn(String message, Throwable thrown) {
        long now = clock.nanoTime();
        if (now - windowStartNs >= WINDOW_NS) {
            flush();
            windowStartNs = now;
            lines = 0;
        }
        if (lines == linesPerSecond) {
            suppressed++;
            return;
        }
        lines++;
        log(message, thrown);
    }

    /** Logs how many events went unlogged since the last line, if any. */
    public synchronized void flush() {
        if (suppressed == 0) return;
        log(suppressed + " more " + what + " not logged", null);
        suppressed = 0;
    }

    private void log(String message, Throwable thrown) {
        try {
            logger.log(System.Logger.Level.WARNING, message, thrown);
        } catch (RuntimeException | Error e) {
            // Seen: a test that used up the JVM's descriptors left the JDK unable to load its
            // time-zone data, so every log call threw NoClassDefFoundError; the caller goes on.
        }
    }
}
