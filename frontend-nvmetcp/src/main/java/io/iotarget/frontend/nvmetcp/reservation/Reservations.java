package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.model.CountedErrorHandler;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.IntConsumer;

/**
 * The target's reservations (package documentation): the store, the namespaces open on it,
 * and the threads that run what reads or changes a state, so that no event loop waits for the
 * store. Each namespace has its own lanes ({@link SerialLane}) on a virtual thread per task:
 * one namespace's commands run in order, and never wait for another namespace's (a slow store
 * call, a preempt-and-abort's wait). A timer thread ends preempt-and-abort's waits and, with a
 * shared store, has the open namespaces re-read every interval and decides whether this node
 * may still vouch for its copies ({@link #fenced}). Any thread may call the public methods.
 *
 * <p>It knows hosts by their identifiers only: the target's controllers are behind
 * {@link Hosts}, which the target implements, so this package decides and the target delivers.
 */
public final class Reservations implements AutoCloseable {
    /** A command whose compare-and-set loses this many times in a row (other nodes keep changing the state) fails, to be retried by the host. */
    static final int MAX_ATTEMPTS = 16;
    /** The longest preempt-and-abort waits for the preempted hosts' commands: io.max may hold one for long, and the host's own timeout is 30 s. */
    static final long ABORT_WAIT_MS = 10_000;
    private static final System.Logger LOG = System.getLogger(Reservations.class.getName());

