package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.config.Host;
import io.iotarget.frontend.nvmetcp.config.InFlightCommands;
import io.iotarget.frontend.nvmetcp.config.Namespace;
import io.iotarget.frontend.nvmetcp.config.ConfigEvents;
import io.iotarget.frontend.nvmetcp.config.NvmetConfig;
import io.iotarget.frontend.nvmetcp.config.NvmetTree;
import io.iotarget.frontend.nvmetcp.config.Port;
import io.iotarget.frontend.nvmetcp.config.Subsystem;
import io.iotarget.frontend.nvmetcp.reservation.ReservationState;
import io.iotarget.frontend.nvmetcp.reservation.Reservations;
import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.CountedErrorHandler;
import io.iotarget.model.Counters;
import io.iotarget.model.RateLimitedLog;
import io.iotarget.transport.Listener;
import io.iotarget.transport.Transport;

import java.io.IOException;
import java.net.InetSocketAddress;

import io.iotarget.frontend.nvmetcp.auth.DhChapCredentials;

import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.CompletableFuture;
import io.iotarget.frontend.nvmetcp.auth.TlsKey;
import io.iotarget.transport.PskKeys;

/**
 * The NVMe/TCP target: nvmet's model (subsystems, namespaces, ports, hosts and the discovery
 * subsystem) served over TCP to NVMe hosts such as Linux's nvme-tcp, with every namespace's IO
 * charged to its group through the {@link Engine}. Configured only through {@link #tree()},
 * which mirrors {@code /sys/kernel/config/nvmet}.
 *
 * <p>Threads: the configuration (the tree, Connect, Identify, log pages) is guarded by one
 * configuration lock; connections live on the transport's event loops; one timer
 * thread runs keep-alive checks. The IO path takes no configuration lock. Any thread may call
 * the public methods.
 */
public final class NvmeTarget implements AutoCloseable {
    private final Engine engine;
    private final Transport transport;
    private final boolean ownsTransport;
    /** nvmet's configfs as data, with the configuration lock; the tree edits it and tells this target ({@link ConfigEvents}). */
    private final NvmetConfig config = new NvmetConfig();
    private final ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(
            Thread.ofPlatform().daemon().name("nvmet-keepalive").factory());
    /** What the timers threw and survived: a timer task that throws would otherwise never run again. */
    private final CountedErrorHandler timerErrors = new CountedErrorHandler("nvmet-keepalive");
    /** Commands that found no memory for their data. */
    private final CountedErrorHandler dataBuffers = new CountedErrorHandler("nvmet data buffers");
    /**
     * Where DH-HMAC-CHAP messages are computed: off the event loops, whose other queues an
     * ffdhe8192 exchange (~16 ms of CPU: a key pair and an agreement) would stall, and on
     * {@link #AUTHENTICATION_THREADS} threads only, so hosts that authenticate over and over get
     * that many cores between them and no more. Each queue has at most one message here at a
     * time ({@link QueueAuthentication}), so this FIFO serves the queues in turn.
     */
    private final ExecutorService authentication = Executors.newFixedThreadPool(AUTHENTICATION_THREADS,
            Thread.ofPlatform().daemon().name("nvmet-dhchap-", 0).factory());
    /** One core at most for DH, whatever the hosts ask: a legitimate queue's exchange takes ~16 ms of it with ffdhe8192. */
    static final int AUTHENTICATION_THREADS = 1;
    /** What an authentication task threw: its command fails with Internal Error. */
    private final CountedErrorHandler authenticationErrors = new CountedErrorHandler("nvmet-dhchap");
    private final Counters<NvmeTcpCounter> counters = new Counters<>(NvmeTcpCounter.class)
            .source(NvmeTcpCounter.BUFFER_REFUSALS, dataBuffers::count)
            .source(NvmeTcpCounter.UNEXPECTED_ERRORS, () -> timerErrors.count() + authenticationErrors.count());
    /** A file truncated under many readers fails each one's read: log a few lines a second, count the rest. */
    static final int SHRUNK_FILE_LINES_PER_SECOND = 5;
    private final RateLimitedLog shrunkFileReads;
    /**
     * Controllers whose host could not have its cgroup_per_host group (a NQN no group may take,
     * cgroup.max.descendants reached): one line per controller, at most
     * {@link #HOST_GROUP_LINES_PER_SECOND} for the whole target, since a host may connect under
     * new NQNs as fast as it likes; its IO commands are counted in
     * {@link NvmeTcpCounter#HOST_GROUP_REFUSED}.
     */
    private final RateLimitedLog hostGroupFailures;
    static final int HOST_GROUP_LINES_PER_SECOND = 5;
    /** {@link QueueAuthentication#DEADLINE_MS}, which tests shorten; read at each Connect. */
    volatile long authenticationDeadlineMs = QueueAuthentication.DEADLINE_MS;
    /** Challenges, DH keys and sequence numbers of DH-HMAC-CHAP; thread-safe. */
    private final SecureRandom random = new SecureRandom();

