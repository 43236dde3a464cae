package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.policy.MulDiv;
import io.iotarget.iocontrol.policy.Resumer;
import io.iotarget.model.Counters;

import java.util.ArrayList;

import static io.iotarget.iocontrol.policy.cost.CostDevice.after;
import static io.iotarget.iocontrol.policy.cost.CostDevice.before;
import static io.iotarget.iocontrol.policy.cost.CostDevice.costToAbsCost;
import static io.iotarget.iocontrol.policy.cost.CostGroup.INDEBT;
import static io.iotarget.iocontrol.policy.cost.CostGroup.INDELAY;
import static io.iotarget.iocontrol.policy.cost.CostGroup.NOT_SET;
import static io.iotarget.iocontrol.policy.cost.CostGroup.USAGE;
import static io.iotarget.iocontrol.policy.cost.CostGroup.WAIT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.BUSY_LEVEL_MAX;
import static io.iotarget.iocontrol.policy.cost.CostTunables.DFGV_PERIOD_US;
import static io.iotarget.iocontrol.policy.cost.CostTunables.DFGV_USAGE_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MAX_LAGGING_PERIODS;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MILLION;
import static io.iotarget.iocontrol.policy.cost.CostTunables.NS_PER_US;
import static io.iotarget.iocontrol.policy.cost.CostTunables.RQ_WAIT_BUSY_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.UNBUSY_THR_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.VRATE_CLAMP_ADJ_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.WEIGHT_ONE;

/**
 * iocost's QoS period loop on one device, the kernel's {@code ioc_timer_fn}: at each period
 * end it reads the latency samples and the queue waits of the period, kicks or deactivates
 * the groups, finds donors and shortages, decides whether the device is saturated (the busy
 * level), moves vrate, and forgives debts on an idle device — the seven steps of the package
 * documentation's section 6, in that order.
 *
 * <p>It keeps what only the loop needs (the period's samples, the busy level, debt forgiveness)
 * and works on its {@link CostDevice}'s clock and groups. Its decisions — missed ppm, rq_wait,
 * the busy level, the next vrate, a group's usage — are static functions of numbers, so they
 * can be checked against the package documentation's on their own.
 *
 * <p>Threads: the device's lock, as every {@link CostDevice} method. No clock: the period end
 * comes in as a {@link DeviceNow}.
 */
final class PeriodLoop {
    private final CostDevice device;

    /** Saturation, from -BUSY_LEVEL_MAX (vrate may rise) to +BUSY_LEVEL_MAX (it must fall); 0 holds it. Volatile for the busy_level gauge. */
    private volatile int busyLevel;

    // ---- QoS samples since the period started (ioc_pcpu_stat, folded into one)
    private final long[] nrMet = new long[2];
    private final long[] nrMissed = new long[2];
    private long rqWaitNs;

    // ---- debt forgiveness
    private long dfgvPeriodAtUs;
    private long dfgvPeriodRemUs;
    private long dfgvUsageUsSum;

    // ---- scratch, reused to keep the timer allocation-free
    private final long[] missedPpm = new long[2];
    private final long[] thresholdPpm = new long[2];
    private final ArrayList<CostGroup> surpluses = new ArrayList<>();
    private final ArrayList<CostGroup> innerWalk = new ArrayList<>();

    PeriodLoop(CostDevice device) {
        this.device = device;
    }

    int busyLevel() {
        return busyLevel;
    }

    /** The device clock starts running (a first group activated): debt forgiveness starts counting now. */
    void started(long nowUs) {
        dfgvPeriodAtUs = nowUs;
        dfgvPeriodRemUs = 0;
    }

    /** One completion of a costed read or write: within its latency target or not, and how long it waited for a queue slot. */
    void sample(int dir, boolean met, long rqWaitNs) {
        if (met) nrMet[dir]++;
        else nrMissed[dir]++;
        this.rqWaitNs += rqWaitNs;
    }

    // ================================================================ the decisions, on numbers alone

    /** Of {@code met + missed} samples, the missed ones in ppm, rounded up; 0 without samples. */
    static long missedPpm(long met, long missed) {
        long total = met + missed;
        return total != 0 ? Math.ceilDiv(missed * MILLION, total) : 0;
    }

