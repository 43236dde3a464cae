package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.frontend.nvmetcp.wire.Status;

import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * An enabled namespace with {@code resv_enable}: its store key, this node's copy of its state,
 * which the IO path checks without waiting for anything ({@link #check} when a command arrives,
 * {@link #enter} again just before the backend), and its two lanes. The copy is replaced, in its
 * {@link #copy} lane, after each change this node makes and when the store says another node
 * made one (package documentation, sections 2 and 3); a replacement waits until nothing let in
 * against the copy before is still in the backend ({@link #publish}, {@link #drain}). Any thread.
 */
public final class NamespaceReservation {
    final Reservations service;
    final String subsystemNqn;
    final int nsid;
    final String key;
    /** The namespace's reservation commands, one at a time; preempt-and-abort holds it while it waits (nvmet's pr_sem). */
    final SerialLane commands;
    /** Everything that reads the store and replaces the copy (a command's store part, a re-read), one at a time, so no copy replaces a newer one. */
    final SerialLane copy;
    /** A re-read of the interval is queued in the copy lane (one at a time, however long the lane is held up). */
    final AtomicBoolean refreshQueued = new AtomicBoolean();
    /**
     * This node's copy, an immutable state published whole by a volatile write, so the IO path
     * reads a consistent table without a lock; null until the store was first read (then IO is
     * refused as a path error), which {@link Reservations#open} queues rather than waits for.
     */
    private volatile ReservationState state;
    /**
     * The gate's epoch (see the class comment): the parity picks the counter of {@link #passed}
     * that requests let in now join. Written by the copy lane only; read by every IO thread.
     */
    private volatile int epoch;
    /** Requests the gate let in and the backend has not finished, per epoch parity. */
    private final AtomicIntegerArray passed = new AtomicIntegerArray(2);
    /** The copy lane's thread while it waits for an epoch to drain, else null. */
    private volatile Thread drainer;
    /** A change of another node's this node heard of and has not acknowledged yet, or null ({@link Owed}). */
    private final AtomicReference<Owed> owed = new AtomicReference<>();

    /**
     * What this node owes the node that committed a change: the acknowledgement of {@code version}
     * (or a later one), owed since {@code sinceNs} (System.nanoTime()) under membership lease
     * {@code lease}. Reservations' timer gives the lease up when it is owed too long.
     */
    record Owed(long version, long lease, long sinceNs) {
    }

    NamespaceReservation(Reservations service, String subsystemNqn, int nsid, String key, SerialLane commands, SerialLane copy) {
        this.service = service;
        this.subsystemNqn = subsystemNqn;
        this.nsid = nsid;
        this.key = key;
        this.commands = commands;
        this.copy = copy;
    }

    /**
     * The IO path's access check (nvmet_pr_check_cmd_access): SUCCESS, Reservation Conflict
     * (DNR), or ANA Inaccessible while this node cannot vouch for the state (it lost the store
     * for longer than the lease, or never read it): a path error, so a multipath host tries a
     * node that can. The host is its Host Identifier (Connect's HOSTID) in two halves. No
     * allocation, no lock.
     */
    public int check(long hostIdHigh, long hostIdLow, boolean write) {
        ReservationState s = state;
        if (s == null || service.fenced()) return Status.ANA_INACCESSIBLE;
        return s.allows(hostIdHigh, hostIdLow, write) ? Status.SUCCESS : Status.RESERVATION_CONFLICT | Status.DNR;
    }

    /**
     * Whether this node cannot vouch for the namespace now (fenced, or its copy unknown): the
     * ANA log page then shows the namespace's group Inaccessible here, as the IO path answers.
     * Any thread; a few volatile reads.
     */
    public boolean unavailable() {
        return state == null || service.fenced();
    }

    /** This node's copy, null while unknown (not yet read since enable, or the store failed every read since). Any thread. */
    public ReservationState state() {
        return state;
    }

    /** The namespace is disabled: this node stops following its state (the state itself stays in the store). Configuration thread. */
    public void close() {
        service.close(this);
    }

    // ---------------------------------------------------------------- the gate

    /*
     * The gate and its epochs. The IO path checks a command twice: when it arrives (IoCommands,
     * check above) and again when it is about to reach the backend (the engine's IoGate, enter):
     * between the two a policy (io.max, iocost, io.latency) or a buffer wait may hold it for
     * seconds. A change must also know when nothing let in against the copy before it is still
     * in the backend. So:
     *
     *   enter:   e = epoch; passed[e & 1]++; if epoch moved meanwhile, undo and retry;
     *            then read the copy and decide; a refusal undoes the count.
     *   leave:   passed[e & 1]-- at the backend's completion; the last one wakes the drainer.
     *   install: copy = next; epoch++; wait until passed[old & 1] is 0.
     *
     * All volatile/atomic, so in their single total order a request either counted itself in
     * the old epoch before the install read the counter (and the install waits for it) or read
     * the epoch after the flip (and, having counted itself after the new copy was written,
     * reads the new copy). The retry keeps a request that read an old epoch from hiding in a
     * counter a later install does not wait for. Installs are serialised by the copy lane and
     * each waits for its drain before the next flips, so the two counters never mix epochs (but
     * for a drain given up at its deadline: logged).
     */

    /**
     * The engine's gate for a request of host ({@code hostHigh}, {@code hostLow}) on this
     * namespace: OK (counted as in the backend until {@link #leave}), FORBIDDEN (the state
     * forbids it: Reservation Conflict) or UNAVAILABLE (this node cannot vouch for the state:
     * ANA Inaccessible). Any thread; no allocation, no lock.
     */
    public IoStatus enter(long hostHigh, long hostLow, IoRequest io) {
        int e;
        for (;;) {
            e = epoch;
            passed.getAndIncrement(e & 1);
            if (epoch == e) break;
            leave(e);
        }
        ReservationState s = state;
        IoStatus verdict = s == null || service.fenced() ? IoStatus.UNAVAILABLE
                : s.allows(hostHigh, hostLow, io.op().direction() == IoOp.Direction.WRITE) ? IoStatus.OK : IoStatus.FORBIDDEN;
        if (verdict != IoStatus.OK) {
            leave(e);
            return verdict;
        }
        io.gateTicket(e);
        return IoStatus.OK;
    }

    /** The backend finished a request {@link #enter} let in. Any thread (the completing one). */
    public void leave(IoRequest io) {
        leave(io.gateTicket());
    }

    private void leave(int e) {
        if (passed.decrementAndGet(e & 1) != 0) return;
        Thread t = drainer;
        if (t != null) LockSupport.unpark(t);
    }

    /**
     * Makes {@code s} this node's copy for both checks and opens a new epoch; returns the epoch
     * before, for {@link #drain}, or -1 when {@code s} is the copy already (nothing to wait
     * for). The copy lane.
     */
    int publish(ReservationState s) {
        if (s.equals(state)) return -1;
        boolean wasUnknown = state == null;
        int old = epoch;
        state = s;
        epoch = old + 1;
        if (wasUnknown) service.copyKnownChanged();
        return old;
    }

    /**
     * This node cannot believe what the store said (a revision older than one it has seen, a
     * key gone that it has seen): the copy becomes unknown, so IO gets ANA Inaccessible until
     * a read it can believe; returns the epoch before, for {@link #drain}. The copy lane.
     */
    int fence() {
        if (state == null) return -1;
        int old = epoch;
        state = null;
        epoch = old + 1;
        service.copyKnownChanged();
        return old;
    }

    /**
     * Waits until no request the gate let in during {@code epoch} is still in the backend, at
     * most {@code timeoutNs}; true when drained. A negative epoch (nothing published) is
     * drained already. The copy lane (parks its virtual thread).
     */
    boolean drain(int epoch, long timeoutNs) {
        if (epoch < 0) return true;
        int at = epoch & 1;
        if (passed.get(at) == 0) return true;
        long deadlineNs = System.nanoTime() + timeoutNs;
        drainer = Thread.currentThread();
        try {
            while (passed.get(at) != 0) {               // after the drainer is set: the last leave sees it, or we see its count
                long leftNs = deadlineNs - System.nanoTime();
                if (leftNs <= 0) return false;
                LockSupport.parkNanos(this, leftNs);
            }
            return true;
        } finally {
            drainer = null;
        }
    }

    /** The store's watch told of {@code version} under {@code lease}: owed from {@code nowNs} unless owed already under that lease. The store's thread. */
    void owe(long version, long lease, long nowNs) {
        owed.accumulateAndGet(new Owed(version, lease, nowNs),
                              (was, now) -> was == null || was.lease() != now.lease() ? now : new Owed(Math.max(was.version(), now.version()), was.lease(), was.sinceNs()));
    }

    /** {@code version} was acknowledged: nothing up to it is owed any more. The copy lane. */
    void settled(long version) {
        owed.updateAndGet(o -> o != null && o.version() <= version ? null : o);
    }

    /** {@code o} is dealt with (the lease given up for it): no longer owed, unless a newer one replaced it. The timer. */
    void forgive(Owed o) {
        owed.compareAndSet(o, null);
    }

    /** The acknowledgement owed now, or null. Any thread. */
    Owed owed() {
        return owed.get();
    }

    /** Requests the gate let in that the backend has not finished, in either epoch (tests, diagnostics). Any thread. */
    public int inBackend() {
        return passed.get(0) + passed.get(1);
    }
}
