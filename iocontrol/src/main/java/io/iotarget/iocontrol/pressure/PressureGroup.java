package io.iotarget.iocontrol.pressure;

/**
 * One group's io.pressure: how many of its queues (its own and its descendants') are stalled
 * and how many are productive, the time spent in SOME and FULL, and the decaying averages.
 *
 * <p>Threads: every method runs under the {@link Pressure} tracker's lock.
 */
public final class PressureGroup {
    /*
     * Maintainers' notes. The kernel folds per-CPU state times into the averages from a worker
     * that runs every psi_period while the group is busy, and zero-fills the periods it slept
     * through (calc_avgs' missed_periods). Here the state is constant between two changes of
     * this group, so advance() can split the time since the last change at each period
     * boundary exactly and feed every period to the averages as the worker would have: no
     * timer, and a sample can never exceed its period (the kernel's cap is not needed). The
     * worker samples the first quiet period at its end and stops; the next update zero-fills
     * what it slept through with calc_load_n and samples the current period — the same
     * roundings as the kernel's (PressureTest computes them from psi.c). Where the kernel
     * differs: it restarts its worker PSI_FREQ after the next event, off these boundaries, and
     * counts running tasks as activity that keeps the worker going (here only stalls do).
     */

    /** The kernel's averaging period: PSI_FREQ = 2*HZ+1 jiffies, 2.004 s at HZ=250 (Debian's build). */
    static final long PERIOD_NS = 2_004_000_000L;
    /** Fixed point of the averages, as loadavg: 11 fractional bits. */
    static final int FSHIFT = 11;
    static final long FIXED_1 = 1L << FSHIFT;
    /** 1/exp(2s/10s), 1/exp(2s/60s), 1/exp(2s/300s) in FIXED_1 units (EXP_10s, EXP_60s, EXP_300s). */
    static final long[] EXP = {1677, 1981, 2034};

    static final int SOME = 0;
    static final int FULL = 1;

    private final PressureGroup parent;
    /** Set once its group is removed: triggers on it end, as the kernel's do with POLLERR. Any thread. */
    private volatile boolean removed;

    /** Queues of this subtree that have a command held by a policy, or owe an issuer delay. */
    int stalled;
    /** Queues of this subtree with commands outstanding and none held (counted only while the tracker is armed). */
    int productive;

    /** False until the first event reaches this group: its clock starts there. */
    private boolean started;
    private boolean some;
    private boolean full;
    /** When the current state began (or was last accrued). */
    private long stateStartNs;
    /** SOME and FULL time up to {@link #stateStartNs}, ns. */
    private final long[] totalNs = new long[2];
    /** The totals at the last period boundary. */
    private final long[] totalAtBoundaryNs = new long[2];
    private long nextBoundaryNs;
    /** The kernel's averages worker would have stopped: the last period sampled was quiet. */
    private boolean workerAsleep;
    /** avg10, avg60, avg300 of SOME and FULL: percent in FIXED_1 units. */
    private final long[][] avg = new long[2][3];

    /** @param parent the parent group's, null for the root */
    public PressureGroup(PressureGroup parent) {
        this.parent = parent;
    }

    PressureGroup parent() {
        return parent;
    }

    /** Brings the times and averages up to {@code nowNs} under the current state. */
    void advance(long nowNs) {
        if (!started) {
            started = true;
            stateStartNs = nowNs;
            nextBoundaryNs = nowNs + PERIOD_NS;
            return;
        }
        while (nextBoundaryNs <= nowNs) {
            accrue(nextBoundaryNs);
            boolean quiet = !some && totalNs[SOME] == totalAtBoundaryNs[SOME];
            if (quiet && workerAsleep) {
                // The kernel's first update after its worker stopped (a read, here also an event):
                // calc_avgs zero-fills the whole periods it slept through (calc_load_n over
                // missed_periods) and samples the current one, empty as well.
                long missed = (nowNs - nextBoundaryNs) / PERIOD_NS;
                for (int s = SOME; s <= FULL; s++) {
                    for (int w = 0; w < 3; w++) {
                        if (missed > 0) avg[s][w] = calcLoad(avg[s][w], fixedPower(EXP[w], missed), 0);
                        avg[s][w] = calcLoad(avg[s][w], EXP[w], 0);
                    }
                }
                nextBoundaryNs += (missed + 1) * PERIOD_NS;
                break;
            }
            workerAsleep = quiet;               // the worker samples a quiet period at its end, then stops
            for (int s = SOME; s <= FULL; s++) {
                long sample = totalNs[s] - totalAtBoundaryNs[s];
                totalAtBoundaryNs[s] = totalNs[s];
                long pct = sample * 100 / PERIOD_NS * FIXED_1;
                for (int w = 0; w < 3; w++) avg[s][w] = calcLoad(avg[s][w], EXP[w], pct);
            }
            nextBoundaryNs += PERIOD_NS;
        }
        accrue(nowNs);
    }

    private void accrue(long nowNs) {
        long delta = nowNs - stateStartNs;
        if (some) totalNs[SOME] += delta;
        if (full) totalNs[FULL] += delta;
        stateStartNs = nowNs;
    }

    /** Recomputes SOME and FULL from the counts; call after {@link #advance} to the time of the change. */
    void updateState() {
        some = stalled > 0;
        full = some && productive == 0;
    }

    /** SOME or FULL time so far, ns (call {@link #advance} first). */
    long totalNs(int state) {
        return totalNs[state];
    }

    /** The kernel's text: {@code some avg10=0.00 avg60=0.00 avg300=0.00 total=0} and the {@code full} line (call {@link #advance} first). */
    String format() {
        StringBuilder sb = new StringBuilder(128);
        for (int s = SOME; s <= FULL; s++) {
            sb.append(s == SOME ? "some" : "full");
            appendAvg(sb, " avg10=", avg[s][0]);
            appendAvg(sb, " avg60=", avg[s][1]);
            appendAvg(sb, " avg300=", avg[s][2]);
            sb.append(" total=").append(totalNs[s] / 1000).append('\n');
        }
        return sb.toString();
    }

    /** LOAD_INT and LOAD_FRAC: {@code %lu.%02lu}. */
    private static void appendAvg(StringBuilder sb, String label, long value) {
        long frac = ((value & (FIXED_1 - 1)) * 100) >> FSHIFT;
        sb.append(label).append(value >> FSHIFT).append('.').append(frac < 10 ? "0" : "").append(frac);
    }

    /** loadavg's calc_load: one step of the exponential decay towards {@code active}, rounding up while rising. */
    static long calcLoad(long load, long exp, long active) {
        long next = load * exp + active * (FIXED_1 - exp);
        if (active >= load) next += FIXED_1 - 1;
        return next / FIXED_1;
    }

    /** loadavg's fixed_power_int: {@code x^n} in FIXED_1 units, rounding each product (calc_load_n's factor). */
    static long fixedPower(long x, long n) {
        long result = FIXED_1;
        while (n != 0) {
            if ((n & 1) != 0) result = (result * x + (FIXED_1 >> 1)) >> FSHIFT;
            n >>= 1;
            if (n == 0) break;
            x = (x * x + (FIXED_1 >> 1)) >> FSHIFT;
        }
        return result;
    }

    /** Its group is gone (rmdir): every trigger on it ends at its next poll. Tree lock. */
    public void markRemoved() {
        removed = true;
    }

    boolean removed() {
        return removed;
    }
}
