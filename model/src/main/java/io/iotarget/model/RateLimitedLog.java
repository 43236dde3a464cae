package io.iotarget.model;

/**
 * Lines that something outside the server can cause at any rate (a failing disk, a client
 * without the key, a host whose NQN cannot name a group): at most {@code linesPerSecond} lines
 * in any one-second window; the events beyond are counted, and the count is logged with the
 * first line of the next window (or at {@link #flush}). One instance per kind of event per
 * server, never per connection: a flood of connections must not bring a limit each.
 *
 * <p>Every message and thrown is escaped ({@link LogText#escape}) before it is logged, so that
 * no client text in it can start a line of its own; callers put client strings in as they are,
 * {@link LogText#clip clipped} if they may be long. A log call that throws (a logging backend
 * out of memory or descriptors, a class it cannot load) loses its line, never the caller's work.
 * Any thread; such events are rare next to IO, so it locks.
 */
public final class RateLimitedLog {
    private static final long WINDOW_NS = 1_000_000_000L;

    private final System.Logger logger;
    private final System.Logger.Level level;
    private final Clock clock;
    private final int linesPerSecond;
    /** What the count of unlogged events is of: "N more " + this + " not logged". */
    private final String what;
    // Guarded by this.
    private long windowStartNs;
    private int lines;
    private long suppressed;

    /** Logs WARNINGs. */
    public RateLimitedLog(System.Logger logger, Clock clock, int linesPerSecond, String what) {
        this(logger, System.Logger.Level.WARNING, clock, linesPerSecond, what);
    }

    public RateLimitedLog(System.Logger logger, System.Logger.Level level, Clock clock, int linesPerSecond, String what) {
        this.logger = logger;
        this.level = level;
        this.clock = clock;
        this.linesPerSecond = linesPerSecond;
        this.what = what;
        this.windowStartNs = clock.nanoTime() - WINDOW_NS;
    }

    /** Logs {@code message} escaped (with {@code thrown}, escaped, if not null) unless this window's lines are used up. */
    public synchronized void log(String message, Throwable thrown) {
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
        write(message, thrown);
    }

    /** Logs how many events went unlogged since the last line, if any. */
    public synchronized void flush() {
        if (suppressed == 0) return;
        write(suppressed + " more " + what + " not logged", null);
        suppressed = 0;
    }

    private void write(String message, Throwable thrown) {
        try {
            logger.log(level, LogText.escape(message), LogText.escape(thrown));
        } catch (RuntimeException | Error e) {
            // Seen: a test that used up the JVM's descriptors left the JDK unable to load its
            // time-zone data, so every log call threw NoClassDefFoundError; the caller goes on.
        }
    }
}
