package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.Resumer;
import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.model.Counters;
import io.iotarget.model.IoRequest;

import java.util.Comparator;
import java.util.TreeSet;

/**
 * io.max on one device (the kernel's {@code throtl_data}): the set of groups with waiting
 * requests, ordered by when their head request fits. Device lock.
 */
final class ThrottleDevice implements DevicePolicy {
    private final int policyIndex;
    private final TreeSet<ThrottleGroup> pending = new TreeSet<>(
            Comparator.<ThrottleGroup>comparingLong(tg -> tg.dispatchTimeNs).thenComparingLong(tg -> tg.pendingSeq));
    private long nextSeq;
    /** Requests waiting anywhere in this device's tree; written under the device lock, read by any thread. */
    private volatile int queued;
    private final Counters<ThrottleCounter> counters = new Counters<>(ThrottleCounter.class).source(ThrottleCounter.QUEUED, () -> queued);

    ThrottleDevice(int policyIndex) {
        this.policyIndex = policyIndex;
    }

    ThrottleGroup state(PolicyDeviceGroup dg) {
        return (ThrottleGroup) dg.policyState(policyIndex);
    }

    @Override
    public Counters<ThrottleCounter> counters() {
        return counters;
    }

    @Override
    public Object newGroupState(PolicyDeviceGroup dg) {
        return new ThrottleGroup(dg, dg.parent() == null ? null : state(dg.parent()));
    }

    @Override
    public boolean applies(IoRequest io, PolicyDeviceGroup dg) {
        return state(dg).hasRules(direction(io));
    }

    @Override
    public boolean admit(IoRequest io, PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        int dir = direction(io);
        ThrottleGroup tg = state(dg);
        Qnode qnode = tg.qnodeOnSelf[dir];
        while (!tg.isRoot()) {
            if (tg.queuedCount[dir] == 0 && tg.dispatchWaitNs(io, dir, nowNs) == 0) {
                tg.charge(io, dir);
                tg.trim(dir, nowNs);
            } else if (ThrottleGroup.neverWaits(io)) {
                tg.charge(io, dir);
            } else {
                queue(io, tg, qnode, dir, nowNs);
                return false;
            }
            qnode = tg.qnodeOnParent[dir];
            tg = tg.parent;
        }
        return true;
    }

    private void queue(IoRequest io, ThrottleGroup tg, Qnode qnode, int dir, long nowNs) {
        queued++;
        counters.increment(ThrottleCounter.DELAYED);
        if (tg.add(io, qnode, dir)) updateDispatchTime(tg, nowNs);
    }

    /** tg_update_disptime: when the head of either direction fits; (re)files the group in {@link #pending}. */
    private void updateDispatchTime(ThrottleGroup tg, long nowNs) {
        long wait = Long.MAX_VALUE;
        for (int dir = ThrottleGroup.READ; dir <= ThrottleGroup.WRITE; dir++) {
            IoRequest head = tg.peek(dir);
            if (head != null) wait = Math.min(wait, tg.dispatchWaitNs(head, dir, nowNs));
        }
        if (tg.pending) pending.remove(tg);
        if (wait == Long.MAX_VALUE) {
            tg.pending = false;
            return;
        }
        tg.dispatchTimeNs = nowNs + wait;
        tg.pendingSeq = nextSeq++;
        tg.pending = true;
        pending.add(tg);
    }

    @Override
    public void releaseDue(long nowNs, Resumer resumer) {
        ThrottleGroup tg;
        while ((tg = pending.isEmpty() ? null : pending.first()) != null && tg.dispatchTimeNs <= nowNs) {
            pending.pollFirst();
            tg.pending = false;
            dispatch(tg, ThrottleGroup.READ, ThrottleGroup.QUANTUM_READS, nowNs, resumer);
            dispatch(tg, ThrottleGroup.WRITE, ThrottleGroup.QUANTUM_WRITES, nowNs, resumer);
            if (tg.queuedTotal() > 0) updateDispatchTime(tg, nowNs);
        }
    }

    /** Moves up to {@code quantum} requests that fit out of {@code tg}, one level up. */
    private void dispatch(ThrottleGroup tg, int dir, int quantum, long nowNs, Resumer resumer) {
        IoRequest head;
        for (int n = 0; n < quantum && (head = tg.peek(dir)) != null && tg.dispatchWaitNs(head, dir, nowNs) == 0; n++) {
            dispatchOne(tg, dir, nowNs, resumer);
        }
    }

    private void dispatchOne(ThrottleGroup tg, int dir, long nowNs, Resumer resumer) {
        IoRequest io = tg.pop(dir, nowNs);
        tg.charge(io, dir);
        ThrottleGroup parent = tg.parent;
        if (parent.isRoot()) {
            queued--;
            resumer.resume(io);
        } else {
            if (parent.add(io, tg.qnodeOnParent[dir], dir)) updateDispatchTime(parent, nowNs);
        }
        tg.trim(dir, nowNs);
    }

    /**
     * Finds the request wherever it waits on its way up the tree and drops it. What the levels
     * below already charged for it stays charged: it was admitted there, as a bio dispatched by
     * a child group is.
     */
    @Override
    public boolean cancel(IoRequest io, PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        int dir = direction(io);
        ThrottleGroup tg = state(dg);
        Qnode qnode = tg.qnodeOnSelf[dir];
        while (!tg.isRoot()) {
            if (tg.remove(io, qnode, dir)) {
                queued--;
                updateDispatchTime(tg, nowNs);
                return true;
            }
            qnode = tg.qnodeOnParent[dir];
            tg = tg.parent;
        }
        return false;
    }

    @Override
    public long nextWakeNs() {
        return pending.isEmpty() ? Long.MAX_VALUE : pending.first().dispatchTimeNs;
    }

    /**
     * tg_set_limit for one pair: copies {@code bps} and {@code iops} into {@code intoBps} and
     * {@code intoIops} (its io.max, or its share) and {@link #apply applies} them.
     */
    void setLimits(PolicyDeviceGroup dg, long[] intoBps, long[] intoIops, long[] bps, long[] iops, long nowNs) {
        System.arraycopy(bps, 0, intoBps, 0, 2);
        System.arraycopy(iops, 0, intoIops, 0, 2);
        apply(dg, nowNs);
    }

    /**
     * tg_conf_updated for one pair whose io.max, io.max.burst or share was just set: what they
     * enforce applies now, and waiting requests get a new dispatch time; the caller recomputes
     * the subtree's rules.
     */
    void apply(PolicyDeviceGroup dg, long nowNs) {
        ThrottleGroup tg = state(dg);
        tg.updateEffective(nowNs);
        if (tg.pending || tg.queuedTotal() > 0) updateDispatchTime(tg, nowNs);
    }

    @Override
    public void onGroupOffline(PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        ThrottleGroup tg = state(dg);
        tg.canceling = true;
        if (tg.pending) pending.remove(tg);
        tg.pending = false;
        for (int dir = ThrottleGroup.READ; dir <= ThrottleGroup.WRITE; dir++) {
            while (tg.queuedCount[dir] > 0) dispatchOne(tg, dir, nowNs, resumer);
        }
    }

    private static int direction(IoRequest io) {
        return io.op().direction().ordinal();
    }
}