    private final Hosts hosts;
    /** Runs the lanes' tasks: a store call may block (a shared store's round trip, a PTPL file's fsync), so on virtual threads, never a loop. */
    private final ExecutorService threads = Executors.newThreadPerTaskExecutor(Thread.ofVirtual().name("nvmet-resv-", 0).factory());
    /** Preempt-and-abort's deadlines, a shared store's interval: it only hands work to {@link #threads} (or ends a wait). */
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("nvmet-resv-timer").factory());
    private final CountedErrorHandler errors = new CountedErrorHandler("nvmet-resv");
    private final Map<String, NamespaceReservation> open = new ConcurrentHashMap<>();
    /** The re-read that tells an idle node it still reaches the store is queued (no namespace open). */
    private final AtomicBoolean contactQueued = new AtomicBoolean();
    private volatile ReservationStore store = new LocalReservationStore();
    private long leaseNs;
    /** When the store last answered (System.nanoTime()); shared stores only. Several namespaces' lanes may move it at once. */
    private final AtomicLong lastContactNs = new AtomicLong();
    /** This node has not heard from the shared store for longer than the lease: IO on its reservation namespaces is refused. */
    private volatile boolean fenced;
    /** Whether the store failed last time (logged once per outage). */
    private volatile boolean lost;

    /**
     * This node's controllers as the reservations see them: by subsystem, namespace and host
     * identifier. Implemented by the target, which keeps the controllers.
     */
    public interface Hosts {
        /**
         * Delivers {@code notices} of namespace {@code nsid} of subsystem {@code subsystemNqn} to
         * this node's controllers of the hosts they name (log page 0x80, AEN), and returns
         * whether those of them whose registration was preempted still have a command on the
         * namespace on the engine (asked again as preempt-and-abort waits; any thread). A
         * reservation thread; it may take the configuration lock.
         */
        BooleanSupplier deliver(String subsystemNqn, int nsid, List<ReservationState.Notice> notices);
    }

    /** No command of a preempted host is on the engine: nothing to wait for. */
    private static final BooleanSupplier NONE_BUSY = () -> false;

    public Reservations(Hosts hosts) {
        this.hosts = hosts;
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
        leaseNs = TimeUnit.MILLISECONDS.toNanos(leaseMs);
        lastContactNs.set(System.nanoTime() - leaseNs - 1);
        fenced = true;
        store.listen(this::heard);
        timer.scheduleWithFixedDelay(errors.guard(this::tick), 0, intervalMs, TimeUnit.MILLISECONDS);
    }

    /** Whether a state with PTPL set outlives this server (Identify Namespace RESCAP bit 0). */
    public boolean persistable() {
        return store.persistent();
    }

    /** Whether this node cannot vouch for its copies now (a shared store lost for longer than the lease). Any thread; volatile read. */
    boolean fenced() {
        return fenced;
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
        r.copy.execute(errors.guard(() -> refresh(r)));
        return r;
    }

    /** The namespace was disabled. Configuration thread. */
    void close(NamespaceReservation r) {
        open.remove(r.key, r);
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
     * {@link #change}, then with {@code abort} (preempt-and-abort) the answer waits, as nvmet's
     * does, until the preempted hosts' controllers on this node have no command on the namespace
     * left on the engine (at most {@link #ABORT_WAIT_MS}); other nodes' are not waited for. The
     * wait holds the namespace's commands lane, not a thread: it is woken by the commands
     * leaving the engine ({@link NamespaceReservation#engineLeft()}) and by a timer.
     */
    public void change(IntConsumer answer, NamespaceReservation r, Function<ReservationState, ReservationState.Outcome> command, boolean abort) {
        r.commands.submit(() -> answer(answer, r.copy.call(() -> apply(r, command, abort)).thenCompose(changed -> {
            if (changed.preempted() == NONE_BUSY) return CompletableFuture.completedFuture(changed.status());
            return awaitPreempted(r, changed.preempted()).thenApply(done -> changed.status());
        })));
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
                r.state(s);
                return fill.apply(s);
            } catch (ReservationStore.StoreException e) {
                failed(e);
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
     * What a change did: its status, and with preempt-and-abort whether this node's controllers
     * of the hosts it preempted are still busy on the namespace ({@link #NONE_BUSY} otherwise).
     */
    private record Changed(int status, BooleanSupplier preempted) {
        Changed(int status) {
            this(status, NONE_BUSY);
        }
    }

    /** The store part of {@link #change}. The namespace's copy lane. */
    private Changed apply(NamespaceReservation r, Function<ReservationState, ReservationState.Outcome> command, boolean abort) {
        try {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                long startNs = System.nanoTime();
                ReservationState before = store.read(r.key);
                contact(startNs);
                ReservationState.Outcome o = command.apply(before);
                if (o.next() == before) {
                    r.state(before);
                    return new Changed(o.status());
                }
                if (store.replace(r.key, o.next(), o.notices())) {
                    r.state(o.next());
                    BooleanSupplier preempted = deliver(r, o.notices());
                    return abort ? new Changed(o.status(), preempted) : new Changed(o.status());
                }
            }
            return new Changed(Status.INTERNAL);        // no DNR: the host may try again
        } catch (ReservationStore.StoreException e) {
            failed(e);
            return new Changed(Status.ANA_INACCESSIBLE);
        }
    }

    /**
     * Preempt-and-abort: completes once none of {@code preempted} has a command on the namespace
     * on the engine, or after {@link #ABORT_WAIT_MS}. No thread waits: each command leaving the
     * engine has a look queued (at most one at a time), and the timer ends it at the deadline.
     * The state is committed before, so a command that enters after the first look is refused
     * by its access check and need not be waited for. The copy lane's thread, after the change.
     */
    private CompletableFuture<Void> awaitPreempted(NamespaceReservation r, BooleanSupplier preempted) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        AtomicBoolean lookQueued = new AtomicBoolean(true);
        Runnable look = () -> {
            lookQueued.set(false);
            if (done.isDone()) return;
            if (preempted.getAsBoolean()) return;
            done.complete(null);
        };
        r.engineLeft(() -> {
            if (done.isDone() || !lookQueued.compareAndSet(false, true)) return;
            try {
                threads.execute(look);
            } catch (RejectedExecutionException closed) {
                done.complete(null);
            }
        });
        ScheduledFuture<?> deadline = timer.schedule(() -> done.complete(null), ABORT_WAIT_MS, TimeUnit.MILLISECONDS);
        look.run();                                     // after the waiter is in place: a command leaving now is seen by one of the two
        return done.whenComplete((v, failure) -> {
            r.engineLeft(null);
            deadline.cancel(false);
        });
    }

    /**
     * The notices go to this node's controllers of the hosts they name (log page 0x80, AEN);
     * returns whether those of the hosts whose registration was preempted are busy on the
     * namespace. The copy lane.
     */
    private BooleanSupplier deliver(NamespaceReservation r, List<ReservationState.Notice> notices) {
        if (notices.isEmpty()) return NONE_BUSY;
        return hosts.deliver(r.subsystemNqn, r.nsid, notices);
    }

    // ---------------------------------------------------------------- a shared store

    /** Another node changed {@code key}: re-read it, and deliver its notices here, in the namespace's copy lane. The store's thread. */
    private void heard(String key, long version, List<ReservationState.Notice> notices) {
        NamespaceReservation r = open.get(key);
        if (r == null) return;
        r.copy.execute(errors.guard(() -> {
            ReservationState mine = r.state();
            if (mine == null || mine.version() != version) {
                try {
                    long startNs = System.nanoTime();
                    r.state(store.read(key));
                    contact(startNs);
                } catch (ReservationStore.StoreException e) {
                    failed(e);
                }
            }
            deliver(r, notices);
        }));
    }

    /** Every interval, on the timer: fence when the lease ran out, and have the open namespaces re-read. */
    private void tick() {
        boolean wasFenced = fenced;
        fenced = System.nanoTime() - lastContactNs.get() > leaseNs;
        if (fenced && !wasFenced) {
            LOG.log(System.Logger.Level.WARNING, "reservation store unreachable for " + TimeUnit.NANOSECONDS.toMillis(leaseNs)
                                                 + " ms: IO on namespaces with resv_enable is refused here (ANA Inaccessible) until it answers");
        }
        for (NamespaceReservation r : open.values()) {
            if (r.refreshQueued.compareAndSet(false, true)) r.copy.execute(errors.guard(() -> refresh(r)));
        }
        if (open.isEmpty() && contactQueued.compareAndSet(false, true)) threads.execute(errors.guard(this::reach));
    }

    /** Reads one open namespace: its first read at enable, then a change whose message was lost, a store that restarted. Its copy lane. */
    private void refresh(NamespaceReservation r) {
        r.refreshQueued.set(false);
        long startNs = System.nanoTime();
        try {
            ReservationState s = store.read(r.key);
            if (!s.equals(r.state())) r.state(s);
            contact(startNs);
        } catch (ReservationStore.StoreException e) {
            failed(e);
        }
    }

    /** With no namespace open, one read tells whether the store still answers. A reservation thread. */
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
        if (lost) LOG.log(System.Logger.Level.INFO, "reservation store reachable again" + (fenced ? ": IO on namespaces with resv_enable is served again" : ""));
        fenced = false;
        lost = false;
    }

    private void failed(ReservationStore.StoreException e) {
        if (!lost) LOG.log(System.Logger.Level.WARNING, "reservation store failed (" + e.getMessage() + "): reservation commands are refused (ANA Inaccessible)"
                                                        + " and IO keeps this node's copies for up to the lease");
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
