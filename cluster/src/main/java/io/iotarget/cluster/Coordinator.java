package io.iotarget.cluster;

import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.throttle.ThrottlePolicy;
import io.iotarget.iocontrol.policy.throttle.ThrottlePolicy.GlobalLimit;
import io.iotarget.model.Clock;
import io.iotarget.model.ControlException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;

/**
 * This node's side of the coordination loop (package documentation): every interval it
 * measures what each tenant limit of io.max.global used here, reports demands to the
 * {@link ShareStore}, and applies the shares it gets back through
 * {@link ThrottlePolicy#share}; without the store for longer than the lease it holds
 * limit / nodes. Its own thread does all of that; {@link #view} and the counters may be read
 * by any thread.
 */
public final class Coordinator implements AutoCloseable {
    /** A node using at least this much of its share wants more: it reports the whole global limit as its demand. */
    static final int SATURATED_PCT = 90;
    /** A node below that reports what it used plus a quarter, so that its share stays above its use (a share at its use would look saturated). */
    static final int HEADROOM_PCT = 125;
    /** Every configured node keeps limit / nodes / this, live or not: what a node holds before its first exchange. */
    static final int FLOOR_PARTS = 20;
    private static final System.Logger LOG = System.getLogger(Coordinator.class.getName());
    private static final String[] LIMIT_NAMES = {"rbps", "wbps", "riops", "wiops"};
    /** io.stat fields that measure each limit's use, in {@link ThrottlePolicy#RBPS} order. */
    private static final String[] USAGE_FIELDS = {"rbytes", "wbytes", "rios", "wios"};

    /** One tenant limit as this node last saw it, for /metrics: share and demand per second in the limit's unit. */
    public record TenantView(String group, String device, String limit, long globalLimit, long share, long demand) {
    }

    private final IoController controller;
    private final ThrottlePolicy throttle;
    private final ClusterSettings settings;
    /** How many nodes share the limits: cluster.nodes, or a gateway group's live members. Read on the coordinator's thread. */
    private final IntSupplier nodes;
    private final ShareStore store;
    private final Clock clock;
    private final ScheduledExecutorService thread;

    /** Per store key; the coordinator's thread only. */
    private final Map<String, Tenant> tenants = new HashMap<>();
    private long lastContactNs;
    /** Whether the last exchange failed: the first failure and the first success after are logged. */
    private boolean lost;
    private volatile boolean fallback;

    /** Published once per interval by the coordinator's thread (volatile: any thread reads them). */
    private volatile List<TenantView> view = List.of();
    private volatile long roundTripNs = -1;
    private volatile long fallbacks;
    private volatile long exchanges;
    private volatile long failures;

    /** The state of one tenant limit (group, device, limit kind). */
    private static final class Tenant {
        final String key;
        long globalLimit;
        /** What this node enforces now: read from the throttle at each interval, then the store's answer. */
        long share;
        long demand;
        /** io.stat's counter at the last interval and when it was read; -1 before the first. */
        long lastCount = -1;
        long lastCountNs;
        /**
         * Until then the share may not grow above {@link #cap}: the store did not know this node,
         * so its view of who holds what is incomplete. The cap is what the node held, or
         * limit / nodes if more (what it would hold without the store anyway).
         */
        long capUntilNs = Long.MIN_VALUE;
        long cap;
        boolean seen;

        Tenant(String key) {
            this.key = key;
        }
    }

    /**
     * Makes io.max.global written from now on start at the floor ({@link #floor}): the store
     * reserves no more for a node it has not heard from. {@link #start} begins the loop.
     */
    public Coordinator(IoController controller, ClusterSettings settings, ShareStore store, Clock clock) {
        this(controller, settings, store, clock, settings::nodes);
    }

