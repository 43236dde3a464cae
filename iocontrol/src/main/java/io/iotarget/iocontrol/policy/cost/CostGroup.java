package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.model.IoRequest;

import java.util.ArrayDeque;
import java.util.ArrayList;

import static io.iotarget.iocontrol.policy.cost.CostTunables.WEIGHT_ONE;

/**
 * iocost's state of one (group, device) pair, the kernel's {@code ioc_gq}: weights, the group's
 * vtime cursor, debt and delay, the requests waiting for budget, and usage statistics. All
 * fields belong to the device's {@link CostDevice} and are touched under the device lock,
 * except the {@code shown*} statistics, which io.stat reads without it. The weights (but
 * {@code cfgWeight} and {@code weight}, which io.weight sets) and the hierarchical weights are
 * computed by the device's {@link HierarchicalWeights}; everything else by the device itself.
 */
final class CostGroup {
    /** Timestamps (µs) that are not running. */
    static final long NOT_SET = Long.MIN_VALUE;
    /** The wait timer is not armed. */
    static final long NOT_ARMED = Long.MAX_VALUE;

    static final int USAGE = 0;
    static final int WAIT = 1;
    static final int INDEBT = 2;
    static final int INDELAY = 3;

    final PolicyDeviceGroup deviceGroup;
    /** Depth in the group tree, 0 for the root. */
    final int level;
    /** ancestors[0] is the root's state, ancestors[level] this one. */
    final CostGroup[] ancestors;

    // ---- weights, all × WEIGHT_ONE
    /** io.weight's per-device value; 0 when the group's default applies. */
    long cfgWeight;
    /** cfgWeight, or the group's default. */
    long weight;
    /** weight while active, 0 while idle; for an inner node, its weight while a child is active. */
    long active;
    /** The weight it actually uses: below active while donating. */
    long inuse;
    /** inuse before the last change, restored when a debt is paid off or on reactivation. */
    long lastInuse;

    /** Byte offset just past the last costed IO, for telling sequential from random; 0 = none yet. */
    long cursor;

    // ---- vtime
    /** The group's cursor on the device's vtime: advanced by the cost of each IO it issues. */
    long vtime;
    /** Like vtime, but advanced on completion: vtime − doneVtime is the cost in flight. */
    long doneVtime;
    /** Absolute cost of IO that went out without budget (META), to repay before anything waits less. */
    long absVdebt;
    /** Budget when weights were last propagated with "save": in-period raises of inuse compare against it. */
    long savedMargin;

    // ---- delay (the kernel's blkcg delay for debtors)
    /** Current delay, µs, halving every second after delayAtUs. */
    long delayUs;
    long delayAtUs;
    /**
     * The delay in effect for issuers of debt, µs, 0 when none (the kernel's blkg use_delay and
     * delay_nsec, set by blkcg_set_delay): the decayed delay as of the last kick.
     */
    long issuerDelayUs;

    // ---- activity
    boolean onActiveList;
    /** The last period in which the group issued. */
    long activePeriod;
    long activatedAtUs;

    // ---- hierarchical weights (child sums of this node's active children)
    long childActiveSum;
    long childInuseSum;
    /** s' of Andy's method: the child sum that gives the children their after-donation shares (transfer only). */
    long childAdjustedSum;
    /** hweight cache: valid while hweightGen equals the weights' generation. */
    int hweightGen;
    /** The group's share of the device by active weight: its active over its active siblings', × its parent's, up to the root. */
    long hweightActive = WEIGHT_ONE;
    /** The same by inuse weight, the share it spends at: an IO costs abs_cost / hweightInuse. During a transfer, an inner node's b'. */
    long hweightInuse = WEIGHT_ONE;
    /** Donation at a period end: a donor's hweight_active, the donating part (b_t in Andy's method), summed up the tree. */
    long hweightDonating;
    /** The hweight_inuse a donor keeps (b'_t), summed up the tree. */
    long hweightAfterDonation;
    /** On the current inner-node walk (timer only). */
    boolean onWalk;

    // ---- waiting
    /** Requests waiting for budget, FIFO; each carries its absolute cost in policyCost. */
    final ArrayDeque<IoRequest> waiters = new ArrayDeque<>();
    /** When the wait timer fires (engine ns), or NOT_ARMED. */
    long waitTimerNs = NOT_ARMED;