    /** The time requests waited for a queue slot as % of the period (rounded down). */
    static long rqWaitPct(long rqWaitNs, long periodUs) {
        return MulDiv.floor(rqWaitNs, 100, periodUs * NS_PER_US);
    }

    /**
     * Step 4's busy level: up by one (from at least 0) when rq_wait is over
     * {@value CostTunables#RQ_WAIT_BUSY_PCT}% or either direction missed more than its
     * threshold; clearly below ({@value CostTunables#UNBUSY_THR_PCT}% of every threshold) it
     * goes down by one (from at most 0) while some group is short of budget and none lags, and
     * to 0 when nobody is short (nothing learned); in between it is 0. Clamped to
     * ±{@value CostTunables#BUSY_LEVEL_MAX}.
     *
     * @param thresholdPpm per direction, 10^6 − rpct (wpct) in ppm: the misses allowed
     */
    static int nextBusyLevel(int busyLevel, long rqWaitPct, long[] missedPpm, long[] thresholdPpm, int nrShortages, int nrLagging) {
        int rd = LinearModel.READ;
        int wr = LinearModel.WRITE;
        int level;
        if (rqWaitBusy(rqWaitPct) || latencyBusy(missedPpm, thresholdPpm, rd) || latencyBusy(missedPpm, thresholdPpm, wr)) {
            level = Math.max(busyLevel, 0) + 1;
        } else if (rqWaitPct <= RQ_WAIT_BUSY_PCT * UNBUSY_THR_PCT / 100
                   && missedPpm[rd] <= thresholdPpm[rd] * UNBUSY_THR_PCT / 100
                   && missedPpm[wr] <= thresholdPpm[wr] * UNBUSY_THR_PCT / 100) {
            if (nrShortages > 0) {
                level = Math.min(busyLevel, 0);
                if (nrLagging == 0) level--;
            } else {
                level = 0;      // nobody throttled, nothing learned: coast
            }
        } else {
            level = 0;          // inside the hysteresis band
        }
        return Math.clamp(level, -BUSY_LEVEL_MAX, BUSY_LEVEL_MAX);
    }

    /** Step 4's busy signal from queue slots: requests waited for one over {@value CostTunables#RQ_WAIT_BUSY_PCT}% of the period. */
    static boolean rqWaitBusy(long rqWaitPct) {
        return rqWaitPct > RQ_WAIT_BUSY_PCT;
    }

    /** Step 4's busy signal from latency: more requests of direction {@code dir} missed their target than allowed. */
    static boolean latencyBusy(long[] missedPpm, long[] thresholdPpm, int dir) {
        return missedPpm[dir] > thresholdPpm[dir];
    }

    /**
     * ioc_adjust_base_vrate, step 5: the base vrate after a period at {@code busyLevel}. Held at
     * level 0, and while lagging IO holds a negative level back; outside [min, max] it walks
     * back {@value CostTunables#VRATE_CLAMP_ADJ_PCT}% per period; inside, it moves by
     * {@code vrate_adj_pct[|busyLevel|]} (down when busy, up when not), rounded up, within
     * [min, max].
     */
    static long nextBaseVrate(long vrate, long vrateMin, long vrateMax, int busyLevel, int nrLagging) {
        if (busyLevel == 0 || (busyLevel < 0 && nrLagging > 0)) return vrate;
        if (vrate < vrateMin) return Math.min(vrate * (100 + VRATE_CLAMP_ADJ_PCT) / 100, vrateMin);
        if (vrate > vrateMax) return Math.max(vrate * (100 - VRATE_CLAMP_ADJ_PCT) / 100, vrateMax);
        long adjPct = CostTunables.vrateAdjustPct(busyLevel);
        adjPct = busyLevel > 0 ? 100 - adjPct : 100 + adjPct;
        return Math.clamp(Math.ceilDiv(vrate * adjPct, 100), vrateMin, vrateMax);
    }

    /** A group's usage of the device over {@code durationUs}, × WEIGHT_ONE, rounded up, in [1, WEIGHT_ONE]. */
    static long usage(long usageUs, long durationUs) {
        return Math.clamp(MulDiv.ceil(usageUs, WEIGHT_ONE, durationUs), 1, WEIGHT_ONE);
    }