    /**
     * As above, with the number of nodes that share the limits read from {@code nodes} at each
     * exchange (at least 1): a gateway group's live members when the config has no {@code cluster.nodes}.
     */
    public Coordinator(IoController controller, ClusterSettings settings, ShareStore store, Clock clock, IntSupplier nodes) {
        this.nodes = nodes;
        this.controller = controller;
        this.throttle = throttle(controller);
        this.settings = settings;
        this.store = store;
        this.clock = clock;
        this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "iotarget-cluster");
            t.setDaemon(true);
            return t;
        });
        throttle.startingDivisor((long) nodes() * FLOOR_PARTS);
    }

    /** How many nodes share the limits now (package documentation, section 2). */
    private int nodes() {
        return Math.max(1, nodes.getAsInt());
    }

    /** What every configured node keeps of {@code limit}, live or not (package documentation, section 2). */
    static long floor(long limit, int nodes) {
        return Math.max(1, limit / ((long) nodes * FLOOR_PARTS));
    }

    /** What this node holds of {@code limit} without the store: limit / nodes. */
    private long fallback(long limit) {
        return Math.max(1, limit / nodes());
    }

    /** The controller's io.max policy. */
    public static ThrottlePolicy throttle(IoController controller) {
        for (IoPolicy p : controller.policies()) if (p instanceof ThrottlePolicy t) return t;
        throw new IllegalStateException("the controller has no io.max policy");
    }

    public void start() {
        lastContactNs = clock.nanoTime();
        thread.scheduleWithFixedDelay(this::tickSafely, 0, settings.intervalMs(), TimeUnit.MILLISECONDS);
    }

    private void tickSafely() {
        try {
            tick(clock.nanoTime());
        } catch (RuntimeException | Error e) {
            // An Error too (out of memory, a log call that threw): an executor stops a task that throws, and the shares would freeze.
            failures++;
        }
    }

    /** One interval: measure, exchange, apply. The coordinator's thread (tests call it directly, with their own time). */
    void tick(long nowNs) {
        List<GlobalLimit> limits = throttle.globalLimits();
        List<Tenant> active = new ArrayList<>();
        List<GlobalLimit> owners = new ArrayList<>();
        List<Integer> kinds = new ArrayList<>();
        for (Tenant t : tenants.values()) t.seen = false;
        for (GlobalLimit gl : limits) {
            Map<String, Long> usage = usage(gl);
            for (int k = 0; k < 4; k++) {
                long limit = gl.limits()[k];
                if (limit == ThrottlePolicy.UNLIMITED) continue;
                String key = "iotarget:" + gl.group().path() + ":" + gl.device().device().name() + ":" + LIMIT_NAMES[k];
                Tenant t = tenants.computeIfAbsent(key, Tenant::new);
                t.globalLimit = limit;
                t.share = gl.shares()[k];
                t.seen = true;
                t.demand = demand(t, usage.getOrDefault(USAGE_FIELDS[k], 0L), nowNs);
                active.add(t);
                owners.add(gl);
                kinds.add(k);
            }
        }
        tenants.values().removeIf(t -> !t.seen);
        if (!active.isEmpty()) exchange(active, nowNs);
        // Apply per pair: the four limits of a pair are one call.
        Map<GlobalLimit, long[]> shares = new java.util.IdentityHashMap<>();
        for (int i = 0; i < active.size(); i++) {
            long[] s = shares.computeIfAbsent(owners.get(i), gl -> new long[] {ThrottlePolicy.UNLIMITED, ThrottlePolicy.UNLIMITED,
                                                                               ThrottlePolicy.UNLIMITED, ThrottlePolicy.UNLIMITED});
            s[kinds.get(i)] = active.get(i).share;
        }
        for (Map.Entry<GlobalLimit, long[]> e : shares.entrySet()) {
            try {
                throttle.share(e.getKey().group(), e.getKey().device(), e.getValue());
            } catch (ControlException gone) {
                // The group or device was removed meanwhile: the next interval no longer lists it.
            }
        }
        List<TenantView> views = new ArrayList<>();
        for (int i = 0; i < active.size(); i++) {
            Tenant t = active.get(i);
            GlobalLimit gl = owners.get(i);
            views.add(new TenantView(gl.group().path(), gl.device().device().name(), LIMIT_NAMES[kinds.get(i)], t.globalLimit, t.share, t.demand));
        }
        view = List.copyOf(views);
    }

    /** Reports and takes the shares; without the store past the lease, limit / nodes. */
    private void exchange(List<Tenant> active, long nowNs) {
        List<ShareStore.Report> reports = new ArrayList<>(active.size());
        for (Tenant t : active) reports.add(new ShareStore.Report(t.key, t.globalLimit, t.demand, t.share, floor(t.globalLimit, nodes())));
        long startNs = clock.nanoTime();
        List<ShareStore.Share> answers;
        try {
            answers = store.exchange(settings.node(), nodes(), settings.leaseMs(), reports);
        } catch (ShareStore.StoreException e) {
            failures++;
            if (!lost) LOG.log(System.Logger.Level.WARNING, "cluster store failed (" + e.getMessage() + "): shares kept until the lease runs out");
            lost = true;
            // Fall back at the last interval before the lease runs out, not after it: by then the
            // store may have given this node's share to the others.
            if (nowNs - lastContactNs + TimeUnit.MILLISECONDS.toNanos(settings.intervalMs()) >= TimeUnit.MILLISECONDS.toNanos(settings.leaseMs())) {
                if (!fallback) {
                    fallbacks++;
                    LOG.log(System.Logger.Level.WARNING, "cluster store unreachable for " + TimeUnit.NANOSECONDS.toMillis(nowNs - lastContactNs)
                            + " ms: this node holds limit / " + nodes() + " of every io.max.global");
                }
                fallback = true;
                for (Tenant t : active) t.share = fallback(t.globalLimit);
            }
            return;
        }
        roundTripNs = clock.nanoTime() - startNs;
        exchanges++;
        if (lost) LOG.log(System.Logger.Level.INFO, "cluster store reachable again after " + TimeUnit.NANOSECONDS.toMillis(nowNs - lastContactNs) + " ms"
                                                      + (fallback ? "; shares follow demand again" : ""));
        lost = false;
        lastContactNs = nowNs;
        fallback = false;
        for (int i = 0; i < active.size(); i++) {
            Tenant t = active.get(i);
            ShareStore.Share answer = answers.get(i);
            if (!answer.known()) {
                t.capUntilNs = nowNs + TimeUnit.MILLISECONDS.toNanos(settings.leaseMs());
                t.cap = Math.max(t.share, fallback(t.globalLimit));      // a node just started holds its floor
            }
            t.share = nowNs < t.capUntilNs ? Math.min(answer.share(), t.cap) : answer.share();
        }
    }

    /** What this node asks for: the whole limit when it uses most of its share, else its use plus headroom (per second). */
    private static long demand(Tenant t, long count, long nowNs) {
        long previous = t.lastCount;
        long previousNs = t.lastCountNs;
        t.lastCount = count;
        t.lastCountNs = nowNs;
        if (previous < 0 || nowNs <= previousNs || count < previous) return t.share;   // nothing to compare with yet
        double perSecond = (count - previous) * 1e9 / (nowNs - previousNs);
        if (perSecond * 100 >= (double) t.share * SATURATED_PCT) return t.globalLimit;
        return (long) Math.ceil(perSecond * HEADROOM_PCT / 100);
    }

    /** The pair's io.stat fields, as a read of io.stat gives them (0 for a pair with no IO yet). */
    private Map<String, Long> usage(GlobalLimit gl) {
        Map<String, Long> fields = new HashMap<>();
        String number = gl.device().device().number().toString();
        try {
            for (String line : controller.read(gl.group().path() + "/io.stat").split("\n")) {
                String[] tokens = line.trim().split("\\s+");
                if (!tokens[0].equals(number)) continue;
                for (int i = 1; i < tokens.length; i++) {
                    int eq = tokens[i].indexOf('=');
                    if (eq > 0 && tokens[i].substring(eq + 1).matches("\\d+")) fields.put(tokens[i].substring(0, eq), Long.parseLong(tokens[i].substring(eq + 1)));
                }
            }
        } catch (ControlException gone) {
            // Removed meanwhile: no use.
        }
        return fields;
    }

    /** Every tenant limit with this node's share and demand, as of the last interval. Any thread. */
    public List<TenantView> view() {
        return view;
    }

    /** The last exchange's round trip in ns; -1 before the first. Any thread. */
    public long roundTripNs() {
        return roundTripNs;
    }

    /** Times this node fell back to limit / nodes (lost the store for longer than the lease). Any thread. */
    public long fallbacks() {
        return fallbacks;
    }

    /** Whether this node holds limit / nodes now, without the store. Any thread. */
    public boolean inFallback() {
        return fallback;
    }

    public long exchanges() {
        return exchanges;
    }

    public long failures() {
        return failures;
    }

    public ClusterSettings settings() {
        return settings;
    }

    /** Stops the loop (waiting for a running interval) and closes the store's client and its threads. */
    @Override
    public void close() {
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