    public final Map<String, Host> hosts = config.hosts;
    public final Map<String, Subsystem> subsystems = config.subsystems;
    public final Map<Integer, Port> ports = config.ports;
    public final Subsystem discovery = config.discovery;
    /** Each subsystem's live controllers (nvmet's subsys->ctrls), by identity; the lists under the configuration lock. */
    private final Map<Subsystem, SubsystemControllers> controllers = new ConcurrentHashMap<>();
    /** Each port's connections, listening or not: the accept thread adds, a closing queue removes; any thread. */
    private final Map<Port, Set<Queue>> connections = new ConcurrentHashMap<>();
    /** GENCTR of the discovery log: bumped whenever what a host may discover changes. */
    private long discoveryGeneration;
    /** nvmet_ana_chgcnt: node-wide, bumped by every ana_state and ana_grpid write. Lock held. */
    private long anaChangeCount;
    private final NvmetTree tree;
    /** The commands the queues route to (package command, found through {@link CommandSet#load}). */
    private final CommandSet commands = CommandSet.load();
    /** Persistent reservations: their store and threads (package reservation), which reach controllers through {@link #deliver}. */
    private final Reservations reservations = new Reservations(this::deliver, this::reservationAnaChanged);

    /** A target whose ports are carried by {@code transport} (shared with other front ends; closed by its owner). */
    public NvmeTarget(Engine engine, Transport transport) {
        this(engine, transport, false);
    }

    /** A target on a transport of its own with the default settings. */
    public NvmeTarget(Engine engine) throws IOException {
        this(engine, new Transport(Transport.Settings.defaults()), true);
    }

    private NvmeTarget(Engine engine, Transport transport, boolean ownsTransport) {
        this.engine = engine;
        this.transport = transport;
        this.ownsTransport = ownsTransport;
        this.shrunkFileReads = new RateLimitedLog(System.getLogger(Queue.class.getName()), engine.clock(), SHRUNK_FILE_LINES_PER_SECOND,
                                                  "NVMe/TCP READ(s) past a shrunk file");
        this.tree = new NvmetTree(config, engine, reservations, new ConfigReactions());
        this.hostGroupFailures = new RateLimitedLog(System.getLogger(Controller.class.getName()), engine.clock(), HOST_GROUP_LINES_PER_SECOND,
                                                    "controller(s) without their host's cgroup_per_host group");
    }

    /** The commands the queues route to. Any thread. */
    CommandSet commands() {
        return commands;
    }

    public Transport transport() {
        return transport;
    }

    /** The configuration tree, laid out like nvmet's configfs. */
    public ConfigTree tree() {
        return tree;
    }

    public Engine engine() {
        return engine;
    }

    /**
     * The controller ids this node's gateway group gave it ({@code cluster.group}): shared
     * subsystems that do not set attr_cntlid_min/max hand out these. Before namespaces enable.
     */
    public void gatewayCntlids(int min, int max) {
        lock();
        try {
            config.gatewayCntlids(min, max);
        } finally {
            unlock();
        }
    }

