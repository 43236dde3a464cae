package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.MulDiv;
import io.iotarget.iocontrol.policy.Resumer;
import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.model.Counters;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoRequest;

import java.util.ArrayList;

import static io.iotarget.iocontrol.policy.cost.CostGroup.NOT_ARMED;
import static io.iotarget.iocontrol.policy.cost.CostGroup.NOT_SET;
import static io.iotarget.iocontrol.policy.cost.CostGroup.WAIT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.INUSE_ADJ_STEP_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MARGIN_LOW_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MARGIN_MIN_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MARGIN_TARGET_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MAX_PERIOD_US;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MILLION;
import static io.iotarget.iocontrol.policy.cost.CostTunables.MIN_PERIOD_US;
import static io.iotarget.iocontrol.policy.cost.CostTunables.NS_PER_US;
import static io.iotarget.iocontrol.policy.cost.CostTunables.PAGE_SHIFT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.RANDIO_PAGES;
import static io.iotarget.iocontrol.policy.cost.CostTunables.TIMER_SLACK_PCT;
import static io.iotarget.iocontrol.policy.cost.CostTunables.VTIME_PER_NSEC;
import static io.iotarget.iocontrol.policy.cost.CostTunables.VTIME_PER_USEC;
import static io.iotarget.iocontrol.policy.cost.CostTunables.WEIGHT_ONE;

/**
 * iocost on one device, the kernel's {@code ioc}: the cost model and QoS parameters, the
 * device's virtual clock (vtime advancing at vrate), the active groups, their budgets, debts
 * and waiters, the period timer and the groups' wait timers. The weight arithmetic — hweights,
 * propagation, donation — is {@link HierarchicalWeights}', what the period timer does at
 * each period's end (the QoS loop, ioc_timer_fn) is {@link PeriodLoop}'s, and incurring and
 * paying debt and the issuer delay it brings are {@link Debts}'. The algorithm is the package
 * documentation's; the method names follow the kernel's functions so the two can be read side
 * by side.
 *
 * <p>Time enters only through the entry points' {@code nowNs}. Those that use the device clock
 * — {@link #admit}, {@link #releaseDue}, {@link #cancel}, {@link #onGroupOffline},
 * {@link #weightUpdated} — turn it into one {@link DeviceNow} ({@link #deviceNow}, the kernel's
 * {@code ioc_now()}) and pass that down: a method without a {@code DeviceNow} or {@code nowNs}
 * parameter does not depend on the time. {@link #onComplete} and the io.cost.* writes use
 * {@code nowNs} as it is (a latency sample; how long a built-in set has looked wrong).
 *
 * <p>Threads: every method runs under the device's lock (the controller's hooks, and
 * configuration changes through {@code PolicyHost.configure}), except {@link #applies},
 * {@link #config()} and {@link #appendStat}, which read only volatile fields. Nothing here reads
 * a clock or starts a thread: the period timer and the wait timers are deadlines reported by
 * {@link #nextWakeNs} and run by {@link #releaseDue}.
 */
final class CostDevice implements DevicePolicy {
    /*
     * Maintainers' notes. Time: the kernel keeps its device clock in µs (ioc_now.now) and so do
     * we, so that vtime arithmetic gives the kernel's numbers to the unit; timers are engine
     * ns. A DeviceNow is taken once per entry point, as the kernel calls ioc_now() once per hook,
     * and passed last, as the kernel passes its struct ioc_now *now. No method reads the time of
     * the hook in progress from a field (nowScratch is only what deviceNow hands out; periodAtUs,
     * delayAtUs and the like are times things happened).
     * Vtime values wrap like the kernel's u64: compare them with after()/before(), never with
     * < and >. Weights are × WEIGHT_ONE. The kernel's two locks (ioc->lock and the per-group
     * waitq lock) collapse into the device lock, which every hook already holds.
     */

    /** policyFlags mark (above the controller's stage bits): the request went out as debt while a delay was in effect. */
    static final int DELAYS_ISSUER = 1 << 16;

    private final CostPolicy policy;
    private final int policyIndex;
    private final boolean debugStats;
    /** Requests in some group's waiters; written under the device lock, read by any thread. */
    private volatile int waiting;
    private final Counters<CostCounter> counters = new Counters<>(CostCounter.class).source(CostCounter.WAITING, () -> waiting)
            .source(CostCounter.BUSY_LEVEL, () -> this.loop.busyLevel());      // loop is declared below

