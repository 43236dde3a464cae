package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import io.iotarget.cluster.ClusterSettings;
import io.iotarget.cluster.Coordinator;
import io.iotarget.cluster.ShareStore;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.config.ConfigLoader.Listen;
import io.iotarget.control.config.ConfigLoader.ServerSettings;
import io.iotarget.control.config.ConfigSaver;
import io.iotarget.control.config.Ownership;
import io.iotarget.control.config.PersistedTree;
import io.iotarget.control.group.GroupConfig;
import io.iotarget.control.calibrate.Calibration;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.metrics.ClusterMetrics;
import io.iotarget.control.metrics.ServerMetrics;
import io.iotarget.control.tree.BackendTree;
import io.iotarget.control.tree.CgroupTree;
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
    /** The trees kept in server.state; null without one. */
    private final PersistedTree state;
    /** The gateway group's shared subsystems in the store (cluster.group); null without a group. */
    private final GroupConfig group;
    private final List<String> summary;

    private Server(Engine engine, Transport transport, NbdServer nbd, NvmeTarget nvme, MountTable mounts, ControlEndpoint endpoint,
                   Coordinator cluster, PersistedTree state, GroupConfig group, List<String> summary) {
        this.engine = engine;
        this.group = group;
        this.cluster = cluster;
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
        try {
            reservations(nvme, clusterSettings, settings.state());
        } catch (ConfigException e) {
            nbd.close();
            nvme.close();
            transport.close();
            engine.close();
            throw e;
        }
        PersistedTree state = null;
        GroupConfig group = null;
        // Made before the trees are replayed, so that io.max.global starts at the floor; started after.
        Coordinator cluster = clusterSettings == null ? null
                : new Coordinator(engine.controller(), clusterSettings,
                                  shareStore(clusterSettings, nbd, nvme, transport, engine), System::nanoTime);
        try {
            group = groupConfig(clusterSettings, nvme);
            MountTable mounts = new MountTable()
                    .mount(MountTable.CGROUP, new CgroupTree(engine.controller()))
                    .mount("backends", new BackendTree(engine))
                    .mount("nbd", nbd.tree())
                    .mount("nvmet", group == null ? nvme.tree() : group);
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
                endpoint = new ControlEndpoint(settings.control().address(), tls, tokenDirectory, served, () -> deviceTable(engine), metrics, saver::save,
                                              (device, options) -> Calibration.prepare(engine, device, options));
            } catch (BindException e) {
                throw cannotListen(settings.control(), e);
            }
            summary.add("control endpoint " + endpoint.url() + (endpoint.tls() ? " (TLS" : " (loopback")
                        + "; every request needs the token in " + endpoint.tokenFile() + ", readable only by this user)");
            if (state != null) summary.add("every change kept in " + settings.state() + (state.restored() ? " (restored from it)" : ""));
            if (cluster != null) {
                cluster.start();
                summary.add("cluster node " + clusterSettings.node() + " of " + clusterSettings.nodes() + ", store " + clusterSettings.store()
                            + ", every " + clusterSettings.intervalMs() + " ms, lease " + clusterSettings.leaseMs() + " ms");
            }
            return new Server(engine, transport, nbd, nvme, mounts, endpoint, cluster, state, group, summary);
        } catch (ConfigException | IOException | RuntimeException e) {
            if (group != null) group.close();
            if (cluster != null) cluster.close();
            if (endpoint != null) endpoint.close();
            if (state != null) state.close();
            nbd.close();
            nvme.close();
            transport.close();
            engine.close();
            throw e;
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
    private static void reservations(NvmeTarget nvme, ClusterSettings cluster, Path state) throws ConfigException {
        if (cluster != null) {
            try {
                nvme.reservations().use(EtcdReservationStore.join(cluster), cluster.intervalMs(), cluster.leaseMs());
            } catch (IOException e) {
                throw new ConfigException("cluster.store = \"" + cluster.store() + "\": " + e.getMessage(), e);
            }
            return;
        }
        if (state == null) return;
        Path file = state.resolveSibling(state.getFileName() + ".reservations");
        try {
            if (java.nio.file.Files.exists(file, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                Ownership.requirePrivate(file, "the file", "check its contents, then make it yours with mode 0600, or remove it");
            }
            nvme.reservations().use(new LocalReservationStore(file), 0, 0);
        } catch (IOException e) {
            throw new ConfigException("server.state = \"" + state + "\": its reservations: " + e.getMessage(), e);
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


    /** Front ends first (they answer what they accepted), their transport, then the control endpoint, the cluster loop, then the engine. */
    @Override
    public void close() {
        nbd.close();
        nvme.close();
        transport.close();
        endpoint.close();
        if (state != null) state.close();
        if (group != null) group.close();
        if (cluster != null) cluster.close();
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
