package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.policy.MulDiv;
import io.iotarget.model.IoRequest;

import java.util.ArrayList;
import java.util.Arrays;

import static io.iotarget.iocontrol.policy.cost.CostTunables.MILLION;
import static io.iotarget.iocontrol.policy.cost.CostTunables.NS_PER_US;

/**
 * io.min on one device (package documentation, section 12): dmClock's reservation tags, with
 * iocost's device clock as the capacity. A request whose group (or an ancestor) has a minimum
 * for its direction, and whose every such group's tag has come, goes at once and does not
 * advance its group's vtime; its absolute cost is taken off the device clock instead, so the
 * weights share what the minimums leave. When the minimums in use claim more than the device,
 * every tag runs slower by the same factor, {@link #scalePpm}.
 *
 * <p>Threads: the device's lock, as every {@link CostDevice} method, except
 * {@link #grantedPpm}, which any thread reads.
 */
final class Minimums {
    private static final long NS_PER_SEC = 1_000_000_000L;

    private final CostDevice device;
    /** Groups whose minimum counts against the device: a minimum, no ancestor with one, IO on it this period or the last. */
    private final ArrayList<CostGroup> reservers = new ArrayList<>();
    /** Groups on this device with some minimum set; 0 makes every check free. */
    private int groupsWithMinimum;
    /** max(10^6, the reservers' claims in ppm): every reservation interval is stretched by scalePpm / 10^6. */
    private long scalePpm = MILLION;
    /** The fraction of its minimum every group gets, ppm: 10^6 unless the minimums in use claim more than the device. */
    private volatile long grantedPpm = MILLION;

    Minimums(CostDevice device) {
        this.device = device;
    }

    /** io.min changed for {@code g}: {@code had} says whether it had a minimum before. */
    void updated(CostGroup g, boolean had) {
        boolean has = g.hasMinimum(LinearModel.READ) || g.hasMinimum(LinearModel.WRITE);
        groupsWithMinimum += (has ? 1 : 0) - (had ? 1 : 0);
        for (int dir = LinearModel.READ; dir <= LinearModel.WRITE; dir++) {
            if (!g.hasMinimum(dir)) g.minClaimPpm[dir] = 0;
        }
        if (!has && g.onReserverList) leave(g);
    }

    /** The group was removed: its minimum goes with it. */
    void remove(CostGroup g) {
        boolean had = g.hasMinimum(LinearModel.READ) || g.hasMinimum(LinearModel.WRITE);
        Arrays.fill(g.minimum, 0);
        updated(g, had);
    }

    /** The fraction of its minimum each group gets now, ppm (10^6 = all of it). Any thread. */
    long grantedPpm() {
        return grantedPpm;
    }

    /** The interval a request of {@code length} bytes takes on {@code g}'s minimum for {@code dir}, ns, unscaled: the shorter of riops' and rbps' (either minimum is met). */
    static long baseIntervalNs(CostGroup g, int dir, long length) {
        long iops = g.minimum[2 + dir];
        long bps = g.minimum[dir];
        long interval = iops != 0 ? Math.ceilDiv(NS_PER_SEC, iops) : Long.MAX_VALUE;
        if (bps != 0) interval = Math.min(interval, MulDiv.ceil(Math.max(length, 1), NS_PER_SEC, bps));
        return Math.max(interval, 1);
    }

    /** May {@code io} go on a minimum now ({@link #readyNs}). */
    boolean ready(CostGroup g, IoRequest io, long nowNs) {
        return readyNs(g, io) <= nowNs;
    }

    /**
     * When {@code io} may go on a minimum (engine ns): when every group from {@code g} up with a
     * minimum for its direction has its tag come; {@link Long#MAX_VALUE} when none has one. A
     * group's own minimum comes before its ancestors' cover of groups without one: below a
     * group with a minimum of its own, an ancestor's tag may run up to one interval and a timer
     * slack ahead, so a child with {@code riops=4000} under a parent's 5000 gets its 4000 and
     * a sibling without one the other 1000, whoever asks first.
     */
    long readyNs(CostGroup g, IoRequest io) {
        if (groupsWithMinimum == 0) return Long.MAX_VALUE;
        int dir = LinearModel.direction(io.op());
        long ready = Long.MAX_VALUE;
        boolean ownBelow = false;
        for (int level = g.level; level >= 1; level--) {
            CostGroup a = g.ancestors[level];
            if (!a.hasMinimum(dir)) continue;
            long lead = ownBelow ? device.timerSlackNs() + intervalNs(a, dir, io.length()) : 0;
            ready = ready == Long.MAX_VALUE ? a.minTagNs[dir] - lead : Math.max(ready, a.minTagNs[dir] - lead);
            ownBelow = true;
        }
        return ready;
    }