    /** What a device shows before its first io.cost.* write: enable=0, everything auto, SSD defaults. */
    static final CostConfig DEFAULT_CONFIG =
            new CostConfig(false, false, AutoParams.SSD_DFL.qos, false, AutoParams.SSD_DFL.model, AutoParams.SSD_DFL);

    /** Null until the first write to io.cost.qos or io.cost.model for this device. */
    private volatile CostConfig config;

    // ---- derived from the configuration (the period loop reads them too)
    private long periodUs;
    private long timerSlackNs;
    long marginMin;
    long marginLow;
    long marginTarget;
    long vrateMin;
    long vrateMax;

    // ---- the device clock
    private boolean running;
    /** vrate in effect: the base rate plus the compensation for budget thrown away. */
    private long vtimeRate;
    /** vrate as the QoS loop sets it (cost.vrate). */
    long vtimeBaseRate;
    private volatile long shownBaseRate;
    /** Vtime thrown away (negative) to be given back through vtimeRate within the period. */
    long vtimeErr;
    long periodAtUs;
    long periodAtVtime;
    private long periodTimerNs = NOT_ARMED;
    private long curPeriod;

    // ---- groups
    final HierarchicalWeights weights = new HierarchicalWeights();
    final ArrayList<CostGroup> activeGroups = new ArrayList<>();
    /** The period timer's work (ioc_timer_fn), with the QoS samples and the busy level. */
    private final PeriodLoop loop = new PeriodLoop(this);
    /** io.min's reservation tags and their scale. */
    final Minimums minimums = new Minimums(this);
    /** Debts of requests that must not wait, and the delay they put on issuers. */
    private final Debts debts = new Debts(this);

    // ---- wait timers
    private long earliestWaitTimerNs = NOT_ARMED;
    private boolean waitTimersChanged;
    /** io.cost.qos enable=0 was written while requests waited: release them all. */
    private boolean releaseAllWaiters;

    // ---- autop
    private long autopTooFastAtNs = NOT_SET;
    private long autopTooSlowAtNs = NOT_SET;

    // ---- scratch, reused to keep the IO path and the timers allocation-free
    /** What {@link #deviceNow} fills in and hands out; nothing else reads it. */
    private final DeviceNow nowScratch = new DeviceNow();

    CostDevice(CostPolicy policy, int policyIndex, boolean debugStats) {
        this.policy = policy;
        this.policyIndex = policyIndex;
        this.debugStats = debugStats;
    }

    CostGroup state(PolicyDeviceGroup dg) {
        return (CostGroup) dg.policyState(policyIndex);
    }

    /** What io.cost.qos and io.cost.model show; null before either was written. Any thread. */
    CostConfig config() {
        return config;
    }

    // ================================================================ configuration

    /**
     * blk_iocost_init: the first write to io.cost.qos or io.cost.model that names the device,
     * before its tokens are read. The device clock starts at vtime 0 now; it runs once a group
     * activates. Nothing happens on later writes.
     */
    void setUp(long nowNs) {
        if (config != null) return;
        running = false;
        vtimeBaseRate = VTIME_PER_USEC;
        vtimeRate = VTIME_PER_USEC;
        shownBaseRate = vtimeBaseRate;
        periodAtUs = Math.floorDiv(nowNs, NS_PER_US);
        periodAtVtime = 0;
        curPeriod = 0;
        config = DEFAULT_CONFIG;
        refreshParams(true, nowNs);
    }

    /** An io.cost.qos write that parsed: enable, ctrl and, when {@code user}, the QoS parameters. */
    void writeQos(boolean enable, boolean user, QosParams qos, long nowNs) {
        setUp(nowNs);
        CostConfig c = config;
        if (c.enabled() && !enable && hasWaiters()) releaseAllWaiters = true;
        config = new CostConfig(enable, user, user ? qos : c.qos(), c.userModel(), c.model(), c.autop());
        refreshParams(true, nowNs);
    }

    /** An io.cost.model write that parsed. */
    void writeModel(boolean user, LinearModel model, long nowNs) {
        setUp(nowNs);
        CostConfig c = config;
        config = new CostConfig(c.enabled(), c.userQos(), c.qos(), user, user ? model : c.model(), c.autop());
        refreshParams(true, nowNs);
    }

