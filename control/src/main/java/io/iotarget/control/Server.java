package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import io.iotarget.cluster.ClusterSettings;
import io.iotarget.cluster.Coordinator;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.GatewayGroup;
import io.iotarget.cluster.ShareStore;
import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.config.ConfigLoader.Listen;
import io.iotarget.control.config.ConfigLoader.ServerSettings;
import io.iotarget.control.config.ConfigSaver;
import io.iotarget.control.config.Ownership;
import io.iotarget.control.config.PersistedTree;
import io.iotarget.control.group.GroupConfig;
import io.iotarget.control.calibrate.Calibration;
import io.iotarget.control.fence.RadosFence;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.metrics.ClusterMetrics;
import io.iotarget.control.metrics.GatewayMetrics;
import io.iotarget.control.metrics.ServerMetrics;
import io.iotarget.control.tree.BackendTree;
import io.iotarget.control.tree.CgroupTree;
import io.iotarget.control.tree.ClusterTree;
import io.iotarget.control.tree.MountTable;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nbd.NbdServer;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.frontend.nvmetcp.reservation.LocalReservationStore;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.Device;
import io.iotarget.transport.Pem;
import io.iotarget.transport.Transport;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import javax.net.ssl.SSLContext;
import java.io.IOException;
import java.io.InputStream;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A running iotarget: the engine, every front end, the mounted control trees and the control
 * endpoint, configured from one JSON document (the embedded default when none is given).
 */
