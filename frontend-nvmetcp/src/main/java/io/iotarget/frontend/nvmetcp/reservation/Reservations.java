package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.cluster.Fence;
import io.iotarget.cluster.Membership;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.model.CountedErrorHandler;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.function.IntConsumer;

/**
 * The target's reservations (package documentation): the store, the namespaces open on it,
 * and the threads that run what reads or changes a state, so that no event loop waits for the
 * store. Each namespace has its own lanes ({@link SerialLane}) on a virtual thread per task:
 * one namespace's commands run in order, and never wait for another namespace's (a slow store
 * call, a change's drain). A timer thread, with a
 * shared store, has the open namespaces re-read every interval and decides whether this node
 * may still vouch for its copies ({@link #fenced}). Any thread may call the public methods.
 *
 * <p>ANA: while this node cannot vouch for a namespace's copy (fenced, or the copy unknown),
 * the ANA log page shows the namespace's group Inaccessible here ({@link
 * NamespaceReservation#unavailable}), and the controllers are told of each start and end of
 * that (an ANA change AEN, through {@code anaChanged}) so that a multipath host moves to
 * another path instead of retrying this one. The per-command check stays the safety; the page
 * and the event only tell the host where to go.
 *
 * <p>Re-join: a node whose membership lease ended holds a new one only after {@link Membership}
 * re-joined; from the moment the old one was lost until every open namespace has been read
 * again with a read sent after the re-join, {@link #fenced} stays true, so no copy from before
 * is used (docs/reservations.md, "The invariant", item 7).
 *
 * <p>It knows hosts by their identifiers only: the target's controllers are behind
 * {@link Hosts}, which the target implements, so this package decides and the target delivers.
 */
public final class Reservations implements AutoCloseable {
    /** A command whose compare-and-set loses this many times in a row (other nodes keep changing the state) fails, to be retried by the host. */
    static final int MAX_ATTEMPTS = 16;
    /**
     * The longest a new copy waits for the requests let in against the one before to leave the
     * backend (a backend request, not io.max: what a policy holds is checked again when it is
     * released). Beyond it a cluster node gives up its membership lease rather than acknowledge
     * ({@link #giveUp}); a lone node (no shared store) goes on and the log says so. The host's own
     * timeout is 30 s.
     */
    static final long DRAIN_WAIT_MS = 10_000;
    /**
     * The least a change waits for the other live nodes' acknowledgements. The bound is more when
     * leases are long ({@link #ackBoundNs}): a node that cannot acknowledge within {@link
     * #installBoundNs} gives up its lease, whose key goes at once, or at the lease's expiry when
     * etcd cannot be reached. A wait that outlasts it means the store does not expire leases: the
     * change answers Internal Error, never success.
     */
    static final long ACK_WAIT_MS = 30_000;
    /** Added to the acknowledgement bound beyond the install bound, the interval and two TTLs: scheduling and a slow store. */
    static final long ACK_SLACK_MS = 5_000;
    /** The longest preempt-and-abort waits for the queues' loops to drop the held commands (a loop answers in microseconds). */
    static final long CANCEL_WAIT_MS = 1_000;
    /** How often the lease's deadline is looked at again for the ANA change event (it only moves forward while held). */
    static final long DEADLINE_LOOK_MS = 100;
    private static final System.Logger LOG = System.getLogger(Reservations.class.getName());