    /** weight_updated: the group's io.weight (default or per-device) changed. */
    void weightUpdated(CostGroup g, long nowNs) {
        long weight = g.cfgWeight != 0 ? g.cfgWeight : policy.defaultWeight(g.deviceGroup.group()) * WEIGHT_ONE;
        if (weight != g.weight && g.active != 0) {
            propagateWeights(g, weight, g.inuse, deviceNow(nowNs));
            weights.commit();
        }
        g.weight = weight;
    }

    /**
     * ioc_refresh_params: picks the built-in set and recomputes what derives from the
     * parameters. {@code nowNs} times how long vrate has said the set is wrong (the kernel's
     * ioc_autop_idx reads its own clock for it, not ioc_now).
     */
    boolean refreshParams(boolean force, long nowNs) {
        CostConfig c = config;
        AutoParams idx = autopIndex(nowNs);
        if (idx == c.autop() && !force) return false;
        // As the kernel: a new built-in set restarts vtime_rate at 100% (until the next refresh of vrate).
        if (idx != c.autop()) vtimeRate = VTIME_PER_USEC;
        autopTooFastAtNs = NOT_SET;
        autopTooSlowAtNs = NOT_SET;
        QosParams qos = c.userQos() ? c.qos() : idx.qos;
        LinearModel model = c.userModel() ? c.model() : idx.model;
        config = new CostConfig(c.enabled(), c.userQos(), qos, c.userModel(), model, idx);
        refreshPeriod(qos);
        vrateMin = MulDiv.ceil(qos.minPpm(), VTIME_PER_USEC, MILLION);
        vrateMax = MulDiv.floor(qos.maxPpm(), VTIME_PER_USEC, MILLION);
        return true;
    }

    /** ioc_autop_idx: SSD_DFL, stepping up or down when vrate has said for AUTOP_CYCLE_NS that the model is far off. */
    private AutoParams autopIndex(long nowNs) {
        CostConfig c = config;
        AutoParams idx = c.autop();
        if (c.userQos() || c.userModel()) return idx;
        long vratePct = vtimeBaseRate * 100 / VTIME_PER_USEC;
        if (idx.tooFastVratePct != 0 && idx.tooFastVratePct <= vratePct) {
            if (autopTooFastAtNs == NOT_SET) autopTooFastAtNs = nowNs;
            if (nowNs - autopTooFastAtNs >= CostTunables.AUTOP_CYCLE_NS) return idx.next();
        } else {
            autopTooFastAtNs = NOT_SET;
        }
        if (idx.tooSlowVratePct != 0 && idx.tooSlowVratePct >= vratePct) {
            if (autopTooSlowAtNs == NOT_SET) autopTooSlowAtNs = nowNs;
            if (nowNs - autopTooSlowAtNs >= CostTunables.AUTOP_CYCLE_NS) return idx.previous();
        } else {
            autopTooSlowAtNs = NOT_SET;
        }
        return idx;
    }

    /**
     * ioc_refresh_period_us: the period is a multiple of the larger latency target, 2× at p90
     * and beyond, 10× at p50 — long enough to hold a meaningful number of IOs.
     */
    private void refreshPeriod(QosParams qos) {
        long ppm;
        long latUs;
        if (qos.readLatUs() >= qos.writeLatUs()) {
            ppm = qos.readPpm();
            latUs = qos.readLatUs();
        } else {
            ppm = qos.writePpm();
            latUs = qos.writeLatUs();
        }
        long multi = ppm != 0 ? Math.max((MILLION - ppm) / 50_000, 2) : 2;
        periodUs = Math.clamp(multi * latUs, MIN_PERIOD_US, MAX_PERIOD_US);
        timerSlackNs = periodUs * NS_PER_US * TIMER_SLACK_PCT / 100;
        refreshMargins();
    }

    private void refreshMargins() {
        marginMin = (periodUs * MARGIN_MIN_PCT / 100) * vtimeBaseRate;
        marginLow = (periodUs * MARGIN_LOW_PCT / 100) * vtimeBaseRate;
        marginTarget = (periodUs * MARGIN_TARGET_PCT / 100) * vtimeBaseRate;
    }

    // ================================================================ the device clock

    /**
     * ioc_now: the entry point's instant — the engine's {@code nowNs}, in µs, and the device's
     * vtime then: vtime at the period's start plus the µs since, at vrate. Call once per entry
     * point, before anything changes the period or vrate, and pass the result down.
     */
    private DeviceNow deviceNow(long nowNs) {
        long nowUs = Math.floorDiv(nowNs, NS_PER_US);
        return nowScratch.set(nowNs, nowUs, periodAtVtime + (nowUs - periodAtUs) * vtimeRate);
    }