public final class Server implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(Server.class.getName());

    private static final String DEFAULT_CONFIG = "default-config.json";

    private final Engine engine;
    private final Transport transport;
    private final NbdServer nbd;
    private final NvmeTarget nvme;
    private final MountTable mounts;
    private final ControlEndpoint endpoint;
    /** This node's side of the cluster (the config's cluster section); null on a node alone. */
    private final Coordinator cluster;
    /** This node's RADOS clients published for fencing, in a cluster (docs/rbd.md); null on a node alone. */
    private final RadosFence storageFence;
    /** This node's gateway group (cluster.group) and the etcd client it alone uses; null without a group. */
    private final GatewayGroup gateway;
    private final EtcdClient gatewayClient;
    /** The trees kept in server.state; null without one. */
    private final PersistedTree state;
    /** The gateway group's shared subsystems in the store (cluster.group); null without a group. */
    private final GroupConfig group;
    private final List<String> summary;

    private Server(Engine engine, Transport transport, NbdServer nbd, NvmeTarget nvme, MountTable mounts, ControlEndpoint endpoint,
                   Coordinator cluster, RadosFence storageFence, GatewayGroup gateway, EtcdClient gatewayClient, PersistedTree state,
                   GroupConfig group, List<String> summary) {
        this.engine = engine;
        this.gateway = gateway;
        this.gatewayClient = gatewayClient;
        this.group = group;
        this.cluster = cluster;
        this.storageFence = storageFence;
        this.state = state;
        this.transport = transport;
        this.nbd = nbd;
        this.nvme = nvme;
        this.mounts = mounts;
        this.endpoint = endpoint;
        this.summary = summary;
    }

    /** The embedded default configuration. */
    public static JsonNode defaultConfig() throws ConfigException {
        try (InputStream in = Server.class.getResourceAsStream(DEFAULT_CONFIG)) {
            if (in == null) throw new ConfigException("the embedded " + DEFAULT_CONFIG + " is missing from the build");
            return ConfigLoader.parse(in, "embedded " + DEFAULT_CONFIG);
        } catch (IOException e) {
            throw new ConfigException("cannot read the embedded " + DEFAULT_CONFIG + ": " + e.getMessage());
        }
    }

    /**
     * Builds everything the config describes and starts listening; on any error nothing keeps
     * running. The control endpoint's token file goes in {@code tokenDirectory}
     * ({@link io.iotarget.control.http.ControlToken#directory}).
     */
    public static Server start(JsonNode config, Path tokenDirectory) throws ConfigException, IOException {
        ServerSettings settings = fitDescriptors(ConfigLoader.serverSettings(config), config.path("server").has("max_connections"), descriptorLimit());
        // What a log line needs, the time zones read from a file among it, loaded now rather than at
        // the first warning, perhaps when no descriptor is left (ControlAcceptTest): a class that
        // failed to initialize stays failed, and every later log line of the process would throw.
        new java.util.logging.SimpleFormatter().format(new java.util.logging.LogRecord(java.util.logging.Level.INFO, "start"));
        ClusterSettings clusterSettings = ConfigLoader.clusterSettings(config);
        SSLContext tls = tls(settings);
        Engine engine;
        try {
            engine = new Engine(io.iotarget.model.Clock.SYSTEM, true, settings.engine());
        } catch (java.io.UncheckedIOException e) {
            throw new ConfigException("server.io_engine = \"io_uring\": " + e.getMessage() + " (" + e.getCause().getMessage() + "); use \"auto\" or \"threads\"");
        }
        Transport transport = new Transport(settings.transport());
        NbdServer nbd = new NbdServer(engine, transport);
        NvmeTarget nvme = new NvmeTarget(engine, transport);
        engine.controller().tree().onLegacyHostGroup(Server::warnOfLegacyHostGroup);
        ControlEndpoint endpoint = null;
        EtcdReservationStore etcdStore;
        GatewayGroup gateway = null;
        EtcdClient gatewayClient = null;
        try {
            etcdStore = reservations(nvme, clusterSettings, settings.state());
            if (clusterSettings != null && clusterSettings.group() != null) {
                gatewayClient = etcdClient(clusterSettings);
                gateway = new GatewayGroup(gatewayClient, etcdStore.membership(), clusterSettings.group(),
                                           java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(clusterSettings.intervalMs()),
                                           io.iotarget.model.Clock.SYSTEM, new GatewayPorts(nvme.tree()));
                joinGroup(gateway, clusterSettings, nvme);
            }
        } catch (ConfigException e) {
            if (gateway != null) gateway.close();
            if (gatewayClient != null) gatewayClient.close();
            nbd.close();
            nvme.close();
            transport.close();
            engine.close();
            throw e;
        }
        PersistedTree state = null;
        GroupConfig group = null;
        // Made before the trees are replayed, so that io.max.global starts at the floor; started after.
        GatewayGroup members = gateway;
        Coordinator cluster = clusterSettings == null ? null
                : new Coordinator(engine.controller(), clusterSettings,
                                  shareStore(clusterSettings, nbd, nvme, transport, engine), System::nanoTime,
                                  clusterSettings.nodes() == 0 && members != null ? members::liveMembers : clusterSettings::nodes);
        RadosFence storageFence = null;
        try {
            if (clusterSettings != null) {
                storageFence = storageFence(clusterSettings, engine, etcdStore.membership().fence()::lease);
                // Before any change can wait for a node or a group fail over: a node whose lease ended is fenced at the storage first.
                etcdStore.fenceStorageWith(storageFence);
                if (gateway != null) gateway.fenceStorageWith(storageFence);
            }
            RadosFence fence = storageFence;
            group = groupConfig(clusterSettings, nvme);
            MountTable mounts = new MountTable()
                    .mount(MountTable.CGROUP, new CgroupTree(engine.controller()))
                    .mount("backends", new BackendTree(engine).onRbdOpened(backend -> rbdOpened(backend, fence)))
                    .mount("nbd", nbd.tree())
                    .mount("nvmet", group == null ? nvme.tree() : group);
            if (gateway != null) mounts.mount("cluster", new ClusterTree(gateway, etcdStore.membership().fence()));
            ConfigLoader.Trees trees = section -> mounted(mounts, section);
            ConfigSaver saver = new ConfigSaver(config.get("server"), config.get("cluster"), trees);
            if (settings.state() != null) {
                state = PersistedTree.open(settings.state(), mounts, saver, config, trees);
                engine.controller().tree().onHostChildMade(state::hostGroupMade);
            } else {
                ConfigLoader.apply(config, trees);
            }
            if (group != null) startGroup(group, clusterSettings);
            ConfigTree served = state == null ? mounts : state;
            List<String> summary = new ArrayList<>();
            for (Listen listen : settings.nbd()) {
                try {
                    nbd.listen(listen.address());
                } catch (IOException e) {
                    throw cannotListen(listen, e);
                }
            }
            String nbdTls = nbdTls(nbd);
            for (InetSocketAddress address : nbd.localAddresses()) {
                summary.add("NBD on " + ControlEndpoint.hostPort(address) + " (exports: " + String.join(", ", exportNames(nbd))
                            + (nbdTls.isEmpty() ? "" : "; TLS with " + nbdTls) + ")");
            }
            summary.addAll(nvmePorts(nvme.tree()));
            try {
                PrometheusRegistry metrics = new PrometheusRegistry();
                metrics.register(new ServerMetrics(engine, nbd, nvme));
                if (cluster != null) metrics.register(new ClusterMetrics(cluster));
                if (gateway != null) metrics.register(new GatewayMetrics(gateway, etcdStore.membership().fence()));
                endpoint = new ControlEndpoint(settings.control().address(), tls, tokenDirectory, served, () -> deviceTable(engine), metrics, saver::save,
                                              new LongListing(served, LongListing.INTERVAL)::text,
                                              (device, options) -> Calibration.prepare(engine, device, options));
            } catch (BindException e) {
                throw cannotListen(settings.control(), e);
            }
            summary.add("control endpoint " + endpoint.url() + (endpoint.tls() ? " (TLS" : " (loopback")
                        + "; every request needs the token in " + endpoint.tokenFile() + ", readable only by this user)");
            if (state != null) summary.add("every change kept in " + settings.state() + (state.restored() ? " (restored from it)" : ""));
            if (cluster != null) {
                cluster.start();
                summary.add("cluster node " + clusterSettings.node() + " of "
                            + (clusterSettings.nodes() == 0 ? "the group's live members" : Integer.toString(clusterSettings.nodes()))
                            + ", store " + clusterSettings.store() + ", every " + clusterSettings.intervalMs() + " ms, lease " + clusterSettings.leaseMs() + " ms");
            }
            if (gateway != null) {
                gateway.start();
                int[] range = gateway.range();
                summary.add("gateway group " + clusterSettings.group() + ": controller ids " + range[0] + ".." + range[1]
                            + " for shared subsystems; ANA group owners in the store (ls /cluster/members)");
            }
            return new Server(engine, transport, nbd, nvme, mounts, endpoint, cluster, storageFence, gateway, gatewayClient, state, group, summary);
        } catch (ConfigException | IOException | RuntimeException e) {
            if (group != null) group.close();
            if (gateway != null) gateway.close();
            if (gatewayClient != null) gatewayClient.close();
            if (cluster != null) cluster.close();
            if (storageFence != null) storageFence.close();
            if (endpoint != null) endpoint.close();
            if (state != null) state.close();
            nbd.close();
            nvme.close();
            transport.close();
            engine.close();
            throw e;
        }
    }

    /** serve's status when another node blocklisted its RADOS client: EX_TEMPFAIL, so that the service manager starts it again. */
    static final int EXIT_FENCED = 75;

    /** The fence that publishes this node's RADOS clients; a store that cannot be set up (its TLS files) stops the start. */
    private static RadosFence storageFence(ClusterSettings cluster, Engine engine, java.util.function.LongSupplier lease) throws ConfigException {
        try {
            return RadosFence.open(cluster, () -> {
                List<RbdBackend> rbd = new ArrayList<>();
                for (Device d : engine.devices()) {
                    if (engine.backend(d) instanceof RbdBackend b) rbd.add(b);
                }
                return rbd;
            }, lease);
        } catch (IOException e) {
            throw new ConfigException("cluster.store = \"" + cluster.store() + "\": " + e.getMessage(), e);
        }
    }

    /**
     * With {@code cluster.group}: the nvmet tree as the group's member serves it, its shared
     * subsystems kept in the store (docs/cluster.md, "Gateway group configuration"); null without.
     */
    private static GroupConfig groupConfig(ClusterSettings cluster, NvmeTarget nvme) throws ConfigException {
        if (cluster == null || cluster.group() == null) return null;
        try {
            return GroupConfig.open(cluster, nvme.tree());
        } catch (IOException | RuntimeException e) {
            throw new ConfigException("cluster.store = \"" + cluster.store() + "\": " + e.getMessage(), e);
        }
    }

    /**
     * Each RBD image this node opens, before it serves: in a cluster its RADOS client is
     * published, so that the node that takes over from this one can blocklist it, and a
     * blocklisting — another node took this one for dead and fenced it — stops the process at
     * once: its clients can never write again, and a new process comes back with new ones, a new
     * lease and every state read afresh (docs/rbd.md, "Fencing").
     */
    private static void rbdOpened(RbdBackend backend, RadosFence fence) throws IOException {
        if (fence == null) return;
        fence.published(backend);
        backend.onBlocklisted(() -> {
            LOG.log(System.Logger.Level.ERROR, "rbd " + backend.options().spec() + ": another node blocklisted this node's RADOS client " + "(it took this node"
                                               + " for dead and fenced it at the storage); stopping with status " + EXIT_FENCED
                                               + " so that the service manager starts it again with new clients");
            Runtime.getRuntime().halt(EXIT_FENCED);
        });
    }

    /** The config applied: the group's store gets this node's newly shared subsystems and wins over its copies; its watch starts. */
    private static void startGroup(GroupConfig group, ClusterSettings cluster) throws ConfigException {
        try {
            group.start();
        } catch (IOException e) {
            throw new ConfigException("cluster.group = \"" + cluster.group() + "\": its shared subsystems in the store: " + e.getMessage(), e);
        }
    }

    /** The cluster's etcd for io.max.global; a store that cannot be set up (its TLS files) stops the start. */
    private static ShareStore shareStore(ClusterSettings cluster, NbdServer nbd, NvmeTarget nvme, Transport transport, Engine engine) throws ConfigException {
        try {
            return ShareStore.open(cluster, Duration.ofMillis(cluster.intervalMs()));
        } catch (IOException | RuntimeException e) {
            nbd.close();
            nvme.close();
            transport.close();
            engine.close();
            throw new ConfigException("cluster.store = \"" + cluster.store() + "\": " + e.getMessage(), e);
        }
    }

    /**
     * Where nvmet's reservations live (docs/reservations.md): in the cluster's store, shared by
     * the nodes; else in the server, those with PTPL set in {@code server.state}'s sibling
     * {@code NAME.reservations}; else only in memory. Before the trees enable namespaces. In a
     * cluster this node joins the cluster's membership here: its lease fences its IO on
     * reservation namespaces, and changes wait for every live node's acknowledgement.
     */
    private static EtcdReservationStore reservations(NvmeTarget nvme, ClusterSettings cluster, Path state) throws ConfigException {
        if (cluster != null) {
            try {
                EtcdReservationStore store = EtcdReservationStore.join(cluster);
                nvme.reservations().use(store, cluster.intervalMs(), cluster.leaseMs());
                return store;
            } catch (IOException e) {
                throw new ConfigException("cluster.store = \"" + cluster.store() + "\": " + e.getMessage(), e);
            }
        }
        if (state == null) return null;
        Path file = state.resolveSibling(state.getFileName() + ".reservations");
        try {
            if (java.nio.file.Files.exists(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                Ownership.requirePrivate(file, "the file", "check its contents, then make it yours with mode 0600, or remove it");
            }
            nvme.reservations().use(new LocalReservationStore(file), 0, 0);
        } catch (IOException e) {
            throw new ConfigException("server.state = \"" + state + "\": its reservations: " + e.getMessage(), e);
        }
        return null;
    }

    /** How long a node waits at start for the store to give it a controller-ID range: this many leases. */
    static final int GROUP_JOIN_LEASES = 10;

    /** A client of the gateway group's own, each call bounded like the membership's (a third of the lease). */
    private static EtcdClient etcdClient(ClusterSettings cluster) throws ConfigException {
        try {
            return EtcdClient.create(cluster.store(), cluster.access(), Duration.ofMillis(Math.max(100, cluster.leaseMs() / 3)));
        } catch (IOException e) {
            throw new ConfigException("cluster.store = \"" + cluster.store() + "\": " + e.getMessage(), e);
        }
    }

    /**
     * Joins the gateway group before the trees are replayed: the shared subsystems' controllers
     * take ids from the range the store gives this node (docs/ha.md, "Gateway groups"). Waits for
     * the store up to {@link #GROUP_JOIN_LEASES} leases (at least 10 s), then refuses to start.
     */
    private static void joinGroup(GatewayGroup gateway, ClusterSettings cluster, NvmeTarget nvme) throws ConfigException {
        long waitMs = Math.max(10_000, GROUP_JOIN_LEASES * cluster.leaseMs());
        try {
            int[] range = gateway.join(java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(waitMs));
            nvme.gatewayCntlids(range[0], range[1]);
        } catch (IOException e) {
            throw new ConfigException("cluster.group = \"" + cluster.group() + "\": " + e.getMessage() + " (waited " + waitMs + " ms for " + cluster.store() + ")", e);
        }
    }

    /**
     * Descriptors kept for what is not a client's connection: the JVM's jars, the loops'
     * selectors, io_uring rings, backend files, the cluster store's connections, the state and
     * token files, accepted sockets on their way to being refused. The JVM uses about 60.
     */
    static final int RESERVED_DESCRIPTORS = 512;

    /**
     * No listener's accept may fail for want of a descriptor another holds: NBD and NVMe/TCP
     * together keep at most {@code server.max_connections}, the control endpoint
     * {@link ControlEndpoint#MAX_CONNECTIONS}, and both refuse past their caps, so their sum
     * and {@link #RESERVED_DESCRIPTORS} must fit under RLIMIT_NOFILE, which HotSpot raises from
     * the soft to the hard limit at start (its MaxFDLimit, on by default).
     */
    static void checkDescriptors(ServerSettings settings, long limit) throws ConfigException {
        long connections = settings.transport().maxConnections();
        long needed = connections + ControlEndpoint.MAX_CONNECTIONS + RESERVED_DESCRIPTORS;
        if (limit < needed) {
            throw new ConfigException("server.max_connections = " + connections + ": with the control endpoint's " + ControlEndpoint.MAX_CONNECTIONS
                                      + " connections and " + RESERVED_DESCRIPTORS + " descriptors kept for files, the server needs " + needed
                                      + " descriptors, but its limit (RLIMIT_NOFILE) is " + limit
                                      + " (raise the hard limit: ulimit -Hn, systemd's LimitNOFILE=; or lower server.max_connections to at most "
                                      + Math.max(0, limit - ControlEndpoint.MAX_CONNECTIONS - RESERVED_DESCRIPTORS) + ")");
        }
    }

    /**
     * {@link #checkDescriptors}, after lowering a default {@code server.max_connections} (one the
     * config does not set) to what the limit holds: the embedded config must start on a machine
     * whose hard limit is the kernel's 4096. A value the config sets is never changed: it is
     * refused when it does not fit.
     */
    static ServerSettings fitDescriptors(ServerSettings settings, boolean set, long limit) throws ConfigException {
        Transport.Settings t = settings.transport();
        long room = limit - ControlEndpoint.MAX_CONNECTIONS - RESERVED_DESCRIPTORS;
        if (!set && room >= 1 && t.maxConnections() > room) {
            int max = (int) room;
            t = new Transport.Settings(t.loops(), t.sendTimeout(), max, Math.min(t.maxConnectionsPerHost(), max), t.sendBufferBytes(), t.poll());
            settings = new ServerSettings(settings.control(), settings.nbd(), settings.tls(), t, settings.engine(), settings.state(), settings.warmUpMs());
        }
        checkDescriptors(settings, limit);
        return settings;
    }

    /** RLIMIT_NOFILE in effect (the JVM has raised the soft limit to the hard one). */
    private static long descriptorLimit() {
        return ((com.sun.management.UnixOperatingSystemMXBean) java.lang.management.ManagementFactory.getOperatingSystemMXBean())
                .getMaxFileDescriptorCount();
    }

    /** The control endpoint's TLS from the config's PEM files; null for plain HTTP. */
    private static SSLContext tls(ServerSettings settings) throws ConfigException {
        if (settings.tls() == null) return null;
        try {
            return Pem.serverContext(settings.tls().cert(), settings.tls().key(), settings.tls().keyPassphrase());
        } catch (Pem.PemException e) {
            String key = e.file().equals(settings.tls().cert()) ? "server.control_cert"
                    : e.file().equals(settings.tls().key()) ? "server.control_key" : "server.control_key_passphrase_file";
            throw new ConfigException(key + " = \"" + e.file() + "\": " + e.problem());
        }
    }

    /** {@code server.nbd = "127.0.0.1:10809": cannot listen on 127.0.0.1:10809: Address already in use}. */
    private static ConfigException cannotListen(Listen listen, IOException e) {
        String reason = e.getCause() != null ? e.getCause().getMessage() : e.getMessage();
        return new ConfigException(listen.field() + ": cannot listen on " + ControlEndpoint.hostPort(listen.address()) + ": " + reason, e);
    }

    static ConfigTree mounted(MountTable mounts, String section) {
        try {
            return mounts.resolve("/" + section).tree();
        } catch (io.iotarget.model.ControlException e) {
            return null;
        }
    }

    /** "NVMe/TCP on ADDR:PORT (NQN, ...)" for every port with linked subsystems. */
    private static List<String> nvmePorts(ConfigTree nvmet) {
        List<String> lines = new ArrayList<>();
        try {
            for (String port : nvmet.list("ports")) {
                String p = "ports/" + port.replace("/", "");
                List<String> subsystems = nvmet.list(p + "/subsystems");
                if (subsystems.isEmpty()) continue;
                lines.add("NVMe/TCP on " + nvmet.read(p + "/addr_traddr").strip() + ":" + nvmet.read(p + "/addr_trsvcid").strip()
                          + " (" + String.join(", ", subsystems) + ")");
            }
        } catch (io.iotarget.model.ControlException e) {
            lines.add("NVMe/TCP: " + e.getMessage());
        }
        return lines;
    }

    /** The NBD front end's TLS credentials directory, or "" when it serves no TLS. */
    private static String nbdTls(NbdServer nbd) {
        try {
            return nbd.tree().read("tls/certificates").strip();
        } catch (io.iotarget.model.ControlException e) {
            return "";
        }
    }

    private static List<String> exportNames(NbdServer nbd) {
        try {
            return nbd.tree().list("exports").stream().map(n -> n.endsWith("/") ? n.substring(0, n.length() - 1) : n).toList();
        } catch (io.iotarget.model.ControlException e) {
            return List.of();
        }
    }

    public Engine engine() {
        return engine;
    }

    public MountTable mounts() {
        return mounts;
    }

    public InetSocketAddress controlAddress() {
        return endpoint.address();
    }

    /** What the control endpoint's connections hold now. */
    public ControlEndpoint.Load controlLoad() {
        return endpoint.load();
    }

    /** Where NBD clients connect (the ports actually bound). */
    public List<InetSocketAddress> nbdAddresses() {
        return nbd.localAddresses();
    }

    /** One line per listener, for the start-up message. */
    public List<String> summary() {
        return summary;
    }

    /** The {@code devices} table: name, MAJ:MIN, size, backend type, users. */
    public static String deviceTable(Engine engine) {
        StringBuilder sb = new StringBuilder(String.format("%-16s %-8s %16s %-7s %s%n", "NAME", "MAJ:MIN", "SIZE", "TYPE", "USERS"));
        for (Device d : engine.devices()) {
            sb.append(String.format("%-16s %-8s %16d %-7s %d%n", d.name(), d.number(), d.sizeBytes(),
                    engine.backend(d).kind() + (d.readOnly() ? ",ro" : ""), engine.users(d)));
        }
        return sb.toString();
    }


    /**
     * The gateway group's loop first (it writes ANA states into the NVMe tree), then the front ends
     * (they answer what they accepted; the membership, and so the member key, goes with nvmet's
     * reservations), their transport, the control endpoint, the cluster loop, then the engine.
     */
    @Override
    public void close() {
        if (gateway != null) gateway.close();
        if (gatewayClient != null) gatewayClient.close();
        nbd.close();
        nvme.close();
        transport.close();
        endpoint.close();
        if (state != null) state.close();
        if (group != null) group.close();
        if (cluster != null) cluster.close();
        if (storageFence != null) storageFence.close();
        engine.close();
    }

    /**
     * A host now pays in {@code newPath}, while {@code legacyPath}, an ordinary group, has the
     * name versions before kind prefixes gave it: its settings no longer apply to the host
     * (docs/config.md, "Per-host charging", migration). Once per such group.
     */
    private static void warnOfLegacyHostGroup(String legacyPath, String newPath) {
        LOG.log(System.Logger.Level.WARNING, "cgroup_per_host: a host that earlier versions charged to " + legacyPath + " now pays in " + newPath
                                             + " (per-host names start with the kind of identity); move the old group's settings there"
                                             + " (docs/config.md, Per-host charging)");
    }
}
