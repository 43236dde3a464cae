package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.frontend.nvmetcp.CommandSlot;
import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.frontend.nvmetcp.command.Status;
import io.iotarget.frontend.nvmetcp.config.Subsystem;
import io.iotarget.model.CountedErrorHandler;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Function;
import java.util.function.IntSupplier;

/**
 * The target's reservations (package documentation): the store, the namespaces open on it,
 * and the one reservation thread that runs every command that reads or changes a state, so
 * that no event loop waits for the store. With a shared store, a timer re-reads the open
 * namespaces every interval and decides whether this node may still vouch for its copies
 * ({@link #fenced}). Any thread may call the public methods.
 */
public final class Reservations implements AutoCloseable {
    /** A command whose compare-and-set loses this many times in a row (other nodes keep changing the state) fails, to be retried by the host. */
    static final int MAX_ATTEMPTS = 16;
    /** The longest preempt-and-abort waits for the preempted hosts' commands: io.max may hold one for long, and the host's own timeout is 30 s. */
    static final long ABORT_WAIT_MS = 10_000;
    private static final System.Logger LOG = System.getLogger(Reservations.class.getName());

    private final NvmeTarget target;
    private final ExecutorService thread = Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name("nvmet-resv").factory());
    private final CountedErrorHandler errors = new CountedErrorHandler("nvmet-resv");
    private final Map<String, NamespaceReservation> open = new ConcurrentHashMap<>();
    private final AtomicBoolean refreshQueued = new AtomicBoolean();
    private volatile ReservationStore store = new LocalReservationStore();
    private ScheduledExecutorService timer;
    private long leaseNs;
    /** When the store last answered (System.nanoTime()); shared stores only. */
    private volatile long lastContactNs;
    /** This node has not heard from the shared store for longer than the lease: IO on its reservation namespaces is refused. */
    private volatile boolean fenced;
    /** Whether the store failed last time (logged once per outage). */
    private volatile boolean lost;

    public Reservations(NvmeTarget target) {
        this.target = target;
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
        lastContactNs = System.nanoTime() - leaseNs - 1;
        fenced = true;
        store.listen(this::heard);
        timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("nvmet-resv-timer").factory());
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

    /** What the reservation thread survived unexpectedly (logged, rate-limited); 0 in a healthy target. */
    public long unexpectedErrors() {
        return errors.count();
    }

    /**
     * A namespace with resv_enable is being enabled: its state is read from the store (a
     * failure leaves it unknown, refused as a path error until the next interval reads it).
     * Configuration thread.
     */
    public NamespaceReservation open(Subsystem subsystem, int nsid) {
        String key = subsystem.nqn + "/" + Integer.toUnsignedString(nsid);
        ReservationState state = null;
        long startNs = System.nanoTime();
        try {
            state = store.read(key);
            contact(startNs);
        } catch (ReservationStore.StoreException e) {
            failed(e);
        }
        NamespaceReservation r = new NamespaceReservation(this, subsystem, nsid, key, state);
        open.put(key, r);
        return r;
    }

    /** The namespace was disabled. Configuration thread. */
    void close(NamespaceReservation r) {
        open.remove(r.key, r);
    }

    // ---------------------------------------------------------------- commands

    /**
     * Runs {@code command} against the namespace's state on the reservation thread and answers
     * the slot: read, apply, compare-and-set, retried while another node wins the race. The
     * state changes only in the store first, so a node that cannot reach it grants nothing
     * (ANA Inaccessible: try another path). The queue's loop, which gives the slot up here.
     */
    public void change(CommandSlot slot, NamespaceReservation r, Function<ReservationState, ReservationState.Outcome> command) {
        change(slot, r, command, false);
    }

    /**
     * {@link #change}, then with {@code abort} (preempt-and-abort) waits, as nvmet does, until
     * the preempted hosts' controllers on this node have no command on the namespace left on
     * the engine (at most {@link #ABORT_WAIT_MS}); other nodes' are not waited for.
     */
    public void change(CommandSlot slot, NamespaceReservation r, Function<ReservationState, ReservationState.Outcome> command, boolean abort) {
        slot.leaveLoop();
        thread.execute(() -> slot.finish(guarded(() -> apply(r, command, abort))));
    }

    /** Runs {@code fill} (which writes the command's data) with the store's current state, on the reservation thread. */
    public void read(CommandSlot slot, NamespaceReservation r, Function<ReservationState, Integer> fill) {
        slot.leaveLoop();
        thread.execute(() -> slot.finish(guarded(() -> {
            try {
                ReservationState s = store.read(r.key);
                r.state(s);
                return fill.apply(s);
            } catch (ReservationStore.StoreException e) {
                failed(e);
                return Status.ANA_INACCESSIBLE;
            }
        })));
    }

    private int guarded(IntSupplier command) {
        try {
            return command.getAsInt();
        } catch (RuntimeException e) {
            errors.report(e);
            return Status.INTERNAL;
        }
    }

    private int apply(NamespaceReservation r, Function<ReservationState, ReservationState.Outcome> command, boolean abort) {
        try {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                long startNs = System.nanoTime();
                ReservationState before = store.read(r.key);
                contact(startNs);
                ReservationState.Outcome o = command.apply(before);
                if (o.next() == before) {
                    r.state(before);
                    return o.status();
                }
                if (store.replace(r.key, o.next(), o.notices())) {
                    r.state(o.next());
                    deliver(r, o.notices());
                    if (abort) awaitPreempted(r, o.notices());
                    return o.status();
                }
            }
            return Status.INTERNAL;                     // no DNR: the host may try again
        } catch (ReservationStore.StoreException e) {
            failed(e);
            return Status.ANA_INACCESSIBLE;
        }
    }

    /** Preempt-and-abort: until the preempted hosts' commands on the namespace here are done, or ABORT_WAIT_MS. Reservation thread. */
    private void awaitPreempted(NamespaceReservation r, List<ReservationState.Notice> notices) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ABORT_WAIT_MS);
        while (System.nanoTime() < deadline) {
            List<Controller> preempted = new java.util.ArrayList<>();
            target.lock();
            try {
                for (Controller c : r.subsystem.controllers) {
                    for (ReservationState.Notice n : notices) {
                        if (n.type() == ReservationState.NOTICE_REGISTRATION_PREEMPTED && n.hostHigh() == c.hostIdHigh && n.hostLow() == c.hostIdLow) preempted.add(c);
                    }
                }
            } finally {
                target.unlock();
            }
            boolean busy = false;
            for (Controller c : preempted) busy |= c.busyOn(r.nsid);
            if (!busy) return;
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** The notices go to this node's controllers of the hosts they name (log page 0x80, AEN). Reservation thread. */
    private void deliver(NamespaceReservation r, List<ReservationState.Notice> notices) {
        if (notices.isEmpty()) return;
        target.lock();
        try {
            for (Controller c : r.subsystem.controllers) {
                for (ReservationState.Notice n : notices) {
                    if (n.hostHigh() == c.hostIdHigh && n.hostLow() == c.hostIdLow) c.reservationNotice(r.nsid, n.type());
                }
            }
        } finally {
            target.unlock();
        }
    }

    // ---------------------------------------------------------------- a shared store

    /** Another node changed {@code key}: re-read it, and deliver its notices here. The store's thread. */
    private void heard(String key, long version, List<ReservationState.Notice> notices) {
        thread.execute(errors.guard(() -> {
            NamespaceReservation r = open.get(key);
            if (r == null) return;
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
        fenced = System.nanoTime() - lastContactNs > leaseNs;
        if (fenced && !wasFenced) {
            LOG.log(System.Logger.Level.WARNING, "reservation store unreachable for " + TimeUnit.NANOSECONDS.toMillis(leaseNs)
                                                 + " ms: IO on namespaces with resv_enable is refused here (ANA Inaccessible) until it answers");
        }
        if (refreshQueued.compareAndSet(false, true)) thread.execute(errors.guard(this::refresh));
    }

    /** Re-reads every open namespace (a change whose message was lost, a store that restarted). Reservation thread. */
    private void refresh() {
        refreshQueued.set(false);
        long startNs = System.nanoTime();
        try {
            for (NamespaceReservation r : open.values()) {
                ReservationState s = store.read(r.key);
                if (!s.equals(r.state())) r.state(s);
            }
            if (open.isEmpty()) store.read("");
            contact(startNs);
        } catch (ReservationStore.StoreException e) {
            failed(e);
        }
    }

    /** The store answered a request sent at {@code sentNs}. */
    private void contact(long sentNs) {
        if (!store.shared()) return;
        lastContactNs = Math.max(lastContactNs, sentNs);
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
        if (timer != null) timer.shutdownNow();
        thread.shutdown();
        try {
            if (!thread.awaitTermination(5, TimeUnit.SECONDS)) thread.shutdownNow();
        } catch (InterruptedException e) {
            thread.shutdownNow();
            Thread.currentThread().interrupt();
        }
        store.close();
    }
}
