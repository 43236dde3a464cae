package io.iotarget.iocontrol.policy.latency;

/**
 * The constants of blk-iolatency and of blk-cgroup's issuer delay, with the kernel's values:
 * each has a unit and the reason for it. Changing one changes behaviour the package
 * documentation describes.
 */
final class LatencyTunables {
    private LatencyTunables() {
    }

    static final long NS_PER_US = 1_000;
    static final long NS_PER_MS = 1_000_000;
    static final long NS_PER_SEC = 1_000_000_000;

    /** A parent's scale cookie when none of its children is throttled; far from 0, so steps down never reach it. */
    static final int DEFAULT_SCALE_COOKIE = 1_000_000;
    /** A group's depth when it is not throttled (the kernel's UINT_MAX). */
    static final int UNLIMITED_DEPTH = Integer.MAX_VALUE;

    /** Window bounds, ns: at least enough IOs to judge, at most a second of reaction time. */
    static final long MIN_WINDOW_NS = 100 * NS_PER_MS;
    static final long MAX_WINDOW_NS = NS_PER_SEC;
    /** The window is this many targets long (the kernel's {@code val << 4}). */
    static final int WINDOW_TARGETS_SHIFT = 4;

    /** Least time between two scale events under one parent, ns: lets a change show in the latencies before the next. */
    static final long MIN_ADJUST_NS = 500 * NS_PER_MS;
    /** Good samples a victim needs (across windows) before it may scale its siblings back up. */
    static final int MIN_GOOD_SAMPLES = 5;
    /** A victim's window misses when this share of its IOs or more reach the target (the p90 rule), percent. */
    static final int MISSED_SHARE_PCT = 10;
    /** A group that did this share of its parent's samples or less is not throttled for a miss, percent. */
    static final int FEW_SAMPLES_PCT = 5;

    /** Depth (and cookie) steps: down by qd >> 2, up by qd >> 4, at least 1: scaling down is 4x faster. */
    static final int SCALE_DOWN_SHIFT = 2;
    static final int SCALE_UP_SHIFT = 4;

    /** The periodic timer's period, ns (the kernel's HZ). */
    static final long TIMER_PERIOD_NS = NS_PER_SEC;
    /** The timer forgets a victim that caused no scale event for this long, ns, so siblings recover. */
    static final long VICTIM_TIMEOUT_NS = 5 * NS_PER_SEC;

    /** calc_load's fixed point 1.0 and the EWMA factors for avg_lat, by window size in quarters of a second. */
    static final long FIXED_1 = 2048;
    static final long[] EXP_FACTORS = {2045, 2039, 2031, 2023, 2014};
    static final long EXP_BUCKET_NS = MAX_WINDOW_NS / (EXP_FACTORS.length - 1);

    /** blk-cgroup: the most an issuer is delayed at once while its delay is counted, ns (lets it make progress). */
    static final long MAX_ISSUER_DELAY_NS = 250 * NS_PER_MS;
    /** blk-cgroup: a group's accumulated delay is paid off once per this period, ns. */
    static final long DELAY_DECAY_PERIOD_NS = NS_PER_SEC;
}