    // ================================================================ the period end

    /** ioc_timer_fn: the end of a period. The steps are numbered as in the package documentation. */
    void run(Resumer resumer, DeviceNow now) {
        CostDevice d = device;
        QosParams qos = d.config().qos();
        thresholdPpm[LinearModel.READ] = MILLION - qos.readPpm();
        thresholdPpm[LinearModel.WRITE] = MILLION - qos.writePpm();
        boolean latencyTargets = thresholdPpm[LinearModel.READ] != MILLION || thresholdPpm[LinearModel.WRITE] != MILLION;
        long vnow = now.vnow();
        // 1. How were the latencies, and how long did requests wait for a queue slot?
        long rqWaitPct = latencyStats(d.periodUs());
        long periodVtime = vnow - d.periodAtVtime;
        // 2. Wake waiters that may be oversleeping, deactivate idle groups.
        int nrDebtors = checkGroups(resumer, now);
        flushStats();
        // 3. Usage, surpluses and shortages.
        int nrShortages = 0;
        int nrLagging = 0;
        long usageUsSum = 0;
        for (CostGroup g : d.activeGroups) {
            long vdone = g.doneVtime;
            long vtime = g.vtime;
            d.weights.currentHweight(g);
            long hwActive = g.hweightActive;
            long hwInuse = g.hweightInuse;
            // IOs in flight for more than a period are not seen by the latency samples: while
            // some are, do not push the device harder.
            if (latencyTargets && g.issuerDelayUs == 0
                && after(vtime, vdone) && after(vtime, vnow - MAX_LAGGING_PERIODS * periodVtime)
                && before(vdone, vnow - periodVtime)) {
                nrLagging++;
            }
            long usageUs = g.usageDeltaUs - g.reservedDeltaUs;     // the weights share what minimums leave
            usageUsSum += g.usageDeltaUs;
            if (hwInuse < hwActive || (g.waiters.isEmpty() && before(vtime, vnow - d.marginLow))) {
                if (vdone != vtime) {
                    long inflightUs = Math.ceilDiv(costToAbsCost(vtime - vdone, hwInuse), d.vtimeBaseRate);
                    usageUs = Math.max(usageUs, inflightUs);
                }
                long usageDurUs = after(g.activatedAtUs, d.periodAtUs) ? Math.max(now.nowUs() - g.activatedAtUs, 1) : Math.max(now.nowUs() - d.periodAtUs, 1);
                long hwm = d.weights.currentHweightMax(g);
                long newHwi = hweightAfterDonation(g, hwInuse, hwm, usage(usageUs, usageDurUs), now);
                // Donating needs hweight_after_donation ≥ 1 below hwa, which hwa < 2 cannot give.
                if (newHwi < hwm && hwActive >= 2) {
                    g.hweightDonating = hwActive;
                    g.hweightAfterDonation = newHwi;
                    surpluses.add(g);
                } else {
                    d.propagateWeights(g, g.active, g.active, now);
                    nrShortages++;
                }
            } else {
                nrShortages++;
            }
        }
        // Donors give their surplus to the groups short of budget; a debtor's inuse stays at 1,
        // which debt handling owns.
        if (!surpluses.isEmpty() && nrShortages > 0) {
            d.weights.transferSurpluses(surpluses);
            for (CostGroup g : surpluses) {
                if (g.absVdebt == 0) d.propagateWeights(g, g.active, d.weights.inuseAfterDonation(g), now);
            }
        }
        d.weights.commit();
        surpluses.clear();
        for (CostGroup g : d.activeGroups) g.publishHweights(d.weights);     // iotarget.io.stat's shares, as the period leaves them
        d.minimums.periodEnd(d.currentPeriod(), d.periodUs());
        // 4. Is the device saturated? Missing targets slows vrate; throttling an idle device speeds it up.
        busyLevel = nextBusyLevel(busyLevel, rqWaitPct, missedPpm, thresholdPpm, nrShortages, nrLagging);
        // 5. Move vrate. 6. Maybe switch built-in sets, forgive debts on an idle device.
        long vrate = d.vtimeBaseRate;
        d.setBaseVrate(nextBaseVrate(vrate, d.vrateMin, d.vrateMax, busyLevel, nrLagging));
        count(rqWaitPct, nrLagging, Long.compare(d.vtimeBaseRate, vrate));
        d.refreshParams(false, now.nowNs());
        forgiveDebts(usageUsSum, nrDebtors, resumer, now);
        // 7. Next period, or idle when no group is active.
        if (!d.nextPeriod(now)) busyLevel = 0;
    }

