package io.iotarget.iocontrol.chain;

import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.host.ConfigChange;
import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.pressure.Pressure;
import io.iotarget.iocontrol.stat.HeldTime;
import io.iotarget.model.Device;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * The policy chain: every request's way through the policies, in the order of the list it was
 * built with, and io.stat's count where the kernel's {@code blk_cgroup_bio_start} sits (after
 * the policies that {@linkplain IoPolicy#precedesStat() precede it}).
 *
 * <pre>
 *  admit(io) ─► policy 0 (throttle) ─► count io.stat ─► policy 1 (latency) ─► policy 2 (cost) ─► true
 *                    │ parked                                │ parked               │ parked
 *                    └──── releaseDue(now) / complete(io) / configuration ──────────┴──► ready ─► sink
 *  issue(io), complete(io): the policies that admitted io (its stage bits) and track completions
 *  cancel(io): the policy that has io parked (its highest stage bit)
 * </pre>
 *
 * <p>Every hook runs in one kind of locked section, {@link #enter} ... {@link #leave}: the
 * device's lock, a time that never goes back, and on the way out the device's next wake-up
 * recomputed, the requests that policies resumed drained from the ready list (to the caller's
 * sink, outside the lock) or, when the caller has no sink, left for {@link #releaseDue} with
 * the owner told through the {@link ReleaseSignal}.
 *
 * <p>The chain also measures what the policies cost the requests, into the charged pair's
 * {@code DeviceGroup.held()} and {@link ChargedPair#latency()}: the time from each park to
 * its release or cancel, by the stage that parked ({@link HeldTime}), the issuer delays
 * {@link #complete} returns, and every completion's latency since the request entered the
 * controller ({@link IoRequest#submitNs()}; abandoned and aborted requests are not samples).
 *
 * <p>Threads: any thread. The IO path takes no lock when no policy applies to a request (only
 * striped counters are touched); otherwise it takes the device's lock, as the kernel takes the
 * queue lock. No clock: time comes in as {@code nowNs}.
 */
public final class PolicyChain {
    /** Bits of {@link IoRequest#policyFlags()} the chain uses to remember which stages admitted a request. */
    public static final int STAGE_BITS_MASK = 0xff;

    private final List<IoPolicy> policies;
    /** The stage before which io.stat counts a request: the number of leading policies that precede it. */
    private final int statStage;
    private final DeviceRegistry<?> registry;
    /** What the time a request spends parked at each stage counts as; null for a policy without a {@link HeldTime}. */
    private final HeldTime[] heldByStage;
    private volatile ReleaseSignal signal = ReleaseSignal.NONE;
    /** io.pressure: told when a request parks and when it leaves its last policy. */
    private final Pressure pressure = new Pressure();

    /**
     * @param policies in chain order; those that {@linkplain IoPolicy#precedesStat() precede
     *                 io.stat} first
     */
    public PolicyChain(List<IoPolicy> policies, DeviceRegistry<?> registry) {
        if (policies.size() > Integer.bitCount(STAGE_BITS_MASK)) throw new IllegalArgumentException("too many policies");
        int stat = 0;
        while (stat < policies.size() && policies.get(stat).precedesStat()) stat++;
        for (int i = stat; i < policies.size(); i++) {
            if (policies.get(i).precedesStat()) {
                throw new IllegalArgumentException(policies.get(i).name() + " precedes io.stat and must come before " + policies.get(stat).name());
            }
        }
        this.policies = List.copyOf(policies);
        this.statStage = stat;
        this.registry = registry;
        this.heldByStage = new HeldTime[policies.size()];
        for (int i = 0; i < heldByStage.length; i++) heldByStage[i] = HeldTime.parkedBy(policies.get(i).name());
    }

    /** Where to ask for {@link #releaseDue} calls; set once by the owner. */
    public void releaseSignal(ReleaseSignal signal) {
        this.signal = signal;
    }

    /** io.pressure's tracker, which this chain tells where requests park and resume. */
    public Pressure pressure() {
        return pressure;
    }

    /** The policies in chain order. */
    public List<IoPolicy> policies() {
        return policies;
    }

    // ---------------------------------------------------------------- devices and pairs

    /**
     * The chain for a new device: each policy's instance on it, and the root group's pair, which
     * {@code rootPair} makes. Not yet in the registry.
     *
     * @param queueDepth requests the device's dispatch queue runs at once, &gt; 0
     */
    public DeviceControl attach(Device device, int queueDepth, Function<DeviceControl, ChargedPair> rootPair) {
        if (queueDepth <= 0) throw new IllegalArgumentException("queueDepth " + queueDepth + " (expected: > 0)");
        DeviceControl dc = new DeviceControl(device, queueDepth, policies.size());
        for (int i = 0; i < policies.size(); i++) {
            int stage = i;
            dc.policies[i] = policies.get(i).attach(dc);
            dc.resumers[i] = io -> resume(dc, io, stage + 1);
            if (dc.policies[i].tracksCompletions()) dc.trackingStages |= 1 << i;
        }
        dc.root = rootPair.apply(dc);
        return dc;
    }

    /** Each policy's state for a new (group, device) pair, whose parent pair is complete. Under the device lock. */
    public Object[] newGroupStates(ChargedPair dg) {
        DeviceControl dc = dg.device();
        dc.lock.lock();
        try {
            Object[] states = new Object[dc.policies.length];
            for (int i = 0; i < states.length; i++) states[i] = dc.policies[i].newGroupState(dg);
            return states;
        } finally {
            dc.lock.unlock();
        }
    }

    /** Runs a configuration change on the pair in a locked section; what it releases goes out through {@link #releaseDue}. */
    public void configure(ChargedPair dg, long nowNs, ConfigChange change) {
        DeviceControl dc = dg.device();
        long now = enter(dc, nowNs);
        try {
            change.apply(dg, now);
        } finally {
            leave(dc, false);
        }
    }

    /** The pair's group goes away: every policy lets go of what it parked there. */
    public void offline(ChargedPair dg, long nowNs) {
        DeviceControl dc = dg.device();
        long now = enter(dc, nowNs);
        try {
            for (int i = 0; i < dc.policies.length; i++) dc.policies[i].onGroupOffline(dg, now, dc.resumers[i]);
        } finally {
            leave(dc, false);
        }
    }

    /**
     * The device goes away: marked removed, and every pair's parked requests released, which
     * are returned (to fail in dispatch). Stage by stage, and {@code pairsChildrenFirst}: what a
     * stage releases moves on to a later stage or (in io.max's hierarchy) up to the parent, so
     * each queue is emptied only after everything that can still land in it has.
     */
    public List<IoRequest> detach(DeviceControl dc, List<? extends ChargedPair> pairsChildrenFirst, long nowNs) {
        dc.removed = true;
        List<IoRequest> released;
        long now = enter(dc, nowNs);
        try {
            for (int i = 0; i < dc.policies.length; i++) {
                for (ChargedPair dg : pairsChildrenFirst) dc.policies[i].onGroupOffline(dg, now, dc.resumers[i]);
            }
        } finally {
            released = leave(dc, true);
        }
        return released == null ? List.of() : released;
    }

    // ---------------------------------------------------------------- IO path

    /**
     * Accounts the request and runs it through the chain, charged to {@code dg} (its group's
     * pair on its device).
     *
     * @return true when it may be dispatched now; false when a policy parked it (it will come
     *         out of {@link #releaseDue}, {@link #complete} or {@link #cancel} later)
     */
    public boolean admit(IoRequest io, ChargedPair dg, long nowNs) {
        DeviceControl dc = dg.device();
        io.policyGroup(dg);
        boolean anyApplies = false;
        for (DevicePolicy p : dc.policies) {
            if (p.applies(io, dg)) {
                anyApplies = true;
                break;
            }
        }
        if (!anyApplies) {
            account(io, dg);
            return true;
        }
        boolean admitted;
        long now = enter(dc, nowNs);
        try {
            admitted = advance(dc, io, dg, 0, now);
            if (!admitted) pressure.parked(io, now);
        } finally {
            leave(dc, false);
        }
        return admitted;
    }

    /** The request is leaving for the backend: policies that admitted it learn the issue time. */
    public void issue(IoRequest io, long nowNs) {
        if ((io.policyFlags() & STAGE_BITS_MASK) == 0) return;     // no policy took it: nothing to look up
        DeviceControl dc = controlOf(io);
        if (dc == null) return;
        int stages = io.policyFlags() & dc.trackingStages;
        if (stages == 0) return;
        ChargedPair dg = (ChargedPair) io.policyGroup();
        long now = enter(dc, nowNs);
        try {
            for (int i = 0; i < dc.policies.length; i++) {
                if ((stages & (1 << i)) != 0) dc.policies[i].onIssue(io, dg, now);
            }
        } finally {
            leave(dc, false);
        }
    }

    /**
     * The backend finished the request: policies that admitted it see the completion, and any
     * request that this frees (a depth slot, say) goes to {@code sink}, outside the lock.
     *
     * @return how long the issuer must wait before hearing of the completion, in ns (iocost's
     *         delay for a group in debt); 0 to report it now
     */
    public long complete(IoRequest io, long nowNs, Consumer<IoRequest> sink) {
        ChargedPair charged = (ChargedPair) io.policyGroup();
        if (charged != null && io.status() != IoStatus.ABORTED) charged.latency().record(nowNs - io.submitNs());
        if ((io.policyFlags() & STAGE_BITS_MASK) == 0) return 0;
        DeviceControl dc = controlOf(io);
        if (dc == null) return 0;
        int stages = io.policyFlags() & dc.trackingStages;
        if (stages == 0) return 0;
        // The pair that was charged, not the group's current one: if io was enabled below it
        // meanwhile, iocost must still see its in-flight cost come back, or it never idles.
        ChargedPair dg = (ChargedPair) io.policyGroup();
        long holdNs = 0;
        List<IoRequest> released;
        long now = enter(dc, nowNs);
        try {
            for (int i = 0; i < dc.policies.length; i++) {
                if ((stages & (1 << i)) != 0) holdNs = Math.max(holdNs, dc.policies[i].onComplete(io, dg, now, dc.resumers[i]));
            }
            if (holdNs > 0) dg.addHeld(HeldTime.ISSUER_DELAY, holdNs);
        } finally {
            released = leave(dc, true);
        }
        deliver(released, sink);
        return holdNs;
    }

    /**
     * The request's issuer has gone away: if a policy still has it parked, it is dropped there
     * (never dispatched, never completed by the chain) and true is returned; false when it is
     * not parked (admitted, on the backend, or done). Requests this frees go to {@code sink}.
     */
    public boolean cancel(IoRequest io, long nowNs, Consumer<IoRequest> sink) {
        DeviceControl dc = controlOf(io);
        int stages = io.policyFlags() & STAGE_BITS_MASK;
        if (dc == null || stages == 0) return false;
        // The stage that parked it is the last one that took it.
        int stage = 31 - Integer.numberOfLeadingZeros(stages);
        ChargedPair dg = (ChargedPair) io.policyGroup();
        boolean cancelled;
        List<IoRequest> released;
        long now = enter(dc, nowNs);
        try {
            cancelled = stage < dc.policies.length && dc.policies[stage].cancel(io, dg, now, dc.resumers[stage]);
            if (cancelled) {
                countHeld(io, stage, now);
                pressure.released(io, now);
            }
            // The stages before it passed it on: it will never complete there either (rq_qos_cleanup).
            for (int i = 0; cancelled && i < stage; i++) {
                if ((stages & dc.trackingStages & (1 << i)) != 0) dc.policies[i].cleanup(io, dg, now, dc.resumers[i]);
            }
        } finally {
            released = leave(dc, true);
        }
        deliver(released, sink);
        return cancelled;
    }

    /** Hands every parked request whose time has come, on every device, to {@code sink}. */
    public void releaseDue(long nowNs, Consumer<IoRequest> sink) {
        for (DeviceRegistry.Entry<?> e : registry.snapshot()) {
            if (e == null) continue;
            DeviceControl dc = e.control();
            if (dc.nextWakeNs > nowNs && !dc.readyPending) continue;
            List<IoRequest> released;
            long now = enter(dc, nowNs);
            try {
                dc.readyPending = false;
                for (int i = 0; i < dc.policies.length; i++) dc.policies[i].releaseDue(now, dc.resumers[i]);
            } finally {
                released = leave(dc, true);
            }
            deliver(released, sink);
        }
    }

    /** The earliest time {@link #releaseDue} has work; {@link Long#MAX_VALUE} when nothing waits. */
    public long nextReleaseNs() {
        long next = Long.MAX_VALUE;
        for (DeviceRegistry.Entry<?> e : registry.snapshot()) {
            if (e == null) continue;
            DeviceControl dc = e.control();
            if (dc.readyPending) return Long.MIN_VALUE;
            next = Math.min(next, dc.nextWakeNs);
        }
        return next;
    }

    // ---------------------------------------------------------------- the locked section

    /**
     * Takes the device's lock and returns the section's time: {@code nowNs}, or the device's
     * latest if that is later. Callers read the clock before they take the lock, so under
     * contention a time can arrive that the device has already passed; policies must never see
     * time go back (an io.max slice that started later would be rolled back and its charges
     * wiped). Always paired with {@link #leave} in a finally block.
     */
    private static long enter(DeviceControl dc, long nowNs) {
        dc.lock.lock();
        dc.wakeAtEntryNs = dc.nextWakeNs;
        if (nowNs > dc.lockedNowNs) dc.lockedNowNs = nowNs;
        return dc.lockedNowNs;
    }

    /**
     * Ends the section: recomputes the device's next wake-up and drains the ready list, then
     * unlocks. With {@code drain}, the caller delivers what is returned (null for nothing) to
     * its sink; without, resumed requests stay for {@link #releaseDue} and the owner is told to
     * call it now. Either way the owner is told when the next wake-up moved earlier.
     */
    private List<IoRequest> leave(DeviceControl dc, boolean drain) {
        try {
            long next = Long.MAX_VALUE;
            for (DevicePolicy p : dc.policies) next = Math.min(next, p.nextWakeNs());
            dc.nextWakeNs = next;
            List<IoRequest> released = null;
            if (!dc.ready.isEmpty()) {
                if (drain) {
                    released = new ArrayList<>(dc.ready);
                    dc.ready.clear();
                } else {
                    dc.readyPending = true;
                    signal.releaseBy(Long.MIN_VALUE);
                    return null;
                }
            }
            if (next < dc.wakeAtEntryNs) signal.releaseBy(next);
            return released;
        } finally {
            dc.lock.unlock();
        }
    }

    private static void deliver(List<IoRequest> released, Consumer<IoRequest> sink) {
        if (released != null) released.forEach(sink);
    }

    /** The live chain state of the request's device; null once it was removed (even if its index was reused). */
    public DeviceControl controlOf(IoRequest io) {
        DeviceControl dc = registry.control(io.device());
        return dc != null && !dc.removed ? dc : null;
    }

    /** Continues a parked request after stage {@code fromStage - 1}. Device lock held. */
    private void resume(DeviceControl dc, IoRequest io, int fromStage) {
        countHeld(io, fromStage - 1, dc.lockedNowNs);
        ChargedPair dg = existingDeviceGroup(io, dc);
        if (advance(dc, io, dg, fromStage, dc.lockedNowNs)) {
            pressure.released(io, dc.lockedNowNs);
            dc.ready.add(io);
        }
    }

    /** Runs stages {@code fromStage..} on the request, counting it in io.stat on the way. Device lock held. */
    private boolean advance(DeviceControl dc, IoRequest io, ChargedPair dg, int fromStage, long nowNs) {
        DevicePolicy[] chain = dc.policies;
        for (int i = fromStage; i < chain.length; i++) {
            if (i == statStage) account(io, dg);
            DevicePolicy p = chain[i];
            if (!p.applies(io, dg)) continue;
            io.policyFlags(io.policyFlags() | (1 << i));
            io.policyGroup(dg);
            if (!p.admit(io, dg, nowNs, dc.resumers[i])) {
                io.policyHeldSinceNs(nowNs);
                return false;
            }
        }
        if (statStage == chain.length && fromStage <= chain.length) account(io, dg);
        return true;
    }

    /** The request leaves the stage that parked it: the time it waited there goes to its charged pair. Device lock held. */
    private void countHeld(IoRequest io, int stage, long nowNs) {
        HeldTime cause = heldByStage[stage];
        if (cause != null) ((ChargedPair) io.policyGroup()).addHeld(cause, nowNs - io.policyHeldSinceNs());
    }

    private static void account(IoRequest io, ChargedPair dg) {
        dg.stats().add(io.op().statBucket(), io.length());
    }

    /**
     * The request's (group, device) state without creating any (callers hold a device lock):
     * the nearest existing one up the tree, as IO of a dying group spills to its parent.
     */
    private static ChargedPair existingDeviceGroup(IoRequest io, DeviceControl dc) {
        int index = dc.device().index();
        // The request's group is the controller's (model names it as an IoGroup), so a PolicyGroup.
        for (PolicyGroup g = ((PolicyGroup) io.group()).effective(); g != null; g = g.parent()) {
            PolicyDeviceGroup dg = g.deviceGroup(index);
            if (dg != null) return ChargedPair.of(dg);
        }
        return dc.root;
    }
}
