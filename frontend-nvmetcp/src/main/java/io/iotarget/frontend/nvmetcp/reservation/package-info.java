/**
 * NVMe persistent reservations (nvmet's {@code resv_enable}), kept on one node or across a
 * cluster (docs/reservations.md).
 *
 * <h2>1. The state and its commands</h2>
 * Per namespace, one {@link io.iotarget.frontend.nvmetcp.reservation.ReservationState}: the
 * registrants (host identifier, key), the holder and its type (1..6), the generation, PTPL, and
 * a version. Register, Acquire (preempt, preempt-and-abort), Release (clear) and Set Features
 * PTPL are pure functions from a state to an outcome (status, next state, notices), nvmet's
 * {@code pr.c} semantics. A host is its 128-bit Host Identifier from Connect, so all its
 * controllers, through any port of any node, are one registrant. The package decides on those
 * identifiers alone ({@code NamespaceReservation.check(hostIdHigh, hostIdLow, write)}) and
 * never sees a controller or a command slot: commands hand it a callback for their status, and
 * the target delivers notices to its controllers ({@code Reservations.Hosts}).
 *
 * <h2>2. One store, compare-and-set</h2>
 * The state lives in a {@link io.iotarget.frontend.nvmetcp.reservation.ReservationStore}, keyed
 * {@code SUBSYSTEM-NQN/NSID}: in the server ({@link io.iotarget.frontend.nvmetcp.reservation.LocalReservationStore};
 * with a {@code server.state}, the PTPL states also in a file beside it), or in the cluster's
 * etcd ({@link io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore}),
 * which every node serving the namespace shares. A command runs off the event
 * loops in its namespace's turn ({@link io.iotarget.frontend.nvmetcp.reservation.Reservations}:
 * per namespace, one lane of commands and one of store steps, on virtual threads, so no
 * namespace's commands wait for another's): read the state from the store, apply, store the
 * result only if the version is unchanged (a transaction on the key's revision; else read again). Nothing is granted
 * that the store has not taken: a node that cannot reach it answers reservation commands with
 * ANA Inaccessible, a path error, and grants nothing. The new copy is then installed here and
 * the change waits for its drain (section 3), and in a cluster for every live node's
 * acknowledgement; preempt-and-abort first drops what a policy still holds of the preempted
 * hosts here.
 *
 * <h2>3. The IO path reads a copy</h2>
 * Each node keeps a copy of every enabled namespace's state
 * ({@link io.iotarget.frontend.nvmetcp.reservation.NamespaceReservation}); the access check
 * (nvmet's table: who may read, who may write) reads it with one volatile load and no lock, so
 * no IO waits for the store. The copy is replaced after each change this node makes; etcd's
 * watch reports every change (key, version, notices) and the other nodes re-read the key on
 * hearing it; every {@code interval_ms} each node re-reads all its keys anyway (a watch that
 * broke and is being started again).
 * Enabling a namespace only queues its first read in its lane: until it answers, the copy is
 * unknown and IO on the namespace gets ANA Inaccessible (a path error the host retries), and
 * its reservation commands wait in the lane behind the read.
 *
 * <p>The IO path checks twice: when a command arrives, and again just before the backend (the
 * engine's {@link io.iotarget.model.IoGate}, {@link io.iotarget.frontend.nvmetcp.reservation.NamespaceReservation#enter}),
 * so a command a policy held while the state changed is refused when released. The second
 * check counts the command in an epoch until the backend completes it; installing a copy flips
 * the epoch and waits for the old one to drain (the class comment of NamespaceReservation).
 *
 * <h2>4. What a stale copy may allow, and fencing</h2>
 * Nothing: a change completes once every live node acknowledged it (installed and
 * drained) or lost its lease, and a node fences itself by its lease's own deadline before the
 * store can expire it. A node that cannot install, drain and acknowledge a copy in time gives
 * its lease up rather than acknowledge, so the wait ends with proof; a wait that ends otherwise
 * (the committing node's own lease ended, or a bound only a store that does not expire leases
 * reaches) answers an error, never success (docs/reservations.md, the invariant's item 4). A node
 * that has not heard from the store for {@code lease_ms} (cluster section) can no longer vouch
 * for its copy: it is fenced, and every command on its reservation namespaces gets ANA
 * Inaccessible (a multipath host tries another node) until the store answers again. So a
 * change made through one node holds everywhere within {@code lease_ms}, whatever the network
 * does.
 *
 * <h2>5. Notices</h2>
 * Preempted registrations, released and preempted reservations go to the hosts concerned:
 * each node delivers them to its own controllers of those hosts (log page 0x80, a FIFO of 64
 * per controller, and the event 0x00800006), those of the node that made the change at once,
 * the others' when they hear of it (a notice whose message is lost is lost; the state is not).
 *
 * <h2>6. Watch</h2>
 * The log says when the store fails, when a node fences and when it comes back;
 * {@link io.iotarget.frontend.nvmetcp.reservation.Reservations#unexpectedErrors} counts what
 * the reservation threads survived.
 */
package io.iotarget.frontend.nvmetcp.reservation;