    /** ioc_start_period: the period starts at {@code now}, and its timer is set for one period later. */
    private void startPeriod(DeviceNow now) {
        periodAtUs = now.nowUs();
        periodAtVtime = now.vnow();
        periodTimerNs = now.nowNs() + periodUs * NS_PER_US;
    }

    /**
     * ioc_refresh_vrate: budget thrown away this period (vtimeErr) is handed back by running
     * the clock faster for the rest of it, so that trimming budgets does not waste the device.
     */
    private void refreshVrate(DeviceNow now) {
        long periodLeftUs = periodAtUs + periodUs - now.nowUs();
        long periodVtime = periodUs * vtimeBaseRate;
        if (periodLeftUs > 0) {
            long compensation = Math.clamp(-(vtimeErr / periodLeftUs), -(vtimeBaseRate >> 1), vtimeBaseRate);
            vtimeErr += compensation * periodLeftUs;
            vtimeRate = vtimeBaseRate + compensation;
        }
        vtimeErr = Math.clamp(vtimeErr, -periodVtime, periodVtime);
    }

    /** The QoS loop moved vrate ({@link PeriodLoop#nextBaseVrate}): the margins follow it. */
    void setBaseVrate(long vrate) {
        vtimeBaseRate = vrate;
        shownBaseRate = vrate;
        refreshMargins();
    }

    /**
     * Step 7 of the period loop: the next period starts now, or the device clock stops when no
     * group is active; either way vrate then hands back the budget thrown away.
     *
     * @return true when the clock runs on
     */
    boolean nextPeriod(DeviceNow now) {
        curPeriod++;
        boolean runs = !activeGroups.isEmpty();
        if (runs) {
            startPeriod(now);
        } else {
            vtimeErr = 0;
            running = false;
            periodTimerNs = NOT_ARMED;
        }
        refreshVrate(now);
        return runs;
    }

    /**
     * Minimums: a request went on a minimum, and its absolute cost comes off the device clock
     * that the weights share, from {@code now} on.
     */
    void takeFromClock(long absCost, DeviceNow now) {
        periodAtVtime -= absCost;
        now.take(absCost);
    }

    /** 1% of the period, ns: how late a wait timer may fire (and a minimum's tag be taken up) with nothing lost. */
    long timerSlackNs() {
        return timerSlackNs;
    }

    /** The current period's number; Minimums stamps what happened in it. */
    long currentPeriod() {
        return curPeriod;
    }

    static boolean after(long a, long b) {
        return a - b > 0;
    }

    static boolean before(long a, long b) {
        return a - b < 0;
    }

    // ================================================================ weights

    static long absCostToCost(long absCost, long hwInuse) {
        return MulDiv.ceil(absCost, WEIGHT_ONE, hwInuse);
    }

    static long costToAbsCost(long cost, long hwInuse) {
        return MulDiv.ceil(cost, hwInuse, WEIGHT_ONE);
    }

    /**
     * __propagate_weights with {@code save}: the group's new active and inuse weights go up the
     * tree ({@link HierarchicalWeights#propagate}), and its budget at {@code now} is remembered
     * for in-period inuse raises. Takes effect at the next {@code weights.commit()}. (The
     * kernel's calls without save — deactivation, debt — are plain {@code weights.propagate}.)
     */
    void propagateWeights(CostGroup g, long active, long inuse, DeviceNow now) {
        g.savedMargin = now.vnow() - g.vtime;
        weights.propagate(g, active, inuse);
    }

    // ================================================================ activation

    /**
     * iocg_activate: a group starts issuing. It starts with exactly the target budget, its
     * weights join its parents' sums, and the period timer starts if it was idle. Fails (the IO
     * then goes out uncontrolled, as root IO does) for a group that has active descendants or
     * an active ancestor: only leaves of the active tree issue.
     */
    private boolean activate(CostGroup g, DeviceNow now) {
        if (g.onActiveList) {
            g.activePeriod = curPeriod;
            return true;
        }
        if (g.childActiveSum != 0) return false;
        g.activePeriod = curPeriod;
        for (int i = g.level - 1; i > 0; i--) {
            if (g.ancestors[i].onActiveList) return false;
        }
        long delta = (now.vnow() - marginTarget) - g.vtime;
        g.vtime += delta;
        g.doneVtime += delta;
        weights.invalidate(g);
        activeGroups.add(g);
        g.onActiveList = true;
        propagateWeights(g, g.weight, g.lastInuse != 0 ? g.lastInuse : g.weight, now);
        weights.commit();
        // Its siblings' shares shrank too; they show that from the period's end (publishing all
        // of them here would make each activation cost as much as the active groups are many).
        g.publishHweights(weights);
        g.activatedAtUs = now.nowUs();
        if (!running) {
            running = true;
            loop.started(now.nowUs());
            startPeriod(now);
        }
        return true;
    }