    /** Persistent reservations; {@link Reservations#use} moves them to a shared store before namespaces are enabled. */
    public Reservations reservations() {
        return reservations;
    }

    /** Runs {@code task} every {@code periodMs} on the timer thread, for good whatever it throws (keep-alive). */
    ScheduledFuture<?> every(long periodMs, Runnable task) {
        return scheduler.scheduleWithFixedDelay(timerErrors.guard(task), periodMs, periodMs, TimeUnit.MILLISECONDS);
    }

    /** Runs {@code task} once after {@code delayMs} on the timer thread (authentication deadlines). */
    void after(long delayMs, Runnable task) {
        scheduler.schedule(timerErrors.guard(task), delayMs, TimeUnit.MILLISECONDS);
    }

    /** Runs one AUTH_Send/AUTH_Receive computation on the authentication threads. Any thread. */
    void authenticate(Runnable task) {
        authentication.execute(task);
    }

    /** A controller's host cannot have its cgroup_per_host group: logged with {@code why} within {@link #HOST_GROUP_LINES_PER_SECOND}. Any thread. */
    void hostGroupRefused(String why) {
        hostGroupFailures.log(why, null);
    }

    /** An authentication task failed unexpectedly: counted and logged (rate-limited). */
    void authenticationFailed(RuntimeException e) {
        authenticationErrors.report(e);
    }

    /** The target's counters ({@link NvmeTcpCounter}). Any thread. */
    public Counters<NvmeTcpCounter> counters() {
        return counters;
    }

    /**
     * A READ met a file backend that shrank beneath it: answered Internal Error, or (when its
     * data had begun) its queue ended. Counted; {@code why}, when not null, is logged, at most
     * {@link #SHRUNK_FILE_LINES_PER_SECOND} lines a second. Loop thread.
     */
    void readPastShrunkFile(String why) {
        counters.increment(NvmeTcpCounter.SHRUNK_FILE_READS);
        if (why != null) shrunkFileReads.log(why, null);
    }

    /** A command found no memory for its data buffer: counted and logged (rate-limited). Loop thread; never blocks. */
    void outOfMemory(OutOfMemoryError e) {
        dataBuffers.report(e);
    }

    /** TCP connections open now over all ports: every admin and IO queue, discovery's included. */
    public int connectionCount() {
        lock();
        try {
            int n = 0;
            for (Port p : ports.values()) n += connections(p).size();
            return n;
        } finally {
            unlock();
        }
    }

    /** Failures the timer thread survived (each logged, rate-limited); 0 in a healthy target. */
    public long unexpectedErrors() {
        return counters.counter(NvmeTcpCounter.UNEXPECTED_ERRORS);
    }

    SecureRandom random() {
        return random;
    }

    public void lock() {
        config.lock();
    }

    public void unlock() {
        config.unlock();
    }

    /** The live controllers of {@code s} on this node. Configuration lock held. */
    public SubsystemControllers controllers(Subsystem s) {
        return controllers.computeIfAbsent(s, SubsystemControllers::new);
    }

    /** The connections that came in through {@code port} and are still open. Any thread. */
    public Set<Queue> connections(Port port) {
        return connections.getOrDefault(port, Set.of());
    }

    /** {@code queue}'s connection closed. Its loop. */
    void connectionClosed(Queue queue) {
        Set<Queue> of = connections.get(queue.port);
        if (of != null) of.remove(queue);
    }

    // ---------------------------------------------------------------- the configuration's events

    /**
     * What this target does when its configuration changes ({@link ConfigEvents}): the
     * controllers and connections, which the configuration never sees, follow it. The
     * configuration thread, lock held.
     */
    private final class ConfigReactions implements ConfigEvents {
        /** What a host may discover changed: new generation, and discovery controllers hear of it. */
        @Override
        public void discoveryChanged() {
            discoveryGeneration++;
            for (Controller c : controllers(discovery).all()) c.discoveryChanged();
        }