    /** The period in the device's counters: which busy signals it gave, whether IO lagged, which way vrate went ({@code moved} -1, 0, 1). */
    private void count(long rqWaitPct, int nrLagging, int moved) {
        Counters<CostCounter> c = device.counters();
        c.increment(CostCounter.PERIODS);
        if (rqWaitBusy(rqWaitPct)) c.increment(CostCounter.RQ_WAIT_BUSY_PERIODS);
        if (latencyBusy(missedPpm, thresholdPpm, LinearModel.READ)) c.increment(CostCounter.READ_LATENCY_BUSY_PERIODS);
        if (latencyBusy(missedPpm, thresholdPpm, LinearModel.WRITE)) c.increment(CostCounter.WRITE_LATENCY_BUSY_PERIODS);
        if (nrLagging > 0) c.increment(CostCounter.LAGGING_PERIODS);
        if (moved < 0) c.increment(CostCounter.VRATE_LOWERED_PERIODS);
        if (moved > 0) c.increment(CostCounter.VRATE_RAISED_PERIODS);
    }

    /** ioc_lat_stat: fills missedPpm per direction and returns rq_wait as % of the period; resets the samples. */
    private long latencyStats(long periodUs) {
        for (int dir = LinearModel.READ; dir <= LinearModel.WRITE; dir++) {
            missedPpm[dir] = missedPpm(nrMet[dir], nrMissed[dir]);
            nrMet[dir] = 0;
            nrMissed[dir] = 0;
        }
        long pct = rqWaitPct(rqWaitNs, periodUs);
        rqWaitNs = 0;
        return pct;
    }

    /**
     * ioc_check_iocgs: folds the running wait/debt/delay times into the statistics, kicks
     * groups with waiters or debt (vrate may have risen since their timer was set), and
     * deactivates idle groups, throwing their budget above the target away.
     *
     * @return the number of groups in debt or delay
     */
    private int checkGroups(Resumer resumer, DeviceNow now) {
        CostDevice d = device;
        long nowUs = now.nowUs();
        int nrDebtors = 0;
        for (int i = 0; i < d.activeGroups.size(); ) {
            CostGroup g = d.activeGroups.get(i);
            if (g.waiters.isEmpty() && g.absVdebt == 0 && g.delayUs == 0 && !d.isIdle(g)) {
                i++;
                continue;
            }
            if (g.waitSinceUs != NOT_SET) {
                g.localStat[WAIT] += nowUs - g.waitSinceUs;
                g.waitSinceUs = nowUs;
            }
            if (g.indebtSinceUs != NOT_SET) {
                g.localStat[INDEBT] += nowUs - g.indebtSinceUs;
                g.indebtSinceUs = nowUs;
            }
            if (g.indelaySinceUs != NOT_SET) {
                g.localStat[INDELAY] += nowUs - g.indelaySinceUs;
                g.indelaySinceUs = nowUs;
            }
            if (!g.waiters.isEmpty() || g.absVdebt != 0 || g.delayUs != 0) {
                d.kickWaitq(g, true, resumer, null, now);
                if (g.absVdebt != 0 || g.delayUs != 0) nrDebtors++;
                i++;
            } else {
                // Idle a whole period: the budget above the target is thrown away (and given
                // back through vtimeErr); it starts with the target when it comes back.
                long excess = now.vnow() - g.vtime - d.marginTarget;
                if (excess > 0) {
                    d.weights.currentHweight(g);
                    d.vtimeErr -= MulDiv.floor(excess, g.hweightInuse, WEIGHT_ONE);
                }
                d.deactivate(g);
            }
        }
        d.weights.commit();
        return nrDebtors;
    }

