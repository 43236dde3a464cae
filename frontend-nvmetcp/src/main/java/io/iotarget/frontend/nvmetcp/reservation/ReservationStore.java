package io.iotarget.frontend.nvmetcp.reservation;

import java.util.List;

/**
 * Where the namespaces' reservations live: in this server ({@link LocalReservationStore}) or in
 * the cluster's etcd, shared by every node that serves the same namespace
 * ({@link EtcdReservationStore}). A namespace is a key, {@code SUBSYSTEM-NQN/NSID}. Any thread:
 * {@link #read} and {@link #replace} may block (a round trip, an fsync), so only the
 * reservation threads call them (several namespaces' at once), never an event loop nor a
 * thread holding the configuration lock.
 */
public interface ReservationStore extends AutoCloseable {
    /** The namespace's state, {@link ReservationState#EMPTY} when it has none. */
    ReservationState read(String key) throws StoreException;

    /**
     * Stores {@code next} if the namespace's version is still {@code next.version() - 1}, and
     * tells the other nodes (their {@link Listener}) about the change and its notices, in one
     * atomic step. False when another node changed it first (read again and retry).
     */
    boolean replace(String key, ReservationState next, List<ReservationState.Notice> notices) throws StoreException;

    /**
     * {@link #replace(String, ReservationState, List)}, made by a preempt-and-abort when
     * {@code abort}: a store that can tells the other nodes so ({@link Listener#changed}), and
     * they drop what a policy holds of the preempted hosts too.
     */
    default boolean replace(String key, ReservationState next, List<ReservationState.Notice> notices, boolean abort) throws StoreException {
        return replace(key, next, notices);
    }

    /** Whether other nodes share this store: then its states are re-read and changes heard of ({@link #listen}). */
    boolean shared();

    /** Whether the store keeps a state whose PTPL is set across this server's restart (Identify's RESCAP bit 0). */
    boolean persistent();

    /** Changes other nodes make are reported to {@code listener}, on a thread of the store's. */
    void listen(Listener listener);

    // ---------------------------------------------------------------- acknowledgements (a shared store's; no-ops otherwise)

    /** This node follows {@code key} from now on: a change waits for its acknowledgement (before its first read). */
    default void opened(String key) throws StoreException {
    }

    /** This node refuses what {@code version} of {@code key} forbids and nothing checked against an older one is in its backend. */
    default void acknowledge(String key, long version) throws StoreException {
    }

    /** This node no longer follows {@code key}: changes need not wait for it. */
    default void closed(String key) {
    }

    /** How a wait for the other nodes' acknowledgements ended ({@link #awaitAcknowledged}). */
    enum Acknowledged {
        /** Every other node that follows the key acknowledged the version, or is gone from the store. */
        ALL,
        /** This node's own lease was lost or given up meanwhile: it cannot vouch for anything (a path error). */
        FENCED,
        /** Neither within the bound: a node keeps a lease the store does not expire; nothing is proved. */
        TIMED_OUT,
        /** A node whose lease ended could not be fenced at the storage (docs/rbd.md): a write it passed its fence with may still land. */
        UNFENCED
    }

    /**
     * Waits until every other node that follows {@code key} has acknowledged {@code version}, or
     * is gone from the store (its lease expired or was given up: it fenced itself before, by its
     * own deadline), while this node holds its own lease, at most {@code timeoutNs}. Only
     * {@link Acknowledged#ALL} proves the change holds on every node.
     */
    default Acknowledged awaitAcknowledged(String key, long version, long timeoutNs) throws StoreException {
        return Acknowledged.ALL;
    }

    /** Releases the store's connections and threads. */
    @Override
    void close();

    /** Another node changed a namespace's state; {@code abort}: by a preempt-and-abort (false where the store cannot tell). */
    interface Listener {
        void changed(String key, long version, List<ReservationState.Notice> notices, boolean abort);
    }

    /** The store could not be reached or refused the command. */
    class StoreException extends Exception {
        private static final long serialVersionUID = 1L;

        public StoreException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
