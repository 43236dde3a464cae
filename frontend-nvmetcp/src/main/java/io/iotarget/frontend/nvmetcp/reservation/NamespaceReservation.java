package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.command.Status;
import io.iotarget.frontend.nvmetcp.config.Subsystem;

/**
 * An enabled namespace with {@code resv_enable}: its store key and this node's copy of its
 * state, which the IO path checks without waiting for anything ({@link #check}). The copy is
 * replaced by the reservation thread after each change this node makes, and when the store
 * says another node made one (package documentation, section 3). Any thread.
 */
public final class NamespaceReservation {
    final Reservations service;
    final Subsystem subsystem;
    final int nsid;
    final String key;
    /** This node's copy; null until the store was first read (then every command is refused as a path error). */
    private volatile ReservationState state;

    NamespaceReservation(Reservations service, Subsystem subsystem, int nsid, String key, ReservationState state) {
        this.service = service;
        this.subsystem = subsystem;
        this.nsid = nsid;
        this.key = key;
        this.state = state;
    }

    /**
     * The IO path's access check (nvmet_pr_check_cmd_access): SUCCESS, Reservation Conflict
     * (DNR), or ANA Inaccessible while this node cannot vouch for the state (it lost the store
     * for longer than the lease, or never read it): a path error, so a multipath host tries a
     * node that can. No allocation, no lock.
     */
    public int check(Controller c, boolean write) {
        ReservationState s = state;
        if (s == null || service.fenced()) return Status.ANA_INACCESSIBLE;
        return s.allows(c.hostIdHigh, c.hostIdLow, write) ? Status.SUCCESS : Status.RESERVATION_CONFLICT | Status.DNR;
    }

    /** This node's copy, null when unknown. */
    public ReservationState state() {
        return state;
    }

    /** The namespace is disabled: this node stops following its state (the state itself stays in the store). Configuration thread. */
    public void close() {
        service.close(this);
    }

    /** The reservation thread (or the configuration thread at enable). */
    void state(ReservationState s) {
        state = s;
    }
}