    /** Leaves the active tree: its weights leave its parents' sums (commit follows). */
    void deactivate(CostGroup g) {
        weights.propagate(g, 0, 0);
        activeGroups.remove(g);
        g.onActiveList = false;
        g.shownHweightActive = 0;
        g.shownHweightInuse = 0;
        disarmWaitTimer(g);
    }

    /** iocg_is_idle: nothing issued this period and nothing in flight. */
    boolean isIdle(CostGroup g) {
        return g.activePeriod != curPeriod && g.doneVtime == g.vtime;
    }

    // ================================================================ the IO path

    @Override
    public Object newGroupState(PolicyDeviceGroup dg) {
        CostGroup parent = dg.parent() == null ? null : state(dg.parent());
        CostGroup g = new CostGroup(dg, parent, policy.defaultWeight(dg.group()) * WEIGHT_ONE);
        g.activePeriod = curPeriod;
        return g;
    }

    /**
     * Every read and write with data on an enabled device takes part: groups' IO to be costed,
     * and the root's too, whose completions feed the QoS latency percentiles.
     */
    @Override
    public boolean applies(IoRequest io, PolicyDeviceGroup dg) {
        CostConfig c = config;
        return c != null && c.enabled() && LinearModel.direction(io.op()) >= 0 && io.length() > 0;
    }

    /** ioc_rqos_throttle. */
    @Override
    public boolean admit(IoRequest io, PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        io.policyCost(0);
        CostGroup g = state(dg);
        CostConfig c = config;
        if (g.isRoot() || c == null || !c.enabled()) return true;
        long absCost = absCost(io, g, c.model());
        if (absCost == 0) return true;
        DeviceNow now = deviceNow(nowNs);
        if (!activate(g, now)) return true;
        g.cursor = io.offset() + io.length();
        // dmClock's constraint phase first: a request that fits its minimum goes whatever the budget.
        if (g.waiters.isEmpty() && minimums.ready(g, io, nowNs)) {
            minimums.commit(g, io, absCost, false, now);
            return true;
        }
        long vtime = g.vtime;
        long cost = adjustInuseAndCalcCost(g, vtime, absCost, now);
        if (g.waiters.isEmpty() && g.absVdebt == 0 && !after(vtime + cost, now.vnow())) {
            commit(g, io, absCost, cost);
            return true;
        }
        if (mustNotWait(io)) {
            counters.increment(CostCounter.DEBT_IOS);
            debts.incur(g, absCost, now);
            if (debts.kickDelay(g, now)) io.policyFlags(io.policyFlags() | DELAYS_ISSUER);
            return true;
        }
        // A group with waiters uses its full weight: snap back any donation.
        if (g.absVdebt == 0 && g.inuse != g.active) {
            propagateWeights(g, g.active, g.active, now);
            weights.commit();
        }
        io.policyCost(absCost);
        g.waiters.addLast(io);
        waiting++;
        counters.increment(CostCounter.WAITED);
        return kickWaitq(g, true, resumer, io, now);
    }

    /**
     * bio_issue_as_root_blkg: metadata must not queue behind its group's data (a priority
     * inversion), so it goes out at once and its cost becomes debt.
     */
    private static boolean mustNotWait(IoRequest io) {
        return io.hasFlag(IoFlags.META);
    }

    /** calc_vtime_cost_builtin: a per-IO part (sequential or random) plus a per-page part. */
    private static long absCost(IoRequest io, CostGroup g, LinearModel model) {
        int dir = LinearModel.direction(io.op());
        long pages = Math.max(io.length() >> PAGE_SHIFT, 1);
        long seekPages = g.cursor != 0 ? Math.abs(io.offset() - g.cursor) >> PAGE_SHIFT : 0;
        long perIo = seekPages > RANDIO_PAGES ? model.randioCost(dir) : model.seqioCost(dir);
        long size = MulDiv.floor(pages, model.pageCost(dir), 1);
        return size > Long.MAX_VALUE - perIo ? Long.MAX_VALUE : size + perIo;
    }