    /** The interval of a request on {@code a}'s minimum now: the base interval stretched by the scale. */
    private long intervalNs(CostGroup a, int dir, long length) {
        return MulDiv.ceil(baseIntervalNs(a, dir, length), scalePpm, MILLION);
    }

    /**
     * The request goes on the minimums: each group on its way with a minimum moves its tag on by
     * the request's interval (stretched by the scale), from at most a timer slack ago, so a
     * request released a little late loses nothing and an idle group banks nothing more; its
     * absolute cost is taken off the device clock.
     *
     * @param waited the request had waited for a tag
     */
    void commit(CostGroup g, IoRequest io, long absCost, boolean waited, DeviceNow now) {
        int dir = LinearModel.direction(io.op());
        long graceNs = device.timerSlackNs();
        long period = device.currentPeriod();
        long devNs = MulDiv.ceil(absCost, NS_PER_US, device.vtimeBaseRate);
        CostGroup top = null;
        for (int level = 1; level <= g.level; level++) {
            CostGroup a = g.ancestors[level];
            a.minIos = a.minIos + 1;
            if (!a.hasMinimum(dir)) continue;
            if (top == null) top = a;
            long base = baseIntervalNs(a, dir, io.length());
            a.minTagNs[dir] = Math.max(a.minTagNs[dir], now.nowNs() - graceNs) + intervalNs(a, dir, io.length());
            a.minClaimPpm[dir] = MulDiv.ceil(devNs, MILLION, base);
            a.minPeriod[dir] = period;
            a.minPeriodAbs += absCost;
            a.minWaited |= waited;
        }
        io.policyCost(0);
        g.absVusage = CostDevice.saturatedAdd(g.absVusage, absCost);
        g.absVreserved = CostDevice.saturatedAdd(g.absVreserved, absCost);
        device.takeFromClock(absCost, now);
        if (top != null && !top.onReserverList) {
            top.onReserverList = true;
            reservers.add(top);
            rescale();
        }
    }

    /**
     * A period ends: a reserver that asked for all of its minimum (some request waited for its
     * tag) claims it whole; one that asked for less claims what it used, so the others are not
     * scaled down for a minimum nobody uses. Reservers without IO this period leave.
     */
    void periodEnd(long period, long periodUs) {
        for (int i = reservers.size() - 1; i >= 0; i--) {
            CostGroup g = reservers.get(i);
            boolean used = false;
            for (int dir = LinearModel.READ; dir <= LinearModel.WRITE; dir++) {
                if (g.minPeriod[dir] == period) used = true;
                else g.minClaimPpm[dir] = 0;
            }
            if (!used) {
                leave(g);
                continue;
            }
            if (!g.minWaited) {
                long usedPpm = MulDiv.ceil(MulDiv.ceil(g.minPeriodAbs, NS_PER_US, device.vtimeBaseRate), MILLION, periodUs * NS_PER_US);
                long claim = g.minClaimPpm[LinearModel.READ] + g.minClaimPpm[LinearModel.WRITE];
                if (usedPpm < claim) {
                    g.minClaimPpm[LinearModel.READ] = MulDiv.ceil(g.minClaimPpm[LinearModel.READ], usedPpm, claim);
                    g.minClaimPpm[LinearModel.WRITE] = MulDiv.ceil(g.minClaimPpm[LinearModel.WRITE], usedPpm, claim);
                }
            }
            g.minPeriodAbs = 0;
            g.minWaited = false;
        }
        rescale();
    }

    /** No ancestor of {@code g} has a minimum for {@code dir}: its own claim counts (an ancestor's covers it otherwise). */
    private static boolean outermost(CostGroup g, int dir) {
        for (int level = 1; level < g.level; level++) if (g.ancestors[level].hasMinimum(dir)) return false;
        return true;
    }

    /** The group goes (io.min cleared, group removed, idle a period). */
    void leave(CostGroup g) {
        if (!g.onReserverList) return;
        g.onReserverList = false;
        reservers.remove(g);
        rescale();
    }

    private void rescale() {
        long claimed = 0;
        for (CostGroup g : reservers) {
            for (int dir = LinearModel.READ; dir <= LinearModel.WRITE; dir++) if (outermost(g, dir)) claimed += g.minClaimPpm[dir];
        }
        scalePpm = Math.max(claimed, MILLION);
        grantedPpm = MulDiv.floor(MILLION, MILLION, scalePpm);
    }
}
