package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.frontend.nvmetcp.wire.Status;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An enabled namespace with {@code resv_enable}: its store key, this node's copy of its state,
 * which the IO path checks without waiting for anything ({@link #check}), and its two lanes. The
 * copy is replaced, in its {@link #copy} lane, after each change this node makes and when the
 * store says another node made one (package documentation, sections 2 and 3). Any thread.
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
    /** Told whenever a command on the namespace leaves the engine, while preempt-and-abort waits; else null. */
    private volatile Runnable engineLeft;

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

    /** This node's copy, null while unknown (not yet read since enable, or the store failed every read since). Any thread. */
    public ReservationState state() {
        return state;
    }

    /** The namespace is disabled: this node stops following its state (the state itself stays in the store). Configuration thread. */
    public void close() {
        service.close(this);
    }

    /** The copy lane. */
    void state(ReservationState s) {
        state = s;
    }

    /**
     * An IO command on this namespace has left the engine (its slot left the ENGINE phase), or
     * a queue with such commands left its controller: preempt-and-abort, if it waits, looks
     * again. The thread that completed it (an engine thread, a loop); one volatile read when
     * nobody waits. The caller changes the phase first: the waiter installs itself before it
     * looks, so one of the two sees the other.
     */
    public void engineLeft() {
        Runnable waiter = engineLeft;
        if (waiter != null) waiter.run();
    }

    /** Preempt-and-abort's waiter, or null once it is done. The namespace's commands lane has at most one. */
    void engineLeft(Runnable waiter) {
        engineLeft = waiter;
    }
}