    /**
     * adjust_inuse_and_calc_cost: the IO's cost at the group's hweight_inuse; a donor whose
     * budget fell below margin.low (and below what it was at the last adjustment) takes weight
     * back in steps of 25% of its active weight until the IO fits.
     */
    private long adjustInuseAndCalcCost(CostGroup g, long vtime, long absCost, DeviceNow now) {
        weights.currentHweight(g);
        long cost = absCostToCost(absCost, g.hweightInuse);
        long margin = now.vnow() - vtime - cost;
        if (g.absVdebt != 0) return cost;
        if (margin >= g.savedMargin || margin >= marginLow || g.inuse == g.active) return cost;
        long newInuse = g.inuse;
        long step = Math.ceilDiv(g.active * INUSE_ADJ_STEP_PCT, 100);
        do {
            newInuse += step;
            propagateWeights(g, g.active, newInuse, now);
            weights.commit();
            weights.currentHweight(g);
            cost = absCostToCost(absCost, g.hweightInuse);
        } while (after(vtime + cost, now.vnow()) && g.inuse != g.active);
        return cost;
    }

    /** iocg_commit_bio: the request goes out; the group's vtime advances by its cost. */
    private static void commit(CostGroup g, IoRequest io, long absCost, long cost) {
        io.policyCost(cost);
        g.vtime += cost;
        g.absVusage = saturatedAdd(g.absVusage, absCost);
    }

    static long saturatedAdd(long a, long b) {
        long sum = a + b;
        return sum < 0 ? Long.MAX_VALUE : sum;
    }

    /** Completions return the cost in flight and are the QoS loop's latency samples. */
    @Override
    public boolean tracksCompletions() {
        return true;
    }

    /**
     * ioc_rqos_done_bio and ioc_rqos_done: the request's cost is no longer in flight, and its
     * latency is a QoS sample — from leaving the controller to completion, minus the transfer
     * time the model predicts for its size, against rlat/wlat; the time it waited for a queue
     * slot adds to rq_wait. Needs no device time, only the engine's {@code nowNs}, as the
     * kernel's done hook reads only the clock.
     */
    @Override
    public long onComplete(IoRequest io, PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        CostGroup g = state(dg);
        long cost = io.policyCost();
        // A completion can only belong to an active group (deactivation waits for in-flight
        // IO); one that arrives elsewhere lost its group to rmdir and is not counted.
        if (cost != 0 && g.onActiveList) {
            g.doneVtime = after(g.doneVtime + cost, g.vtime) ? g.vtime : g.doneVtime + cost;
        }
        CostConfig c = config;
        if (c == null || !c.enabled()) return 0;
        int dir = LinearModel.direction(io.op());
        long onQueueNs = nowNs - io.admitNs();
        long rqWait = Math.max(io.issueNs() - io.admitNs(), 0);
        long sizeNs = MulDiv.floor(io.length() >> PAGE_SHIFT, c.model().pageCost(dir), VTIME_PER_NSEC);
        loop.sample(dir, onQueueNs <= sizeNs || onQueueNs - sizeNs <= c.qos().latencyUs(dir) * NS_PER_US, rqWait);
        return (io.policyFlags() & DELAYS_ISSUER) != 0 ? g.issuerDelayUs * NS_PER_US : 0;
    }

    // ================================================================ waiting, debt and delay

