package io.iotarget.iocontrol.pressure;

import io.iotarget.model.ControlException;
import io.iotarget.model.IoRequest;

import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;

/**
 * The controller's io.pressure tracker: which tenant queues are stalled or productive, counted
 * into every group up the tree, and the triggers being watched. See the package
 * documentation for the definitions and the cost.
 *
 * <p>Threads: any. One lock for the whole tree, taken when a queue's counted state may change
 * (a first command parked, the last released, an issuer delay, and, while armed, a queue going
 * busy or idle), on reads and on trigger polls. It may be taken under a device lock, never the
 * other way round. No clock: times come in as arguments.
 */
public final class Pressure {
    /** True while productive queues are counted: from the first stall until a period passes with none. Written under the lock. */
    volatile boolean armed;

    // Lock (this).
    private final List<TenantQueue> queues = new ArrayList<>();
    private final List<Trigger> triggers = new ArrayList<>();
    private record PendingDelay(long untilNs, TenantQueue queue) {
    }
    private final PriorityQueue<PendingDelay> delays = new PriorityQueue<>((a, b) -> Long.compare(a.untilNs, b.untilNs));
    private int stalledQueues;
    /** When the last stalled queue stopped being stalled. */
    private long quietSinceNs;
    /** The latest time seen: callers read their clock before the lock, so a time may arrive late. */
    private long lockedNowNs = Long.MIN_VALUE;

    /** A new queue counted in {@code group} (and its ancestors). */
    public synchronized TenantQueue newQueue(PressureGroup group) {
        TenantQueue q = new TenantQueue(this, group);
        queues.add(q);
        return q;
    }

    // ---------------------------------------------------------------- IO path

    /** A policy parked the request. Under its device lock. */
    public void parked(IoRequest io, long nowNs) {
        if (io.queue() instanceof TenantQueue q && q.parked.getAndIncrement() == 0) reconcile(q, nowNs);
    }

    /** A parked request left its policies (passed, cancelled, or let go). Under its device lock. */
    public void released(IoRequest io, long nowNs) {
        if (io.queue() instanceof TenantQueue q && q.parked.decrementAndGet() == 0) reconcile(q, nowNs);
    }

    /** The request's queue owes an issuer delay until {@code untilNs} (io.latency's or iocost's), whoever pauses it. */
    public synchronized void delayed(IoRequest io, long untilNs, long nowNs) {
        if (!(io.queue() instanceof TenantQueue q) || q.closed) return;
        long now = enter(nowNs);
        if (untilNs <= q.delayedUntilNs || untilNs <= now) return;
        q.delayedUntilNs = untilNs;
        delays.add(new PendingDelay(untilNs, q));
        count(q, now);
    }

    /** Re-counts the queue from its counters at {@code nowNs}. */
    synchronized void reconcile(TenantQueue q, long nowNs) {
        count(q, enter(nowNs));
    }

    synchronized void close(TenantQueue q, long nowNs) {
        if (q.closed) return;
        long now = enter(nowNs);
        q.closed = true;
        queues.remove(q);
        count(q, now);
    }

    // ---------------------------------------------------------------- reads and triggers

    /** The group's io.pressure text at {@code nowNs}. */
    public synchronized String read(PressureGroup group, long nowNs) {
        group.advance(enter(nowNs));
        return group.format();
    }

    /** SOME ({@code full} false) or FULL time of the group so far, ns. */
    public synchronized long totalNs(PressureGroup group, boolean full, long nowNs) {
        group.advance(enter(nowNs));
        return group.totalNs(full ? PressureGroup.FULL : PressureGroup.SOME);
    }

    /** Checks a trigger write as the kernel does and forgets it, as a write through a file that is closed at once. */
    public static void check(String text) throws ControlException {
        Trigger.parse(text);
    }

    /** A trigger on {@code group} until it is closed; EINVAL for what the kernel refuses. */
    public synchronized Trigger watch(PressureGroup group, String text, long nowNs) throws ControlException {
        Trigger.Spec spec = Trigger.parse(text);
        long now = enter(nowNs);
        group.advance(now);
        Trigger t = new Trigger(this, group, spec, now);
        triggers.add(t);
        return t;
    }

    /** Triggers that exist now. */
    public synchronized int triggerCount() {
        return triggers.size();
    }

    synchronized boolean poll(Trigger t, long nowNs) {
        if (t.closed) return false;
        long now = enter(nowNs);
        t.group.advance(now);
        return t.update(now, t.group.totalNs(t.spec.state()));
    }

    synchronized void remove(Trigger t) {
        t.closed = true;
        triggers.remove(t);
    }

    // ---------------------------------------------------------------- counting

    /** Takes the section's time, then applies the issuer delays that ended by then, at the time each ended. */
    private long enter(long nowNs) {
        if (nowNs > lockedNowNs) lockedNowNs = nowNs;
        long now = lockedNowNs;
        PendingDelay d;
        while ((d = delays.peek()) != null && d.untilNs <= now) {
            delays.poll();
            if (d.queue.delayedUntilNs == d.untilNs) count(d.queue, d.untilNs);
        }
        if (armed && stalledQueues == 0 && now - quietSinceNs >= PressureGroup.PERIOD_NS) disarm(now);
        return now;
    }

    /** What the queue is at {@code nowNs}: stalled, productive (only counted while armed) or idle; its groups follow. */
    private void count(TenantQueue q, long nowNs) {
        boolean stalled = !q.closed && (q.parked.get() > 0 || q.delayedUntilNs > nowNs);
        if (stalled && !armed) {
            arm(nowNs);
            return;                                     // arming counted every queue, this one too
        }
        boolean productive = armed && !stalled && !q.closed && q.outstanding.get() > 0;
        set(q, stalled, productive, nowNs);
    }

    private void set(TenantQueue q, boolean stalled, boolean productive, long nowNs) {
        if (stalled == q.countedStalled && productive == q.countedProductive) return;
        int stalledDelta = (stalled ? 1 : 0) - (q.countedStalled ? 1 : 0);
        int productiveDelta = (productive ? 1 : 0) - (q.countedProductive ? 1 : 0);
        q.countedStalled = stalled;
        q.countedProductive = productive;
        for (PressureGroup g = q.group; g != null; g = g.parent()) {
            g.advance(nowNs);
            g.stalled += stalledDelta;
            g.productive += productiveDelta;
            g.updateState();
        }
        stalledQueues += stalledDelta;
        if (stalledQueues == 0 && stalledDelta < 0) quietSinceNs = nowNs;
    }

    /** The first stall after a quiet period: from now on productive queues count too, starting with every busy one. */
    private void arm(long nowNs) {
        armed = true;
        for (TenantQueue q : queues) count(q, nowNs);
    }

    /** A period without stalls: busy queues stop being counted, so they cost nothing per command again. */
    private void disarm(long nowNs) {
        armed = false;
        for (TenantQueue q : queues) set(q, false, false, nowNs);
    }
}