        /** An ANA state or a namespace's ANA group changed. */
        @Override
        public void anaChanged() {
            anaChangeCount++;
        }

        @Override
        public Listener listen(Port port, InetSocketAddress address) throws IOException {
            Set<Queue> of = connections.computeIfAbsent(port, p -> ConcurrentHashMap.newKeySet());
            return transport.listen(address, socket -> {
                TcpQueue q = new TcpQueue(NvmeTarget.this, port, socket);
                of.add(q.sq);
                return q;
            });
        }

        @Override
        public void stopped(Port port) {
            closeConnections(port);
        }

        @Override
        public void portAnaChanged(Port port) {
            for (Subsystem s : port.subsystems.values()) for (Controller c : controllers(s).all()) if (c.port == port) c.anaChanged();
        }

        @Override
        public void subsystemAnaChanged(Subsystem subsystem) {
            for (Controller c : controllers(subsystem).all()) c.anaChanged();
        }

        @Override
        public void namespaceChanged(Subsystem subsystem, int nsid) {
            for (Controller c : controllers(subsystem).all()) c.namespaceChanged(nsid);
        }

        @Override
        public void controllersFail(Subsystem subsystem, Port port) {
            for (Controller c : List.copyOf(controllers(subsystem).all())) if (port == null || c.port == port) c.fatal();
            forgetIfGone(subsystem);
        }
    }

    /** Closes every connection that came in through {@code port}. Any thread. */
    private void closeConnections(Port port) {
        for (Queue q : connections(port)) q.close();
    }

    /** A subsystem removed from the configuration keeps its entry only until its last controller is gone. Lock held. */
    private void forgetIfGone(Subsystem s) {
        SubsystemControllers live = controllers.get(s);
        if (live != null && live.isEmpty() && s != discovery && subsystems.get(s.nqn) != s) controllers.remove(s);
    }

    /**
     * The subsystem a Connect to {@code nqn} through {@code port} reaches: the discovery
     * subsystem (by its configured or well-known NQN), or an NVM subsystem linked to the port.
     * Configuration lock held.
     */
    public Subsystem subsystemForConnect(Port port, String nqn) {
        if (nqn.equals(discovery.nqn) || nqn.equals(Subsystem.WELL_KNOWN_DISCOVERY_NQN)) return discovery;
        Subsystem s = subsystems.get(nqn);
        return s != null && port.links(s) ? s : null;
    }

    /**
     * What a host connecting to {@code s} must authenticate with, or null, as nvmet's
     * {@code nvmet_setup_auth}: nobody on the discovery subsystem or on one open to any host;
     * an allowed host when it has a key. Configuration lock held.
     */
    DhChapCredentials credentials(Subsystem s, String hostNqn) {
        if (s.discovery || s.allowAnyHost) return null;
        for (Host h : s.allowedHosts.values()) if (h.nqn.equals(hostNqn)) return h.credentials();
        return null;
    }

    /**
     * The TLS pre-shared key for the PSK identity a host offers on {@code port}
     * ({@code NVMe<0|1>R<01|02> hostNQN subNQN [digest]}, {@link TlsKey}), or null: the
     * host has no {@code tls_key}, the subsystem is not reachable through the port, or the
     * identity is not the one the host's key gives (another hash, another digest). A host that
     * offers an unknown identity fails the handshake. Loop thread, during a handshake.
     */
    PskKeys.Psk tlsPsk(Port port, String identity) {
        String[] parts = identity.split(" ", -1);
        if (parts.length < 3 || parts.length > 4 || !parts[0].matches("NVMe[01]R0[12]")) return null;
        int version = parts[0].charAt(4) - '0';
        lock();
        try {
            Host host = hosts.get(parts[1]);
            TlsKey key = host == null ? null : host.tlsKey;
            if (key == null || subsystemForConnect(port, parts[2]) == null) return null;
            if (!identity.equals(key.identity(version, parts[1], parts[2]))) return null;
            return new PskKeys.Psk(key.tlsPsk(identity, parts[1]), key.sha384());
        } catch (IllegalArgumentException tooLong) {
            return null;                                    // NQNs too long for an HKDF context
        } finally {
            unlock();
        }
    }