    /**
     * iocg_kick_waitq: pays debt from the budget, updates the delay, then wakes waiters in FIFO
     * order while the budget lasts (each at the current hweight_inuse), and arms the wait timer
     * for when the first remaining one fits.
     *
     * @param self a request being admitted right now: committed here, not resumed
     * @return true when {@code self} was committed
     */
    boolean kickWaitq(CostGroup g, boolean payDebt, Resumer resumer, IoRequest self, DeviceNow now) {
        weights.currentHweight(g);
        long hwa = g.hweightActive;
        long vbudget = now.vnow() - g.vtime;
        if (payDebt && g.absVdebt != 0 && vbudget > 0) vbudget -= debts.payFromBudget(g, vbudget, hwa, now);
        if (g.absVdebt != 0 || g.delayUs != 0) debts.kickDelay(g, now);
        if (g.absVdebt != 0) {
            // Nothing waits less than the debt: the budget stays at or below zero.
            vbudget = Math.min(0, vbudget - absCostToCost(g.absVdebt, hwa));
        }
        weights.currentHweight(g);
        long hwi = g.hweightInuse;
        boolean selfCommitted = false;
        IoRequest next;
        while ((next = g.waiters.peekFirst()) != null) {
            long absCost = next.policyCost();
            if (minimums.ready(g, next, now.nowNs())) {
                g.waiters.pollFirst();
                waiting--;
                minimums.commit(g, next, absCost, true, now);
                vbudget -= absCost;
            } else {
                long cost = absCostToCost(absCost, hwi);
                vbudget -= cost;
                if (vbudget < 0) break;
                g.waiters.pollFirst();
                waiting--;
                commit(g, next, absCost, cost);
            }
            if (next == self) selfCommitted = true;
            else resumer.resume(next);
        }
        if (g.waiters.isEmpty()) {
            if (g.waitSinceUs != NOT_SET) {
                g.localStat[WAIT] += now.nowUs() - g.waitSinceUs;
                g.waitSinceUs = NOT_SET;
            }
            return selfCommitted;
        }
        if (g.waitSinceUs == NOT_SET) g.waitSinceUs = now.nowUs();
        // The first remaining waiter fits once vtime has run for the shortage; wake a slack later
        // so that several waiters leave together. A minimum's tag that comes sooner is kept to the ns.
        long shortage = -vbudget;
        long expires = now.nowNs() + Math.ceilDiv(shortage, vtimeBaseRate) * NS_PER_US + timerSlackNs;
        long minimumReady = minimums.readyNs(g, g.waiters.peekFirst());
        if (minimumReady < expires) {
            if (g.waitTimerNs != minimumReady) {
                g.waitTimerNs = minimumReady;
                waitTimersChanged = true;
            }
            return selfCommitted;
        }
        if (g.waitTimerNs != NOT_ARMED && Math.abs(g.waitTimerNs - expires) <= timerSlackNs) return selfCommitted;
        g.waitTimerNs = expires;
        waitTimersChanged = true;
        return selfCommitted;
    }

    private boolean hasWaiters() {
        for (CostGroup g : activeGroups) if (!g.waiters.isEmpty()) return true;
        return false;
    }

    private void disarmWaitTimer(CostGroup g) {
        if (g.waitTimerNs == NOT_ARMED) return;
        g.waitTimerNs = NOT_ARMED;
        waitTimersChanged = true;
    }

    /** Commits and resumes every waiter of the group at once (group removed, iocost disabled). */
    private void releaseWaiters(CostGroup g, Resumer resumer, DeviceNow now) {
        weights.currentHweight(g);
        IoRequest io;
        while ((io = g.waiters.pollFirst()) != null) {
            waiting--;
            long absCost = io.policyCost();
            commit(g, io, absCost, absCostToCost(absCost, g.hweightInuse));
            resumer.resume(io);
        }
        if (g.waitSinceUs != NOT_SET) {
            g.localStat[WAIT] += now.nowUs() - g.waitSinceUs;
            g.waitSinceUs = NOT_SET;
        }
        disarmWaitTimer(g);
    }

    // ================================================================ timers

    @Override
    public Counters<CostCounter> counters() {
        return counters;
    }

    @Override
    public long nextWakeNs() {
        if (releaseAllWaiters) return Long.MIN_VALUE;
        if (waitTimersChanged) {
            long earliest = NOT_ARMED;
            for (CostGroup g : activeGroups) earliest = Math.min(earliest, g.waitTimerNs);
            earliestWaitTimerNs = earliest;
            waitTimersChanged = false;
        }
        return Math.min(running ? periodTimerNs : NOT_ARMED, earliestWaitTimerNs);
    }

    /**
     * The timers that are due: the release of every waiter after {@code enable=0}, the period's
     * end, then the groups' wait timers (iocg_waitq_timer_fn). All see the one instant taken on
     * entry; a period that ends here restarts at that instant, so its vnow is the new period's
     * start.
     */
    @Override
    public void releaseDue(long nowNs, Resumer resumer) {
        DeviceNow now = deviceNow(nowNs);
        if (releaseAllWaiters) {
            releaseAllWaiters = false;
            for (CostGroup g : activeGroups) releaseWaiters(g, resumer, now);
        }
        if (running && nowNs >= periodTimerNs) loop.run(resumer, now);
        if (nextWakeNs() > nowNs) return;
        for (CostGroup g : activeGroups) {
            if (g.waitTimerNs > nowNs) continue;
            g.waitTimerNs = NOT_ARMED;
            waitTimersChanged = true;
            kickWaitq(g, g.absVdebt != 0, resumer, null, now);
        }
    }

