package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;

import java.util.ArrayList;
import java.util.List;

/**
 * io.max, io.max.global and io.max.burst (see the package documentation). Besides the policy hooks it is
 * the door through which a cluster coordinator reads io.max.global and sets this node's
 * shares (section 8): {@link #globalLimits}, {@link #share}, {@link #startingDivisor}. Any thread.
 */
public final class ThrottlePolicy implements IoPolicy {
    /** A limit of "max" in {@link GlobalLimit} and {@link #share}. */
    public static final long UNLIMITED = Long.MAX_VALUE;
    /** The order of the four limits in {@link GlobalLimit} and {@link #share}: io.max's keys. */
    public static final int RBPS = 0, WBPS = 1, RIOPS = 2, WIOPS = 3;
    /** The four limits' keys, in that order. */
    private static final List<String> LIMIT_KEYS = List.of("rbps", "wbps", "riops", "wiops");

    private final PolicyHost host;
    private final int index;
    /** A newly written global limit starts as limit / this. Plain volatile. */
    private volatile long startingDivisor = 1;

    public ThrottlePolicy(PolicyHost host, int index) {
        this.host = host;
        this.index = index;
    }

    @Override
    public String name() {
        return "throttle";
    }

    /** blk-throttle acts on the bio, before io.stat counts it: a parked request is counted when it leaves. */
    @Override
    public boolean precedesStat() {
        return true;
    }

    @Override
    public List<InterfaceFile> files() {
        return List.of(new IoMaxFile(host, this, IoMaxFile.Scope.LOCAL), new IoMaxFile(host, this, IoMaxFile.Scope.GLOBAL),
                       new IoMaxPerHostFile(host, this), new IoMaxBurstFile(host, this), new IoMaxBurstStatFile(this));
    }

    /** A host's new child starts with its parent's io.max.per_host, device by device (section 9). */
    @Override
    public void hostChildMade(PolicyGroup parent, PolicyGroup child) {
        for (PolicyDeviceGroup dg : parent.deviceGroups()) {
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(index);
            if (!tg.perHostLimited()) continue;
            try {
                setLocalLimits(child, dg.device(), tg.perHostBps.clone(), tg.perHostIops.clone());
            } catch (ControlException removed) {
                // The device went away meanwhile: there is nothing left to limit on it.
            }
        }
    }

    /** Sets io.max of {@code group} on the device, as a write to it would. Tree lock held. */
    void setLocalLimits(PolicyGroup group, PolicyDevice dc, long[] bps, long[] iops) throws ControlException {
        host.configure(group, dc, (dg, nowNs) -> {
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(index);
            ((ThrottleDevice) dc.policy(index)).setLimits(dg, tg.bps, tg.iops, bps, iops, nowNs);
            updateRules(group, dc);
        });
    }

    @Override
    public DevicePolicy attach(PolicyDevice device) {
        return new ThrottleDevice(index);
    }

    int index() {
        return index;
    }

    /**
     * One (group, device) pair's io.max.global and the share of it the pair enforces now: rbps,
     * wbps, riops, wiops each, {@link #UNLIMITED} for max.
     */
    public record GlobalLimit(PolicyGroup group, PolicyDevice device, long[] limits, long[] shares) {
    }

    /**
     * One limit's io.max.burst credit on one (group, device) pair, in the limit's unit (bytes
     * or IOs): what is left now and what a full credit is, (R − L) × len.
     *
     * @param limit rbps, wbps, riops or wiops
     */
    public record BurstCredit(PolicyGroup group, PolicyDevice device, String limit, long left, long full) {
    }

    /** Every limit with a burst in effect, in every group, parents first; read under the tree lock and each device's lock. */
    public List<BurstCredit> burstCredits() {
        List<BurstCredit> out = new ArrayList<>();
        host.walk(g -> out.addAll(burstCredits(g)));
        return out;
    }