    // ---- io.min (Minimums), by RateLimits index for the configuration, by direction for the rest
    /** io.min's rbps, wbps, riops, wiops on this device; 0 = none. Written by io.min under the device lock. */
    final long[] minimum = new long[4];
    /** dmClock's reservation tag per direction: when the next IO may pass on this group's minimum (engine ns). */
    final long[] minTagNs = new long[2];
    /** The share of the device its minimum takes with IO like its last one on it, ppm. */
    final long[] minClaimPpm = new long[2];
    /** The last period in which IO passed on this group's minimum, per direction. */
    final long[] minPeriod = {-1, -1};
    /** Absolute cost that passed on this group's minimum since the period started. */
    long minPeriodAbs;
    /** Some IO passing on the minimum this period had waited for the tag: the group asks for all of it. */
    boolean minWaited;
    /** Counted in the device's claims (a group with a minimum and no ancestor with one). */
    boolean onReserverList;
    /** Requests that went on a minimum through this group (hierarchical). Written under the device lock, read by io.stat. */
    volatile long minIos;
    /** Absolute cost this group issued on minimums, ever (part of absVusage). */
    long absVreserved;
    long lastStatAbsVreserved;
    /** usageDeltaUs' part that went on minimums: weights share the rest, so donation looks at the rest. */
    long reservedDeltaUs;

    // ---- statistics, µs
    /** Absolute cost of everything committed or incurred as debt, ever. */
    long absVusage;
    long lastStatAbsVusage;
    long usageDeltaUs;
    final long[] localStat = new long[4];
    final long[] descendantStat = new long[4];
    final long[] lastStat = new long[4];
    long waitSinceUs = NOT_SET;
    long indebtSinceUs = NOT_SET;
    long indelaySinceUs = NOT_SET;
    /** lastStat as io.stat shows it: written at period ends, read by io.stat without the lock. */
    volatile long shownUsageUs;
    volatile long shownWaitUs;
    volatile long shownIndebtUs;
    volatile long shownIndelayUs;
    /**
     * hweightActive and hweightInuse as iotarget.io.stat shows them, × WEIGHT_ONE; 0 while the
     * group is not active on the device. Written under the device lock at each period's end and
     * when the group activates or deactivates, read without it.
     */
    volatile long shownHweightActive;
    volatile long shownHweightInuse;

    CostGroup(PolicyDeviceGroup deviceGroup, CostGroup parent, long weight) {
        this.deviceGroup = deviceGroup;
        this.level = parent == null ? 0 : parent.level + 1;
        this.ancestors = new CostGroup[level + 1];
        if (parent != null) System.arraycopy(parent.ancestors, 0, ancestors, 0, level);
        this.ancestors[level] = this;
        this.weight = weight;
    }

    /** Whether io.min sets a minimum for {@code dir} (LinearModel.READ or WRITE) here. */
    boolean hasMinimum(int dir) {
        return minimum[dir] != 0 || minimum[2 + dir] != 0;
    }

    CostGroup parent() {
        return level == 0 ? null : ancestors[level - 1];
    }

    boolean isRoot() {
        return level == 0;
    }

    /**
     * iocg_build_inner_walk: appends the group's ancestors not yet on the walk, root first, and
     * marks them {@link #onWalk}, so that a walk built from several groups lists the inner nodes
     * parents before children. Whoever built the walk clears the marks.
     */
    void buildInnerWalk(ArrayList<CostGroup> walk) {
        int lvl = level - 1;
        while (lvl >= 0 && !ancestors[lvl].onWalk) lvl--;
        while (++lvl <= level - 1) {
            CostGroup inner = ancestors[lvl];
            inner.onWalk = true;
            walk.add(inner);
        }
    }

    void publishStats() {
        shownUsageUs = lastStat[USAGE];
        shownWaitUs = lastStat[WAIT];
        shownIndebtUs = lastStat[INDEBT];
        shownIndelayUs = lastStat[INDELAY];
    }

    /** Brings the hweights up to date ({@code weights}' cache) and publishes them for iotarget.io.stat. Device lock. */
    void publishHweights(HierarchicalWeights weights) {
        weights.currentHweight(this);
        shownHweightActive = hweightActive;
        shownHweightInuse = hweightInuse;
    }

    @Override
    public String toString() {
        return "iocg " + deviceGroup;
    }
}
