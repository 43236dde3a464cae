package io.iotarget.iocontrol.pressure;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

/**
 * One io.pressure trigger, {@code some|full <stall us> <window us>}: an event whenever the
 * group's SOME (or FULL) time grew by at least the stall within the last window, at most one
 * per window — psi_trigger_create and update_triggers. Made by {@link Pressure#watch}, polled
 * by its watcher every tenth of the window ({@link #pollPeriodNs}), gone at {@link #close}.
 *
 * <p>Threads: {@link #poll} and {@link #close} from the watcher's thread; the state is the
 * tracker's, under its lock.
 */
public final class Trigger implements AutoCloseable {
    /** The kernel's window bounds, WINDOW_MIN_US and WINDOW_MAX_US. */
    static final long WINDOW_MIN_US = 500_000;
    static final long WINDOW_MAX_US = 10_000_000;
    /** UPDATES_PER_WINDOW: polls per window, and windows of quiet after which polling rests. */
    static final int UPDATES_PER_WINDOW = 10;

    /** What a write names: the state and the two numbers, checked as the kernel checks them. */
    record Spec(int state, long thresholdUs, long windowUs) {
        @Override
        public String toString() {
            return (state == PressureGroup.SOME ? "some " : "full ") + thresholdUs + " " + windowUs;
        }
    }

    private final Pressure tracker;
    final PressureGroup group;
    final Spec spec;
    private final long thresholdNs;
    private final long windowNs;

    // Tracker lock.
    private long windowStartNs;
    private long windowStartValue;
    private long previousGrowth;
    /** The group's total at the last poll (the kernel's polling_total). */
    private long lastTotalNs;
    /** Long.MIN_VALUE / 2 for never: engine clocks may be negative. */
    private long pollingUntilNs = Long.MIN_VALUE / 2;
    private long lastEventNs = Long.MIN_VALUE / 2;
    private boolean pendingEvent;
    boolean closed;

    Trigger(Pressure tracker, PressureGroup group, Spec spec, long nowNs) {
        this.tracker = tracker;
        this.group = group;
        this.spec = spec;
        this.thresholdNs = spec.thresholdUs() * 1000;
        this.windowNs = spec.windowUs() * 1000;
        this.lastTotalNs = group.totalNs(spec.state());
        windowReset(nowNs, lastTotalNs, 0);
    }

    /**
     * psi_trigger_create's reading, {@code sscanf(buf, "some %u %u")} then {@code "full %u %u"}:
     * the word at the very start, then two decimal numbers, each after any whitespace (none
     * needed after the word); what follows the second number is not read. Then the window must
     * be 500 ms..10 s and the stall 1 µs..window; anything else is EINVAL. A number past 32 bits,
     * which the kernel's {@code %u} silently truncates, is refused too.
     */
    static Spec parse(String text) throws ControlException {
        for (int state = PressureGroup.SOME; state <= PressureGroup.FULL; state++) {
            String word = state == PressureGroup.SOME ? "some" : "full";
            if (!text.startsWith(word)) continue;
            int[] at = {word.length()};
            long threshold = unsigned(text, at);
            long window = threshold < 0 ? -1 : unsigned(text, at);
            if (window < 0) break;
            if (threshold > 0xffff_ffffL || window > 0xffff_ffffL) {
                throw new ControlException(Errno.EINVAL, "'" + text.strip() + "': a number does not fit the kernel's 32-bit %u");
            }
            if (window < WINDOW_MIN_US || window > WINDOW_MAX_US) {
                throw new ControlException(Errno.EINVAL, "window " + window + " us (expected: " + WINDOW_MIN_US + ".." + WINDOW_MAX_US + ")");
            }
            if (threshold == 0 || threshold > window) {
                throw new ControlException(Errno.EINVAL, "stall " + threshold + " us (expected: 1..window " + window + ")");
            }
            return new Spec(state, threshold, window);
        }
        throw new ControlException(Errno.EINVAL, "'" + text.strip() + "' (expected: some|full <stall us> <window us>)");
    }

    /** vsscanf's {@code %u}: skips whitespace, then at least one digit; -1 when there is none. Saturates instead of wrapping. */
    private static long unsigned(String text, int[] at) {
        int i = at[0];
        while (i < text.length() && isSpace(text.charAt(i))) i++;
        if (i >= text.length() || text.charAt(i) < '0' || text.charAt(i) > '9') return -1;
        long value = 0;
        while (i < text.length() && text.charAt(i) >= '0' && text.charAt(i) <= '9') {
            value = Math.min(value * 10 + (text.charAt(i) - '0'), Long.MAX_VALUE / 10);
            i++;
        }
        at[0] = i;
        return value;
    }

    /** The kernel's isspace: space, \t \n \v \f \r. */
    private static boolean isSpace(char c) {
        return c == ' ' || (c >= '\t' && c <= '\r');
    }

    /** How often the watcher must call {@link #poll}: a tenth of the window (the kernel's poll_min_period). */
    public long pollPeriodNs() {
        return windowNs / UPDATES_PER_WINDOW;
    }

    /** The trigger as written, normalized: {@code some 150000 1000000}. */
    @Override
    public String toString() {
        return spec.toString();
    }

    /** True once the trigger's group has been removed: the watcher ends the watch (the kernel's POLLERR). */
    public boolean groupRemoved() {
        return group.removed();
    }

    /** One poll at {@code nowNs} (the engine clock): true when the trigger fires now. */
    public boolean poll(long nowNs) {
        return tracker.poll(this, nowNs);
    }

    /** Removes the trigger (psi_trigger_destroy). Idempotent. */
    @Override
    public void close() {
        tracker.remove(this);
    }

    /** psi_poll_work and update_triggers for this trigger, with {@code totalNs} the group's stall time now. Tracker lock. */
    boolean update(long nowNs, long totalNs) {
        if (totalNs != lastTotalNs) {
            if (nowNs > pollingUntilNs) {          // entering polling mode: windows start afresh (init_triggers)
                windowReset(nowNs, totalNs, 0);
                lastTotalNs = totalNs;
            }
            pollingUntilNs = nowNs + pollPeriodNs() * UPDATES_PER_WINDOW;
        }
        if (nowNs > pollingUntilNs) return false;
        boolean newStall = totalNs != lastTotalNs;
        if (!newStall && !pendingEvent) return false;
        if (newStall) {
            lastTotalNs = totalNs;
            long growth = windowUpdate(nowNs, totalNs);
            if (!pendingEvent) {
                if (growth < thresholdNs) return false;
                pendingEvent = true;
            }
        }
        if (nowNs < lastEventNs + windowNs) return false;       // at most one event per window
        lastEventNs = nowNs;
        pendingEvent = false;
        return true;
    }

    private void windowReset(long nowNs, long value, long growth) {
        windowStartNs = nowNs;
        windowStartValue = value;
        previousGrowth = growth;
    }

    /** The growth over the last window: what grew since it started, plus the previous window's share of what is left of it. */
    private long windowUpdate(long nowNs, long value) {
        long elapsed = nowNs - windowStartNs;
        long growth = value - windowStartValue;
        if (elapsed > windowNs) {
            windowReset(nowNs, value, growth);
        } else {
            growth += previousGrowth * (windowNs - elapsed) / windowNs;
        }
        return growth;
    }
}
