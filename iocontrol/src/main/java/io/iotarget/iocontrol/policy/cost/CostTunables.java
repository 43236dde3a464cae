package io.iotarget.iocontrol.policy.cost;

/**
 * The constants of blk-iocost, with the kernel's values: each has a unit and the reason for
 * it. Changing one changes behaviour the package documentation describes.
 */
final class CostTunables {
    private CostTunables() {
    }

    static final long MILLION = 1_000_000;
    static final long NS_PER_US = 1_000;

    /** Vtime units in one second of device time (2^37): sub-ns resolution, years before wrapping at 100%. */
    static final long VTIME_PER_SEC = 1L << 37;
    /** Vtime per µs; a vrate of this value is 100% (the device runs exactly as fast as the model says). */
    static final long VTIME_PER_USEC = VTIME_PER_SEC / MILLION;
    /** Vtime per ns, for converting a size cost into an expected transfer time. */
    static final long VTIME_PER_NSEC = VTIME_PER_SEC / 1_000_000_000L;

    /** 1.0 for weights and hweights (1/65536 steps: fine enough, and products fit in 64 bits). */
    static final long WEIGHT_ONE = 1L << 16;
    /** io.weight range and default (CGROUP_WEIGHT_MIN/DFL/MAX). */
    static final int WEIGHT_MIN = 1;
    static final int WEIGHT_DEFAULT = 100;
    static final int WEIGHT_MAX = 10_000;

    /** Period bounds, µs: long enough to hold a useful number of IOs, short enough to react. */
    static final long MIN_PERIOD_US = 1_000;
    static final long MAX_PERIOD_US = 1_000_000;

    /** Budget (% of a period's vtime) below which donating is cancelled. */
    static final long MARGIN_MIN_PCT = 10;
    /** Budget above which a group counts as having surplus; in-period inuse raises only happen below it. */
    static final long MARGIN_LOW_PCT = 20;
    /** Budget a group starts with on activation; anything above it is thrown away at period ends. */
    static final long MARGIN_TARGET_PCT = 50;
    /** Step, % of the active weight, by which a donor takes weight back within a period. */
    static final long INUSE_ADJ_STEP_PCT = 25;
    /** Slack of the per-group wait timer, % of the period: wake-ups closer than this are merged. */
    static final long TIMER_SLACK_PCT = 1;

    /** vrate bounds in ppm of 100% (1% .. 10000%): io.cost.qos min/max are clamped to them. */
    static final long VRATE_MIN_PPM = 10_000;
    static final long VRATE_MAX_PPM = 100_000_000;
    /** Step, %, by which a vrate outside [min, max] walks back in per period: bounds may change abruptly. */
    static final long VRATE_CLAMP_ADJ_PCT = 4;

    /** Requests waiting for a queue slot longer than this % of the period mean the device is saturated. */
    static final long RQ_WAIT_BUSY_PCT = 5;
    /** Below this % of the busy thresholds the device is clearly not saturated (hysteresis). */
    static final long UNBUSY_THR_PCT = 75;

    /** Debt overage (% of a period's vtime) that starts a delay, and the one that gives the maximum. */
    static final long MIN_DELAY_THR_PCT = 500;
    static final long MAX_DELAY_THR_PCT = 25_000;
    /** Issuer delay range, µs: shorter delays are not worth it, longer ones starve the issuer. */
    static final long MIN_DELAY_US = 250;
    static final long MAX_DELAY_US = 250_000;

    /** Debts are halved each DFGV_PERIOD_US while the device's average usage stays under this %. */
    static final long DFGV_USAGE_PCT = 50;
    static final long DFGV_PERIOD_US = 100_000;

    /** IOs in flight longer than this many periods no longer hold vrate back ("lagging"). */
    static final long MAX_LAGGING_PERIODS = 10;

    /** A built-in parameter set switches only after its condition held this long (ns). */
    static final long AUTOP_CYCLE_NS = 10_000_000_000L;

    /** Sizes are costed in 4 KiB pages. */
    static final int PAGE_SHIFT = 12;
    static final long PAGE_SIZE = 1L << PAGE_SHIFT;
    /** An IO starting further than this many pages (16 MiB) from the group's last one is random. */
    static final long RANDIO_PAGES = 4096;

    /** busy_level bound, both signs. */
    static final int BUSY_LEVEL_MAX = 1000;

    /** vrate step (%) per period, indexed by |busy_level| (the last entry beyond the end). */
    private static final int[] VRATE_ADJ_PCT = {
            0, 0, 0, 0,
            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
            2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,
            4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 8, 8, 8, 8, 8, 16};

    static long vrateAdjustPct(int busyLevel) {
        return VRATE_ADJ_PCT[Math.min(Math.abs(busyLevel), VRATE_ADJ_PCT.length - 1)];
    }
}