    /** iocg_flush_stat: usage of the active groups, then of their ancestors bottom-up. */
    private void flushStats() {
        for (CostGroup g : device.activeGroups) {
            flushStat(g);
            g.buildInnerWalk(innerWalk);
        }
        for (int i = innerWalk.size() - 1; i >= 0; i--) {
            CostGroup inner = innerWalk.get(i);
            flushStat(inner);
            inner.onWalk = false;
        }
        innerWalk.clear();
    }

    /** iocg_flush_stat_one: this period's usage, and the deltas of the hierarchical stats to the parent. */
    private void flushStat(CostGroup g) {
        long vusageDelta = g.absVusage - g.lastStatAbsVusage;
        g.lastStatAbsVusage = g.absVusage;
        g.usageDeltaUs = vusageDelta / device.vtimeBaseRate;
        g.reservedDeltaUs = (g.absVreserved - g.lastStatAbsVreserved) / device.vtimeBaseRate;
        g.lastStatAbsVreserved = g.absVreserved;
        g.localStat[USAGE] += g.usageDeltaUs;
        CostGroup parent = g.parent();
        for (int k = USAGE; k <= INDELAY; k++) {
            long total = g.localStat[k] + g.descendantStat[k];
            if (parent != null) parent.descendantStat[k] += total - g.lastStat[k];
            g.lastStat[k] = total;
        }
        g.publishStats();
    }

    /**
     * hweight_after_donation: the hweight_inuse that, spending {@code usage} next period, leaves
     * the group again with the target budget ({@link HierarchicalWeights#hweightAfterDonation});
     * {@code hwm} means "no donation": for a group with waiters or below margin.min. A debtor
     * gets 1 (it donates everything). Budget above the target is thrown away here (and given
     * back to the device through vtimeErr).
     */
    private long hweightAfterDonation(CostGroup g, long oldHwi, long hwm, long usage, DeviceNow now) {
        CostDevice d = device;
        if (g.absVdebt != 0) return 1;
        long vnow = now.vnow();
        if (!g.waiters.isEmpty() || after(g.vtime, vnow - d.marginMin)) return hwm;
        long excess = vnow - g.vtime - d.marginTarget;
        if (excess > 0) {
            g.vtime += excess;
            g.doneVtime += excess;
            d.vtimeErr -= MulDiv.floor(excess, oldHwi, WEIGHT_ONE);
        }
        return HierarchicalWeights.hweightAfterDonation(usage, vnow - g.vtime, vnow - d.periodAtVtime, hwm);
    }

    /**
     * ioc_forgive_debts: when the device has been at most half used for DFGV_PERIOD_US, halve
     * every debt and delay once per DFGV_PERIOD_US elapsed, so a debtor is not left paying on
     * an idle device.
     */
    private void forgiveDebts(long usageUsSum, int nrDebtors, Resumer resumer, DeviceNow now) {
        long nowUs = now.nowUs();
        if (nrDebtors == 0) {
            dfgvPeriodAtUs = nowUs;
            dfgvPeriodRemUs = 0;
            dfgvUsageUsSum = 0;
            return;
        }
        if (busyLevel > 0) usageUsSum = Math.max(usageUsSum, device.periodUs());
        dfgvUsageUsSum += usageUsSum;
        if (before(nowUs, dfgvPeriodAtUs + DFGV_PERIOD_US)) return;
        long durUs = nowUs - dfgvPeriodAtUs;
        long usagePct = dfgvUsageUsSum * 100 / durUs;
        dfgvPeriodAtUs = nowUs;
        dfgvUsageUsSum = 0;
        if (usagePct > DFGV_USAGE_PCT) {
            dfgvPeriodRemUs = 0;
            return;
        }
        long cycles = (durUs + dfgvPeriodRemUs) / DFGV_PERIOD_US;
        dfgvPeriodRemUs = (durUs + dfgvPeriodRemUs) % DFGV_PERIOD_US;
        for (CostGroup g : device.activeGroups) {
            if (g.absVdebt == 0 && g.delayUs == 0) continue;
            if (g.absVdebt != 0) g.absVdebt = Math.max(Debts.shiftRight(g.absVdebt, cycles), 1);
            if (g.delayUs != 0) g.delayUs = Math.max(Debts.shiftRight(g.delayUs, cycles), 1);
            device.kickWaitq(g, true, resumer, null, now);
        }
    }
}