    // ================================================================ removal and io.stat

    /** A waiter whose issuer went away leaves the queue; those behind it may now fit. */
    @Override
    public boolean cancel(IoRequest io, PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        CostGroup g = state(dg);
        if (!g.waiters.removeIf(r -> r == io)) return false;
        waiting--;
        kickWaitq(g, false, resumer, null, deviceNow(nowNs));
        return true;
    }

    /** ioc_pd_free: the group leaves the active tree; what it had waiting goes out now. */
    @Override
    public void onGroupOffline(PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        CostGroup g = state(dg);
        releaseWaiters(g, resumer, deviceNow(nowNs));
        minimums.remove(g);
        if (g.onActiveList) {
            deactivate(g);
            weights.commit();
        }
    }

    /** ioc_pd_stat: {@code cost.vrate} on the root's line, {@code cost.usage} on every line. */
    @Override
    public void appendStat(PolicyDeviceGroup dg, StringBuilder line) {
        CostConfig c = config;
        if (c == null || !c.enabled()) return;
        CostGroup g = state(dg);
        if (g.isRoot()) {
            long vp10k = (shownBaseRate * 10_000 + VTIME_PER_USEC / 2) / VTIME_PER_USEC;
            line.append(" cost.vrate=").append(vp10k / 100).append('.');
            appendTwoDigits(line, vp10k % 100);
        }
        line.append(" cost.usage=").append(g.shownUsageUs);
        if (debugStats) {
            line.append(" cost.wait=").append(g.shownWaitUs)
                .append(" cost.indebt=").append(g.shownIndebtUs)
                .append(" cost.indelay=").append(g.shownIndelayUs);
        }
    }

    /**
     * io.min in iotarget.io.stat: {@code min_pct}, the fraction of its minimum the group gets
     * now (100.00 unless the minimums in use claim more than the device; 100.00 for a group
     * without a minimum on its way), and {@code min_ios}, requests that went on a minimum.
     * Then the weight's share of the device, {@code hweight_active_pct} (by active weight: what
     * io.weight entitles the group to among the groups active now) and {@code hweight_inuse_pct}
     * (by inuse weight: what it spends at, less while it donates what it does not use), both
     * 0.00 while the group is idle on the device or iocost is off, as of the last period end or
     * the group's activation (the kernel's hweight_active and hweight_inuse, which it shows only
     * to tracing and iocost_monitor.py). Reads without the lock: a minimum written meanwhile
     * may show either way.
     */
    @Override
    public void appendIotargetStat(PolicyDeviceGroup dg, StringBuilder line) {
        CostGroup g = state(dg);
        boolean minimum = false;
        for (int level = 1; level <= g.level; level++) {
            CostGroup a = g.ancestors[level];
            minimum |= a.hasMinimum(LinearModel.READ) || a.hasMinimum(LinearModel.WRITE);
        }
        long p10k = minimum ? minimums.grantedPpm() / 100 : 10_000;
        line.append(" min_pct=").append(p10k / 100).append('.');
        appendTwoDigits(line, p10k % 100);
        line.append(" min_ios=").append(g.minIos);
        CostConfig c = config;
        boolean on = c != null && c.enabled();
        appendWeightPct(line, " hweight_active_pct=", on ? g.shownHweightActive : 0);
        appendWeightPct(line, " hweight_inuse_pct=", on ? g.shownHweightInuse : 0);
    }

    /** A weight × WEIGHT_ONE as a percentage with two decimals, rounded to nearest. */
    private static void appendWeightPct(StringBuilder line, String key, long weight) {
        long p10k = (weight * 10_000 + WEIGHT_ONE / 2) / WEIGHT_ONE;
        line.append(key).append(p10k / 100).append('.');
        appendTwoDigits(line, p10k % 100);
    }

    static void appendTwoDigits(StringBuilder line, long value) {
        if (value < 10) line.append('0');
        line.append(value);
    }

    /** The configured period, µs. */
    long periodUs() {
        return periodUs;
    }

    /** The QoS loop's vrate, in vtime per µs (VTIME_PER_USEC = 100%). Any thread. */
    long baseVrate() {
        return shownBaseRate;
    }

    /** The rate the device clock runs at now: base vrate plus the compensation for discarded budget. Device lock. */
    long vtimeRate() {
        return vtimeRate;
    }
}