    private final Hosts hosts;
    /** Tells the controllers that the ANA log page changed (ANA change AEN); run on {@link #threads}. */
    private final Runnable anaChanged;
    /** Runs the lanes' tasks: a store call may block (a shared store's round trip, a PTPL file's fsync), so on virtual threads, never a loop. */
    private final ExecutorService threads = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("nvmet-resv-", 0).factory());
    /** A shared store's interval: it only hands work to {@link #threads}. */
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("nvmet-resv-timer").factory());
    private final CountedErrorHandler errors = new CountedErrorHandler("nvmet-resv");
    private final Map<String, NamespaceReservation> open = new ConcurrentHashMap<>();
    /** The re-read that tells an idle node it still reaches the store is queued (no namespace open). */
    private final AtomicBoolean contactQueued = new AtomicBoolean();
    private volatile ReservationStore store = new LocalReservationStore();
    private long leaseNs;
    /** When the store last answered (System.nanoTime()); shared stores only. Several namespaces' lanes may move it at once. */
    private final AtomicLong lastContactNs = new AtomicLong();
    /** The membership lease's fence of an etcd store, checked with every command; null for other stores. */
    private volatile Fence leaseFence;
    /** The membership the fence belongs to (an etcd store following one): how this node gives its lease up; else null. */
    private volatile Membership membership;
    /** The store's interval, in ns (a shared store's). */
    private long intervalNs;
    /** {@link #DRAIN_WAIT_MS} in ns; and the acknowledgement bound, 0 for {@link #ackBoundNs}'s own. Tests shorten them ({@link #bounds}). */
    private volatile long drainWaitNs = TimeUnit.MILLISECONDS.toNanos(DRAIN_WAIT_MS);
    private volatile long ackWaitNs;
    /**
     * The IO path's flag: {@link #contactLost} or {@link #rejoining}, folded into one volatile
     * read. Written under {@code this} ({@link #refence}).
     */
    private volatile boolean fenced;
    /** This node has not heard from the shared store for longer than the lease. Timer and lanes. */
    private volatile boolean contactLost = true;
    /**
     * This node's membership lease ended, and not every open namespace has been read again since
     * it re-joined ({@link #rereads}): the copies from before are not used. Under {@code this}.
     */
    private volatile boolean rejoining;
    /** The lease the copies are vouched for under: the one this node last joined with (0: none yet). Under {@code this}. */
    private long servedLease;
    /** When the last re-join was seen (System.nanoTime()): only a read sent after it counts as the re-read. */
    private volatile long rejoinedNs;
    /** The keys of the open namespaces still to be read again after the last re-join. */
    private final Set<String> rereads = ConcurrentHashMap.newKeySet();
    /** Whether this node was fenced when the controllers were last told (ANA change AEN). Under {@code this}. */
    private boolean announcedFenced;
    /** Whether the store failed last time (logged once per outage). */
    private volatile boolean lost;

    /**
     * This node's controllers as the reservations see them: by subsystem, namespace and host
     * identifier. Implemented by the target, which keeps the controllers.
     */
    public interface Hosts {
        /**
         * Delivers {@code notices} of namespace {@code nsid} of subsystem {@code subsystemNqn} to
         * this node's controllers of the hosts they name (log page 0x80, AEN); with {@code abort}
         * (preempt-and-abort), those of the hosts whose registration was preempted drop their
         * commands on the namespace that a policy still holds. Completes once they have. A
         * reservation thread; it may take the configuration lock, and waits for no loop.
         */
        CompletableFuture<Void> deliver(String subsystemNqn, int nsid, List<ReservationState.Notice> notices, boolean abort);
    }

    public Reservations(Hosts hosts) {
        this(hosts, () -> { });
    }

    /**
     * @param anaChanged tells this node's controllers that the ANA log page changed (bumps the
     *                   change count, raises the ANA change AEN); a reservation thread, may take
     *                   the configuration lock
     */
    public Reservations(Hosts hosts, Runnable anaChanged) {
        this.hosts = hosts;
        this.anaChanged = anaChanged;
    }

    /**
     * Keeps reservations in {@code store} from now on, before any namespace with
     * {@code resv_enable} is enabled (the control plane, at start). A shared store is re-read
     * every {@code intervalMs}; a node that has not heard from it for {@code leaseMs} is
     * fenced.
     */
    public void use(ReservationStore store, long intervalMs, long leaseMs) {
        if (!open.isEmpty()) throw new IllegalStateException("namespaces with resv_enable are enabled already");
        ReservationStore previous = this.store;
        this.store = store;
        previous.close();
        if (!store.shared()) return;
        leaseFence = store instanceof EtcdReservationStore etcd ? etcd.fence() : null;
        leaseNs = TimeUnit.MILLISECONDS.toNanos(leaseMs);
        intervalNs = TimeUnit.MILLISECONDS.toNanos(intervalMs);
        membership = store instanceof EtcdReservationStore etcd ? etcd.membership() : null;
        lastContactNs.set(System.nanoTime() - leaseNs - 1);
        synchronized (this) {
            contactLost = true;
            servedLease = leaseFence == null ? 0 : leaseFence.lease();
            announcedFenced = true;
            refence();
        }
        if (store instanceof EtcdReservationStore etcd && etcd.membership() != null) {
            // Told on the membership thread before it grants the next lease: no copy from before is used under it.
            etcd.membership().addListener(new Membership.Listener() {
                @Override
                public void fenced(long lease, String why) {
                    leaseLost();
                }

                @Override
                public void joined(long lease, boolean rejoin) {
                    joinedWith(lease);
                }
            });
        }
        store.listen(this::heard);
        timer.scheduleWithFixedDelay(errors.guard(this::tick), 0, intervalMs, TimeUnit.MILLISECONDS);
        if (leaseFence != null) timer.execute(this::watchDeadline);
    }

    /**
     * Shortens the bounds for a test: a copy's drain ({@link #DRAIN_WAIT_MS}) and the
     * acknowledgement wait ({@link #ackBoundNs}). Before {@link #use}.
     */
    void bounds(long drainWaitMs, long ackWaitMs) {
        drainWaitNs = TimeUnit.MILLISECONDS.toNanos(drainWaitMs);
        ackWaitNs = TimeUnit.MILLISECONDS.toNanos(ackWaitMs);
    }

    /**
     * How long this node may owe an acknowledgement (heard a change, not yet installed, drained
     * and acknowledged it) before it gives up its lease: the drain's bound, the notices' and a
     * store round trip or two (each bounded by the client's timeout, under the lease).
     */
    long installBoundNs() {
        return drainWaitNs + TimeUnit.MILLISECONDS.toNanos(CANCEL_WAIT_MS) + leaseNs;
    }

    /**
     * How long the committing node waits for the others: the install bound of a node that then
     * gives up, the interval its timer needs to notice, two of the lease's TTL (the expiry of a
     * lease etcd could not be told to revoke) and {@link #ACK_SLACK_MS}; at least {@link
     * #ACK_WAIT_MS}.
     */
    long ackBoundNs() {
        if (ackWaitNs > 0) return ackWaitNs;
        Membership m = membership;
        long ttlNs = Math.max(leaseNs, m == null ? 0 : m.ttlNs());
        return Math.max(TimeUnit.MILLISECONDS.toNanos(ACK_WAIT_MS),
                        installBoundNs() + intervalNs + 2 * ttlNs + TimeUnit.MILLISECONDS.toNanos(ACK_SLACK_MS));
    }

    /**
     * On the timer: tells the controllers when the lease's deadline passes (the fence turns by
     * itself; the membership thread may notice only after a keep-alive times out), looking again
     * at the deadline, which keep-alives move, at most every {@link #DEADLINE_LOOK_MS}.
     */
    private void watchDeadline() {
        try {
            announce();
        } catch (RuntimeException e) {
            errors.report(e);
        }
        Fence f = leaseFence;
        long leftNs = f.validUntilNs() - System.nanoTime();
        long lookNs = TimeUnit.MILLISECONDS.toNanos(DEADLINE_LOOK_MS);
        long delayNs = leftNs > 0 ? Math.clamp(leftNs + 1, TimeUnit.MILLISECONDS.toNanos(1), lookNs) : lookNs;
        try {
            timer.schedule(this::watchDeadline, delayNs, TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            // closing
        }
    }

    /** The store in use (tests). */
    ReservationStore store() {
        return store;
    }

    /** Whether a state with PTPL set outlives this server (Identify Namespace RESCAP bit 0). */
    public boolean persistable() {
        return store.persistent();
    }

    /**
     * Whether this node cannot vouch for its copies now: a shared store lost for longer than the
     * lease, or this node's membership lease past its own deadline (etcd). Any thread; a volatile
     * read or two and a clock read.
     */
    boolean fenced() {
        Fence f = leaseFence;
        return fenced || f != null && !f.holds();
    }

    /** What the reservation threads survived unexpectedly (logged, rate-limited); 0 in a healthy target. */
    public long unexpectedErrors() {
        return errors.count();
    }

    /**
     * A namespace with resv_enable is being enabled: it is registered with its state unknown,
     * and its first read is queued in its copy lane, so the caller (the configuration thread,
     * which holds the lock that Connect, Identify and the log pages take on the loops) never
     * waits for the store. Until that read answers, IO on the namespace gets ANA Inaccessible,
     * a path error ({@link NamespaceReservation#check}); reservation commands queue behind the
     * read in the namespace's lanes and run once it is done. A read that fails leaves the state
     * unknown until a later one (the next interval of a shared store) answers. Configuration
     * thread.
     */
    public NamespaceReservation open(String subsystemNqn, int nsid) {
        String key = subsystemNqn + "/" + Integer.toUnsignedString(nsid);
        NamespaceReservation r = new NamespaceReservation(this, subsystemNqn, nsid, key, new SerialLane(threads, errors), new SerialLane(threads, errors));
        open.put(key, r);
        r.refreshQueued.set(true);                      // as an interval's re-read: the timer queues none beside it
        r.copy.execute(errors.guard(() -> {
            try {
                store.opened(r.key);                    // before the read: a change committed meanwhile waits for this node
            } catch (ReservationStore.StoreException e) {
                failed(e);
            }
            refresh(r);
        }));
        return r;
    }

    /** The namespace was disabled. Configuration thread. */
    void close(NamespaceReservation r) {
        open.remove(r.key, r);
        if (rereads.remove(r.key)) rereadDone();
        r.copy.execute(errors.guard(() -> store.closed(r.key)));
    }

    // ---------------------------------------------------------------- commands

    /**
     * Runs {@code command} against the namespace's state and gives {@code answer} the status:
     * read, apply, compare-and-set, retried while another node wins the race. The state changes
     * only in the store first, so a node that cannot reach it grants nothing (ANA Inaccessible:
     * try another path). The queue's loop, which has given the command up and waits for nothing;
     * {@code answer} runs once, on a reservation thread.
     */
    public void change(IntConsumer answer, NamespaceReservation r, Function<ReservationState, ReservationState.Outcome> command) {
        change(answer, r, command, false);
    }

    /**
     * {@link #change}; with {@code abort} (preempt-and-abort) the preempted hosts' commands on
     * the namespace that a policy still holds on this node are dropped too (they end with Abort
     * Requested, never having reached the backend). Either way the answer comes only once no
     * request let in against the state before is still in this node's backend ({@link
     * NamespaceReservation#drain}); requests still held anywhere are checked again by the gate
     * when released. The namespace's lanes, not a thread of the caller.
     */
    public void change(IntConsumer answer, NamespaceReservation r, Function<ReservationState, ReservationState.Outcome> command, boolean abort) {
        r.commands.submit(() -> answer(answer, r.copy.call(() -> apply(r, command, abort))));
    }

    /**
     * Runs {@code fill} (which writes the command's data) with the store's current state, in the
     * namespace's turn, and gives {@code answer} its status. The queue's loop, as {@link #change}.
     */
    public void read(IntConsumer answer, NamespaceReservation r, Function<ReservationState, Integer> fill) {
        r.commands.submit(() -> answer(answer, r.copy.call(() -> {
            try {
                long startNs = System.nanoTime();
                ReservationState s = store.read(r.key);
                contact(startNs);
                install(r, s);
                return fill.apply(s);
            } catch (ReservationStore.StoreException e) {
                failed(r, e);
                return Status.ANA_INACCESSIBLE;
            }
        })));
    }

    /** Answers with the status {@code result} completes with (Internal Error for what it threw); done once answered. */
    private CompletableFuture<Void> answer(IntConsumer answer, CompletableFuture<Integer> result) {
        return result.handle((status, failure) -> {
            if (failure != null) errors.report(failure instanceof CompletionException c && c.getCause() != null ? c.getCause() : failure);
            answer.accept(failure == null ? status : Status.INTERNAL);
            return null;
        });
    }

    /**
     * The store part of {@link #change}: read, apply, compare-and-set (retried while another
     * node wins the race), then install the new copy here — with {@code abort} dropping the
     * preempted hosts' commands a policy holds here — and wait for the drain. Returns the
     * command's status. The namespace's copy lane.
     */
    private int apply(NamespaceReservation r, Function<ReservationState, ReservationState.Outcome> command, boolean abort) {
        try {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                long startNs = System.nanoTime();
                ReservationState before = store.read(r.key);
                contact(startNs);
                ReservationState.Outcome o = command.apply(before);
                if (o.next() == before) {
                    install(r, before);
                    return o.status();
                }
                if (store.replace(r.key, o.next(), o.notices(), abort)) {
                    long version = o.next().version();
                    int old = r.publish(o.next());
                    deliver(r, o.notices(), abort);
                    if (!drain(r, old)) return Status.ANA_INACCESSIBLE;     // gave up its lease: fenced, a path error
                    store.acknowledge(r.key, version);
                    r.settled(version);
                    long boundNs = ackBoundNs();
                    return switch (store.awaitAcknowledged(r.key, version, boundNs)) {
                        case ALL -> o.status();
                        case FENCED -> {
                            // Committed, but this node cannot prove it holds everywhere: a path error, as any fenced node answers.
                            LOG.log(System.Logger.Level.WARNING, "reservation change on " + r.key + " (version " + version + ") committed, but this node lost"
                                                                 + " its membership lease before every other node acknowledged it: answered ANA Inaccessible");
                            yield Status.ANA_INACCESSIBLE;
                        }
                        case TIMED_OUT -> {
                            errors.report(new IllegalStateException("reservation change on " + r.key + " (version " + version + ") committed, but a node"
                                                                    + " neither acknowledged it nor lost its lease within " + TimeUnit.NANOSECONDS.toMillis(boundNs)
                                                                    + " ms (is etcd expiring leases?): answered Internal Error"));
                            yield Status.INTERNAL;                   // no DNR: the host may retry; Report shows the state
                        }
                        case UNFENCED -> {
                            errors.report(new IllegalStateException("reservation change on " + r.key + " (version " + version + ") committed, but a node"
                                                                    + " whose lease ended could not be fenced at the storage: answered Internal Error"));
                            yield Status.INTERNAL;
                        }
                    };
                }
            }
            return Status.INTERNAL;                      // no DNR: the host may try again
        } catch (ReservationStore.StoreException e) {
            failed(r, e);
            return Status.ANA_INACCESSIBLE;
        }
    }

    /**
     * The notices go to this node's controllers of the hosts they name (log page 0x80, AEN); with
     * {@code abort} (preempt-and-abort) the commands on the namespace of the hosts whose
     * registration was preempted that a policy holds here are dropped (on their queues' loops),
     * waited for at most {@link #CANCEL_WAIT_MS}: what is not dropped by then the gate refuses
     * when it is released. The copy lane.
     */
    private void deliver(NamespaceReservation r, List<ReservationState.Notice> notices, boolean abort) {
        if (notices.isEmpty()) return;
        try {
            hosts.deliver(r.subsystemNqn, r.nsid, notices, abort).get(CANCEL_WAIT_MS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException | TimeoutException e) {
            // The gate refuses them when they are released.
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Makes {@code s} the namespace's copy, waits for the drain of the epoch before, and tells
     * the other nodes (a shared store's acknowledgement). The copy lane.
     */
    private boolean install(NamespaceReservation r, ReservationState s) throws ReservationStore.StoreException {
        if (!drain(r, r.publish(s))) return false;
        store.acknowledge(r.key, s.version());
        r.settled(s.version());
        return true;
    }

    /**
     * Waits for the drain of {@code epoch} ({@link NamespaceReservation#drain}), at most {@link
     * #drainWaitNs}; true when drained. A cluster node whose drain cannot finish must not
     * acknowledge: it gives up its lease ({@link #giveUp}) and returns false, so that the node
     * waiting for it sees its key go instead. A node without acknowledgements (no shared store,
     * or no lease) goes on, and the log says so. The copy lane.
     */
    private boolean drain(NamespaceReservation r, int epoch) {
        if (r.drain(epoch, drainWaitNs)) return true;
        String why = "reservation copy of " + r.key + ": requests let in before it were still in the backend after "
                     + TimeUnit.NANOSECONDS.toMillis(drainWaitNs) + " ms";
        if (store.shared() && leaseFence != null) {
            giveUp(why);
            return false;
        }
        errors.report(new IllegalStateException(why + "; answering anyway (no other node waits for this one)"));
        return true;
    }

    /**
     * This node cannot install, drain and acknowledge a copy in time: it must not vouch for its
     * copies any more, so it gives up its membership lease ({@link Membership#relinquish}): it is
     * fenced at once, its acknowledgement keys go with the lease (a committing node stops waiting
     * for it), and it serves again only after re-joining and reading every state. A fence without
     * its membership cannot be given up: the node does not acknowledge, and the others wait for
     * its lease. Any thread.
     */
    private void giveUp(String why) {
        Membership m = membership;
        boolean given = m != null && m.relinquish(why);
        LOG.log(System.Logger.Level.WARNING, why + (given ? ": membership lease given up (fenced; served again after a re-join and a re-read of every state)"
                                                          : ": not acknowledged"));
    }

    // ---------------------------------------------------------------- a shared store

    /** Another node changed {@code key}: re-read it, and deliver its notices here, in the namespace's copy lane. The store's thread. */
    private void heard(String key, long version, List<ReservationState.Notice> notices, boolean abort) {
        NamespaceReservation r = open.get(key);
        if (r == null) return;
        Fence f = leaseFence;
        if (f != null && f.lease() != 0) r.owe(version, f.lease(), System.nanoTime());     // on this thread: a stalled lane still owes it
        r.copy.execute(errors.guard(() -> {
            try {
                ReservationState mine = r.state();
                int old = -1;
                if (mine == null || mine.version() != version) {
                    long startNs = System.nanoTime();
                    ReservationState s = store.read(key);
                    contact(startNs);
                    old = r.publish(s);
                }
                deliver(r, notices, abort);
                if (!drain(r, old)) return;                 // gave up its lease instead
                ReservationState now = r.state();
                if (now != null) {
                    store.acknowledge(r.key, now.version());
                    r.settled(now.version());
                }
            } catch (ReservationStore.StoreException e) {
                failed(r, e);
            }
        }));
    }

    /** Every interval, on the timer: fence when the lease ran out, and have the open namespaces re-read. */
    private void tick() {
        boolean lostNow = System.nanoTime() - lastContactNs.get() > leaseNs;
        if (lostNow && !contactLost) {
            LOG.log(System.Logger.Level.WARNING, "reservation store unreachable for " + TimeUnit.NANOSECONDS.toMillis(leaseNs)
                                                 + " ms: IO on namespaces with resv_enable is refused here (ANA Inaccessible) until it answers");
        }
        if (lostNow != contactLost) {
            synchronized (this) {
                contactLost = lostNow;
                refence();
            }
        }
        Fence f = leaseFence;
        if (f != null) {
            // Without the membership's listener (a store made from a fence alone) the timer sees the lease change.
            long lease = f.lease();
            if (!f.holds() && lease == 0) {
                leaseLost();
            } else if (lease != 0) {
                joinedWith(lease);
            }
        }
        announce();
        overdue();
        for (NamespaceReservation r : open.values()) {
            if (r.refreshQueued.compareAndSet(false, true)) r.copy.execute(errors.guard(() -> refresh(r)));
        }
        // The reads above wait their turn in the copy lanes, behind a change that may wait a lease and more for a cut-off
        // node's acknowledgement: a probe off the lanes keeps a node that does reach the store from fencing itself meanwhile.
        boolean stale = System.nanoTime() - lastContactNs.get() > leaseNs / 2;
        if ((open.isEmpty() || stale) && contactQueued.compareAndSet(false, true)) threads.execute(errors.guard(this::reach));
    }

    /**
     * On the timer: a change heard under the lease held now and not acknowledged within {@link
     * #installBoundNs} (the namespace's lane stalled, a drain or a store call stuck) makes this
     * node give up its lease, so that the committing node sees its key go rather than wait for an
     * acknowledgement that does not come. The timer is a platform thread of its own: it runs when
     * the reservation threads do not.
     */
    private void overdue() {
        Fence f = leaseFence;
        if (f == null) return;
        long lease = f.lease();
        if (lease == 0) return;
        long nowNs = System.nanoTime();
        long boundNs = installBoundNs();
        for (NamespaceReservation r : open.values()) {
            NamespaceReservation.Owed o = r.owed();
            if (o == null || o.lease() != lease || nowNs - o.sinceNs() <= boundNs) continue;
            r.forgive(o);                                           // said once: a fence without its membership would say it every interval
            giveUp("reservation copy of " + r.key + ": version " + o.version() + " heard " + TimeUnit.NANOSECONDS.toMillis(nowNs - o.sinceNs())
                   + " ms ago is not installed, drained and acknowledged yet");
            return;
        }
    }

    /** Reads one open namespace: its first read at enable, then, every interval, a change the watch may have missed (a watch that ended and started again). Its copy lane. */
    private void refresh(NamespaceReservation r) {
        r.refreshQueued.set(false);
        long startNs = System.nanoTime();
        try {
            ReservationState s = store.read(r.key);
            contact(startNs);
            if (install(r, s) && startNs - rejoinedNs > 0 && rereads.remove(r.key)) rereadDone();
        } catch (ReservationStore.StoreException e) {
            failed(r, e);
        }
    }

    /** With no namespace open, or none read for half a lease, one read tells whether the store still answers. A reservation thread. */
    private void reach() {
        contactQueued.set(false);
        long startNs = System.nanoTime();
        try {
            store.read("");
            contact(startNs);
        } catch (ReservationStore.StoreException e) {
            failed(e);
        }
    }

    /** The store answered a request sent at {@code sentNs}. */
    private void contact(long sentNs) {
        if (!store.shared()) return;
        lastContactNs.accumulateAndGet(sentNs, Math::max);
        if (lost) LOG.log(System.Logger.Level.INFO, "reservation store reachable again" + (contactLost ? ": IO on namespaces with resv_enable is served again" : ""));
        lost = false;
        if (contactLost) {
            synchronized (this) {
                contactLost = false;
                refence();
            }
        }
    }

    // ---------------------------------------------------------------- fencing, re-join and ANA

    /** Sets the IO path's flag from its parts, and tells the controllers when the ANA page changed. Under {@code this}. */
    private void refence() {
        assert Thread.holdsLock(this);
        fenced = contactLost || rejoining;
        announce();
    }

    /**
     * The membership lease ended (the membership thread, before it asks for a new one; or the
     * timer): until every open namespace has been read again under a new lease, nothing is served.
     */
    private synchronized void leaseLost() {
        if (servedLease == 0 && !rejoining) return;                 // never joined: nothing was vouched for
        if (!rejoining) LOG.log(System.Logger.Level.WARNING, "membership lease lost: IO on namespaces with resv_enable is refused here (ANA Inaccessible)"
                                                            + " until this node has re-joined and read every state again");
        rejoining = true;
        refence();
    }

    /**
     * This node holds {@code lease} (the membership thread when it re-joined, or the timer):
     * after a lost one, every open namespace's copy becomes unknown and is read again in its copy
     * lane; {@link #rejoining} ends once all have been ({@link #rereadDone}).
     */
    private void joinedWith(long lease) {
        List<NamespaceReservation> again;
        synchronized (this) {
            if (lease == servedLease) return;
            boolean first = servedLease == 0 && !rejoining;
            servedLease = lease;
            if (first) return;
            rejoining = true;
            rejoinedNs = System.nanoTime();
            again = List.copyOf(open.values());
            for (NamespaceReservation r : again) rereads.add(r.key);
            refence();
        }
        LOG.log(System.Logger.Level.INFO, "re-joined with a new membership lease: reading the state of " + again.size() + " namespace(s) again before serving");
        for (NamespaceReservation r : again) {
            r.copy.execute(errors.guard(() -> {
                if (!drain(r, r.fence())) return;                   // the copy from before the lease ended is not believed
                try {
                    // Followed under the new lease before the read, as at open: a change committed between
                    // the read and the acknowledgement waits for this node instead of missing its key.
                    store.opened(r.key);
                } catch (ReservationStore.StoreException e) {
                    failed(e);
                }
                refresh(r);
            }));
        }
        rereadDone();                                               // none open
    }

    /** A namespace was read again after the re-join (or closed): the last one ends {@link #rejoining}. */
    private synchronized void rereadDone() {
        if (!rejoining || !rereads.isEmpty() || servedLease == 0) return;
        Fence f = leaseFence;
        if (f != null && f.lease() != servedLease) return;          // lost again meanwhile: the next join starts over
        rejoining = false;
        LOG.log(System.Logger.Level.INFO, "every namespace read again after the re-join: IO on namespaces with resv_enable is served again");
        refence();
    }

    /** Tells the controllers when whether this node is fenced changed since they were last told. Any thread. */
    private synchronized void announce() {
        boolean now = fenced();
        if (now == announcedFenced) return;
        announcedFenced = now;
        anaNotice();
    }

    /** The ANA log page may read differently now: the controllers hear of it (ANA change AEN) on a reservation thread. */
    void anaNotice() {
        try {
            threads.execute(errors.guard(anaChanged));
        } catch (RejectedExecutionException e) {
            // closing
        }
    }

    /** A namespace's copy became known or unknown (the copy lane): its group's ANA state here changed, unless the node is fenced anyway. */
    void copyKnownChanged() {
        if (!fenced()) anaNotice();
    }

    /**
     * {@link #failed(ReservationStore.StoreException)} for namespace {@code r}; a read this node
     * cannot believe ({@link EtcdReservationStore.StaleException}) also fences the namespace here
     * until a read it can believe. The copy lane.
     */
    private void failed(NamespaceReservation r, ReservationStore.StoreException e) {
        if (e instanceof EtcdReservationStore.StaleException) {
            LOG.log(System.Logger.Level.WARNING, "reservation of " + r.key + " fenced here: " + e.getMessage());
            drain(r, r.fence());
            return;                                     // the store answered: this is no outage
        }
        failed(e);
    }

    private void failed(ReservationStore.StoreException e) {
        if (!lost) LOG.log(System.Logger.Level.WARNING, "reservation store failed (" + e.getMessage() + "): reservation commands are refused (ANA Inaccessible)"
                                                        + " and IO goes on with this node's copies only while its lease holds");
        lost = true;
    }

    /** Stops the threads and closes the store. */
    @Override
    public void close() {
        timer.shutdownNow();
        threads.shutdown();
        try {
            if (!threads.awaitTermination(5, TimeUnit.SECONDS)) threads.shutdownNow();
        } catch (InterruptedException e) {
            threads.shutdownNow();
            Thread.currentThread().interrupt();
        }
        store.close();
    }
}