    /** {@link #burstCredits()} of one group, by device then in io.max's key order. */
    List<BurstCredit> burstCredits(PolicyGroup group) {
        List<BurstCredit> out = new ArrayList<>();
        for (PolicyDeviceGroup pair : group.deviceGroups()) {
            try {
                // configure: the buckets are read under the device's lock, at the device's time.
                host.configure(group, pair.device(), (dg, nowNs) -> {
                    ThrottleGroup tg = (ThrottleGroup) dg.policyState(index);
                    Bucket[] buckets = {tg.byteBuckets[ThrottleGroup.READ], tg.byteBuckets[ThrottleGroup.WRITE],
                                        tg.ioBuckets[ThrottleGroup.READ], tg.ioBuckets[ThrottleGroup.WRITE]};
                    for (int k = RBPS; k <= WIOPS; k++) {
                        Bucket b = buckets[k];
                        if (b.limited() && b.credit() > 0) out.add(new BurstCredit(group, dg.device(), LIMIT_KEYS.get(k), b.creditLeft(nowNs), b.credit()));
                    }
                });
            } catch (ControlException removed) {
                // the group or device went away meanwhile: nothing to show
            }
        }
        return out;
    }

    /**
     * What a global limit written from now on starts at before a coordinator sets its share:
     * limit / {@code divisor}. 1, the default, is a node on its own: the whole limit.
     */
    public void startingDivisor(long divisor) {
        if (divisor < 1) throw new IllegalArgumentException("divisor " + divisor);
        startingDivisor = divisor;
    }

    /** Every pair with an io.max.global limit, read under the tree lock. */
    public List<GlobalLimit> globalLimits() {
        List<GlobalLimit> out = new ArrayList<>();
        host.walk(g -> {
            for (PolicyDeviceGroup dg : g.deviceGroups()) {
                ThrottleGroup tg = (ThrottleGroup) dg.policyState(index);
                if (!tg.globallyLimited()) continue;
                out.add(new GlobalLimit(g, dg.device(), external(tg.globalBps, tg.globalIops), external(tg.shareBps, tg.shareIops)));
            }
        });
        return out;
    }

    /**
     * Sets this node's share of the pair's io.max.global (rbps, wbps, riops, wiops;
     * {@link #UNLIMITED} for none; values below 1 count as 1). The pair then enforces the
     * smaller of io.max and the share; io.max reads back unchanged.
     *
     * @throws ControlException ENODEV when the group or device was removed meanwhile
     */
    public void share(PolicyGroup group, PolicyDevice device, long[] shares) throws ControlException {
        long[] bps = {toBps(shares[RBPS]), toBps(shares[WBPS])};
        long[] iops = {toIops(shares[RIOPS]), toIops(shares[WIOPS])};
        host.configure(group, device, (dg, nowNs) -> {
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(index);
            if (java.util.Arrays.equals(bps, tg.shareBps) && java.util.Arrays.equals(iops, tg.shareIops)) return;
            ((ThrottleDevice) device.policy(index)).setLimits(dg, tg.shareBps, tg.shareIops, bps, iops, nowNs);
            updateRules(group, device);
        });
    }

    /** The share a node takes of a newly written global limit (bps or iops, max kept) before any coordinator speaks: limit / {@link #startingDivisor}. */
    long[] startingShare(long[] limits, long max) {
        long[] share = new long[limits.length];
        for (int i = 0; i < limits.length; i++) share[i] = limits[i] == max ? max : Math.max(1, Long.divideUnsigned(limits[i], startingDivisor));
        return share;
    }

    /** Recomputes has-rules for the group and every descendant on the device (parents first). Tree lock held. */
    void updateRules(PolicyGroup group, PolicyDevice dc) {
        PolicyDeviceGroup dg = group.deviceGroup(dc.device().index());
        if (dg != null) ((ThrottleGroup) dg.policyState(index)).updateHasRules();
        for (PolicyGroup child : group.children()) updateRules(child, dc);
    }

    private static long fromBps(long v) {
        return v == ThrottleGroup.BPS_MAX || v < 0 ? UNLIMITED : v;
    }

    /** A pair's read and write bps and iops in {@link #share}'s order and units. */
    private static long[] external(long[] bps, long[] iops) {
        return new long[] {fromBps(bps[ThrottleGroup.READ]), fromBps(bps[ThrottleGroup.WRITE]), fromIops(iops[ThrottleGroup.READ]), fromIops(iops[ThrottleGroup.WRITE])};
    }

    private static long fromIops(long v) {
        return v == ThrottleGroup.IOPS_MAX ? UNLIMITED : v;
    }

    private static long toBps(long v) {
        return v == UNLIMITED ? ThrottleGroup.BPS_MAX : Math.max(1, v);
    }

    private static long toIops(long v) {
        return Math.min(ThrottleGroup.IOPS_MAX, Math.max(1, v));
    }
}