    /** The discovery log as {@code c}'s host sees it through {@code c}'s port. */
    public ByteBuffer discoveryLog(Controller c) {
        lock();
        try {
            List<String> nqns = new ArrayList<>();
            nqns.add(discovery.nqn);
            for (Subsystem s : c.port.subsystems.values()) {
                if (s.allows(c.hostNqn) && !nqns.contains(s.nqn)) nqns.add(s.nqn);
            }
            return commands.discoveryLog(discoveryGeneration, c.port, nqns);
        } finally {
            unlock();
        }
    }

    /** Lock held. */
    public long anaChangeCount() {
        return anaChangeCount;
    }

    /**
     * The ANA groups a log page reports, ascending (nvmet_ana_group_enabled): the default group,
     * every group some port has a directory for, and every group some namespace is in. Lock held.
     */
    public SortedSet<Integer> anaGroupsInUse() {
        SortedSet<Integer> groups = new TreeSet<>();
        for (Port p : ports.values()) groups.addAll(p.anaGroupIds());
        for (Subsystem s : subsystems.values()) for (int g : s.anaGroupIds()) groups.add(g);
        return groups;
    }

    /**
     * {@link Reservations.Hosts}: reservation notices of namespace {@code nsid} go to this node's
     * controllers of the hosts they name (log page 0x80, AEN); with {@code abort}, those of the
     * hosts whose registration was preempted drop the commands on the namespace that a policy
     * still holds, on their queues' loops. Completes once they have. A reservation thread.
     */
    private CompletableFuture<Void> deliver(String subsystemNqn, int nsid, List<ReservationState.Notice> notices, boolean abort) {
        List<CompletableFuture<Void>> cancelled = new ArrayList<>();
        lock();
        try {
            Subsystem s = subsystems.get(subsystemNqn);
            for (Controller c : s == null ? List.<Controller>of() : controllers(s).all()) {
                for (ReservationState.Notice n : notices) {
                    if (n.hostHigh() != c.hostIdHigh || n.hostLow() != c.hostIdLow) continue;
                    c.reservationNotice(nsid, n.type());
                    if (abort && n.type() == ReservationState.NOTICE_REGISTRATION_PREEMPTED) cancelled.add(c.cancelHeld(nsid));
                }
            }
        } finally {
            unlock();
        }
        return CompletableFuture.allOf(cancelled.toArray(CompletableFuture<?>[]::new));
    }

    /**
     * The reservations' side of the ANA log page changed here (this node fenced or no longer, a
     * namespace's copy known or not): like a written ana_state, the change count moves and every
     * controller hears of it (ANA change AEN). A reservation thread.
     */
    private void reservationAnaChanged() {
        lock();
        try {
            anaChangeCount++;
            for (Subsystem s : subsystems.values()) for (Controller c : controllers(s).all()) c.anaChanged();
        } finally {
            unlock();
        }
    }

    /** A controller's admin queue closed. */
    void controllerGone(Controller c) {
        lock();
        try {
            SubsystemControllers live = controllers.get(c.subsystem);
            if (live != null) live.remove(c);
            forgetIfGone(c.subsystem);
        } finally {
            unlock();
        }
    }

    /** Stops every port, closes every connection and disables every namespace (releasing devices and groups). */
    @Override
    public void close() {
        lock();
        try {
            for (Port p : ports.values()) {
                p.stop();
                closeConnections(p);
            }
            for (Subsystem s : subsystems.values()) {
                for (Namespace ns : s.namespaces.values()) {
                    InFlightCommands inFlight = ns.stop();
                    if (inFlight == null) continue;
                    inFlight.await();
                    ns.release(engine);
                }
                s.publishTable();
            }
        } finally {
            unlock();
        }
        scheduler.shutdownNow();
        authentication.shutdownNow();
        reservations.close();
        if (ownsTransport) transport.close();
    }
}
