package io.iotarget.control.config;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.exc.StreamConstraintsException;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import io.iotarget.backend.file.IoEngine;
import io.iotarget.buffer.BufferPool;
import io.iotarget.cluster.ClusterSettings;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.ShareStore;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.tree.CgroupTree;
import io.iotarget.control.tree.Sizes;
import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.transport.Transport;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Loads a JSON config by replaying it onto the control trees, the way nvmetcli restores a
 * saved configfs: an object is a directory (created with mkdir unless it exists), a scalar is
 * an attribute write, an array is several writes to one attribute — or, under a links
 * directory such as {@code ports/1/subsystems}, one link per element.
 *
 * <p>The order of keys in the file never matters (JSON objects are unordered): what decides is
 * each tree's own listing order, which is its dependency order and the order a save writes.
 * Sections are applied in dependency order (backends, cgroup, nbd, nvmet). In every directory
 * the attributes come first, in listing order (a group's {@code cgroup.subtree_control} before
 * its children, nbd's {@code allow_any_client} before {@code allowed_clients}); then the
 * subdirectories, in listing order ({@code tls} before {@code exports}: an export with tls 1
 * needs the credentials), new ones by name; then the attributes that gate what follows
 * ({@link #LAST}: {@code enable}, and the cgroup limits on descendants, which would refuse the
 * groups below). A section's links are made after all its directories and attributes (a port
 * links subsystems and hosts made elsewhere in the section).
 *
 * <pre>{@code
 * {
 *   "server":   { "control": "127.0.0.1:9809", "nbd": "127.0.0.1:10809" },
 *   "cluster":  { "node": "a", "store": "etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379", "nodes": 3, "interval_ms": 200, "lease_ms": 1000 },
 *   "backends": { "default": { "type": "memory", "size": "1G", "enable": 1 } },
 *   "cgroup":   { "tenants": { "cgroup.subtree_control": "+io", "a": { "io.max": "default riops=20000" } } },
 *   "nbd":      { "exports": { "default": { "backend": "default", "cgroup": "tenants/a", "enable": 1 } } },
 *   "nvmet":    { "subsystems": { ... }, "ports": { "1": { ..., "subsystems": ["nqn..."] } } }
 * }
 * }</pre>
 * The first error stops the load with a message naming the JSON field, the value as written
 * and what was expected (the tree's own error): {@code backends.m.size = 1000: Invalid
 * argument (EINVAL): size=1000 (expected: a multiple of block_size 512)}. JSON booleans are
 * taken only by 0/1 flags ({@link #FLAGS}); a busy port is blamed on the key that names it
 * ({@code server.nbd}, {@code server.control}, {@code nvmet.ports.ID.addr_trsvcid}).
 */
public final class ConfigLoader {
    /** Sections other than "server", in the order they are applied. */
    public static final List<String> SECTIONS = List.of("backends", "cgroup", "nbd", "nvmet");
    /** Where a link in a links directory of this name points: {@code subsystems/NAME}, {@code hosts/NAME}. */
    private static final Map<String, String> LINK_TARGETS = Map.of("subsystems", "subsystems", "allowed_hosts", "hosts");
    /** Written after everything else in their directory, subdirectories included, in this order. */
    public static final List<String> LAST = List.of("cgroup.max.descendants", "cgroup.max.depth", "enable");
    /** Attributes whose values are secrets (nvmet's DH-HMAC-CHAP keys, NVMe/TCP TLS keys): an error names the field but never shows the value. */
    private static final Set<String> SECRET_ATTRIBUTES = Set.of("dhchap_key", "dhchap_ctrl_key", "tls_key");
    /** The 0/1 attributes of every tree: only these take JSON {@code true}/{@code false} (as 1/0). */
    private static final Set<String> FLAGS = Set.of("enable", "readonly", "create", "direct", "buffered_io", "attr_allow_any_host", "tls",
                                                    "allow_any_client", "shared", "cgroup_per_host");
    /** What attributes other than flags expect, where that is narrower than any string or integer. */
    private static final Map<String, String> EXPECTED = Map.of("size", Sizes.EXPECTED + " (an integer or a string)");

    private static final JsonNode SECRET = com.fasterxml.jackson.databind.node.TextNode.valueOf("(secret)");

    /**
     * The deepest a config nests: the top level, a section, a group per level of the deepest
     * group {@link CgroupTree} allows, and an array (io.max's lines). Saves never nest deeper
     * ({@link ConfigSaver} writes with the same limit), so every saved file loads back.
     */
    public static final int MAX_NESTING = CgroupTree.MAX_DEPTH + 3;

    private static final ObjectMapper JSON = new ObjectMapper(JsonFactory.builder()
                    .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_NESTING).build()).build())
            .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(JsonParser.Feature.ALLOW_COMMENTS)
            // Jackson stops after the first value by default: a second object would be dropped unread.
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    /** One address to listen on and the key that asked for it, for messages: {@code server.nbd[1] = "127.0.0.1:10809"}. */
    public record Listen(String key, String value, InetSocketAddress address) {
        /** {@code key = value}, as every config message starts. */
        public String field() {
            return key + " = " + value;
        }
    }

    /**
     * The control endpoint's certificate chain and private key (PEM files), when it serves TLS,
     * and the file holding the key's passphrase (null: the key is not encrypted).
     */
    public record Tls(Path cert, Path key, Path keyPassphrase) {
    }

    /**
     * The "server" section: where to listen, the control endpoint's TLS (null: plain HTTP on
     * loopback), the connection machinery's limits, and the state file (null: none) that keeps
     * every change ({@link StateFile}).
     */
    public record ServerSettings(Listen control, List<Listen> nbd, Tls tls, Transport.Settings transport, Engine.Settings engine,
                                 Path state, long warmUpMs) {
    }

    /** A config that could not be applied: where, what, and the tree's error. */
    public static final class ConfigException extends Exception {
        private static final long serialVersionUID = 1L;

        public ConfigException(String message) {
            super(message);
        }

        public ConfigException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** Looks up a mounted tree by section name; null when that front end is not built in. */
    @FunctionalInterface
    public interface Trees {
        ConfigTree tree(String section);
    }

    private ConfigLoader() {
    }

    public static JsonNode parse(Path file) throws ConfigException {
        try {
            return parse(Files.readString(file), file + ": ");
        } catch (IOException e) {
            throw new ConfigException(file + ": cannot read: " + e.getMessage());
        }
    }

    public static JsonNode parse(InputStream in, String name) throws ConfigException {
        try {
            return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8), name + ": ");
        } catch (IOException e) {
            throw new ConfigException(name + ": cannot read: " + e.getMessage());
        }
    }

    /**
     * Parses a config's text; {@code prefix} starts every message. A document nested deeper than
     * {@link #MAX_NESTING} is refused here, with its place, rather than by the trees.
     */
    static JsonNode parse(String text, String prefix) throws ConfigException {
        try (JsonParser parser = JSON.createParser(text)) {
            try {
                JsonNode root = JSON.readTree(parser);
                return root == null ? MissingNode.getInstance() : root;
            } catch (JsonProcessingException e) {
                // A nesting limit's exception carries no location (hence issue 19's NullPointerException): the parser knows it.
                JsonLocation at = e.getLocation() != null ? e.getLocation() : parser.currentLocation();
                String place = " at line " + at.getLineNr() + ", column " + at.getColumnNr();
                if (e instanceof StreamConstraintsException) {
                    throw new ConfigException(prefix + "nested deeper than " + MAX_NESTING + " levels" + place + " (groups may be at most "
                                              + CgroupTree.MAX_DEPTH + " deep)");
                }
                throw new ConfigException(prefix + "not valid JSON: " + e.getOriginalMessage() + place);
            }
        } catch (IOException e) {
            throw new ConfigException(prefix + "cannot read: " + e.getMessage());
        }
    }

    /**
     * Reads the "server" section. The control endpoint defaults to
     * {@link ControlEndpoint#DEFAULT_ADDRESS}; one on a non-loopback address must have TLS.
     */
    public static ServerSettings serverSettings(JsonNode root) throws ConfigException {
        checkObject(root, "(top level)");
        for (String key : sortedKeys(root)) {
            if (!key.equals("server") && !key.equals("cluster") && !SECTIONS.contains(key)) {
                throw new ConfigException(key + ": unknown section (expected: server, cluster, " + String.join(", ", SECTIONS) + ")");
            }
        }
        JsonNode server = root.path("server");
        if (!server.isMissingNode()) checkObject(server, "server");
        List<String> keys = List.of("control", "control_cert", "control_key", "control_key_passphrase_file", "nbd", "event_loops", "send_timeout_ms",
                                    "send_buffer", "poll_us", "max_connections", "max_connections_per_host", "buffer_memory", "buffer_share", "io_engine", "state", "warm_up_ms");
        for (String key : sortedKeys(server)) {
            if (!keys.contains(key)) throw new ConfigException("server." + key + ": unknown setting (expected: " + String.join(", ", keys) + ")");
        }
        Listen control = server.has("control")
                ? address("server.control", server.get("control"))
                : new Listen("server.control", "(default " + ControlEndpoint.hostPort(ControlEndpoint.DEFAULT_ADDRESS) + ")",
                             ControlEndpoint.DEFAULT_ADDRESS);
        Path cert = pemFile("server.control_cert", server.get("control_cert"));
        Path key = pemFile("server.control_key", server.get("control_key"));
        Path keyPassphrase = absolutePath("server.control_key_passphrase_file", server.get("control_key_passphrase_file"),
                                          "a file whose first line is the passphrase of server.control_key");
        if (keyPassphrase != null && key == null) {
            throw new ConfigException("server.control_key_passphrase_file: set without server.control_key");
        }
        if ((cert == null) != (key == null)) {
            throw new ConfigException((cert == null ? "server.control_cert" : "server.control_key")
                                      + ": missing (TLS needs both server.control_cert and server.control_key)");
        }
        if (cert == null && !control.address().getAddress().isLoopbackAddress()) {
            throw new ConfigException(control.field() + ": not a loopback address, so the control endpoint needs TLS: set "
                                      + "server.control_cert and server.control_key (PEM files); every request then needs the token");
        }
        List<Listen> nbd = new ArrayList<>();
        JsonNode n = server.path("nbd");
        if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) nbd.add(address("server.nbd[" + i + "]", n.get(i)));
        } else if (!n.isMissingNode() && !n.isNull()) {
            nbd.add(address("server.nbd", n));
        }
        Transport.Settings defaults = Transport.Settings.defaults();
        Transport.Settings transport = new Transport.Settings(
                (int) count("server", server, "event_loops", defaults.loops(), 0, 1024, "event loop threads, 0 for one per core"),
                java.time.Duration.ofMillis(count("server", server, "send_timeout_ms", defaults.sendTimeout().toMillis(), 1, 86_400_000,
                                                  "milliseconds a client may take none of its replies")),
                (int) count("server", server, "max_connections", defaults.maxConnections(), 1, 1_000_000, "connections in all"),
                (int) count("server", server, "max_connections_per_host", defaults.maxConnectionsPerHost(), 1, 1_000_000,
                            "connections from one client address"),
                sendBuffer(server.get("send_buffer"), defaults.sendBufferBytes()),
                java.time.Duration.ofNanos(1000 * count("server", server, "poll_us", defaults.poll().toNanos() / 1000, 0, 1000,
                                                        "microseconds an event loop busy-polls after its last work, 0 for never")));
        Engine.Settings engineDefaults = Engine.Settings.defaults();
        long bufferMemory = size(server, "buffer_memory", engineDefaults.bufferMemoryBytes());
        long bufferShare = size(server, "buffer_share", server.has("buffer_memory") ? BufferPool.defaultShare(bufferMemory)
                                                                                    : engineDefaults.bufferShareBytes());
        if (bufferMemory < MIN_BUFFER_MEMORY) {
            throw new ConfigException("server.buffer_memory = " + server.get("buffer_memory") + ": expected at least "
                                      + Sizes.describe(MIN_BUFFER_MEMORY) + " (room for a few of the largest transfers)");
        }
        if (bufferShare < MIN_BUFFER_SHARE || bufferShare > bufferMemory) {
            throw new ConfigException("server.buffer_share = " + Sizes.describe(bufferShare) + ": expected from " + Sizes.describe(MIN_BUFFER_SHARE)
                                      + " (one group's largest NBD transfer) to server.buffer_memory, " + Sizes.describe(bufferMemory));
        }
        IoEngine.Kind ioEngine = ioEngine(server.get("io_engine"));
        return new ServerSettings(control, nbd, cert == null ? null : new Tls(cert, key, keyPassphrase), transport,
                                  new Engine.Settings(bufferMemory, bufferShare, ioEngine), absolutePath("server.state", server.get("state"), "a file"),
                                  count("server", server, "warm_up_ms", DEFAULT_WARM_UP_MS, 0, 60_000, "milliseconds the data path runs before the server listens, 0 for none"));
    }

    /** {@code server.warm_up_ms}'s default: long enough for the JIT to compile the data path (bench/results/warm-start.md). */
    public static final long DEFAULT_WARM_UP_MS = 1000;

    /** The cluster section's keys, in the order docs/cluster.md lists them. */
    private static final List<String> CLUSTER_KEYS = List.of("node", "group", "store", "nodes", "interval_ms", "lease_ms", "store_ca", "store_cert",
                                                             "store_key", "store_user", "store_password_file");

    /**
     * Reads the "cluster" section (docs/cluster.md); null when there is none, and the node is on
     * its own. {@code node}, {@code store} and {@code nodes} are required; {@code lease_ms} must
     * be at least two intervals, so that one late exchange does not cost a share.
     */
    public static ClusterSettings clusterSettings(JsonNode root) throws ConfigException {
        JsonNode cluster = root.path("cluster");
        if (cluster.isMissingNode()) return null;
        checkObject(cluster, "cluster");
        for (String key : sortedKeys(cluster)) {
            if (!CLUSTER_KEYS.contains(key)) throw new ConfigException("cluster." + key + ": unknown setting (expected: " + String.join(", ", CLUSTER_KEYS) + ")");
        }
        JsonNode node = cluster.get("node");
        if (node == null) throw new ConfigException("cluster.node: missing (this node's id, different on every node)");
        if (!node.isTextual() || !node.textValue().matches("[A-Za-z0-9._:@+-]{1,64}")) {
            throw new ConfigException("cluster.node = " + node + ": expected 1 to 64 letters, digits or ._:@+- as a string");
        }
        JsonNode group = cluster.get("group");
        if (group != null && (!group.isTextual() || !group.textValue().matches("[A-Za-z0-9._:@+-]{1,64}"))) {
            throw new ConfigException("cluster.group = " + group + ": expected 1 to 64 letters, digits or ._:@+- as a string");
        }
        JsonNode store = cluster.get("store");
        if (store == null) throw new ConfigException("cluster.store: missing (expected e.g. \"etcd://127.0.0.1:2379\")");
        if (store.isTextual() && (store.textValue().startsWith("redis://") || store.textValue().startsWith("rediss://"))) {
            // Redis lost acknowledged writes and split in two (docs/decisions.md, "Redis removed"): say what replaced it.
            throw new ConfigException("cluster.store = " + store + ": Redis is no longer supported; use etcd://HOST:PORT[,HOST:PORT...] (docs/cluster.md)");
        }
        String storeProblem = store.isTextual() ? ShareStore.problem(store.textValue()) : "not a string";
        if (storeProblem != null) throw new ConfigException("cluster.store = " + store + ": expected etcd://HOST:PORT[,HOST:PORT...]: " + storeProblem);
        EtcdClient.Access access = storeAccess(cluster);
        // With a gateway group the live members are the count (ClusterSettings.nodes 0); without one it must be given.
        if (!cluster.has("nodes") && group == null) throw new ConfigException("cluster.nodes: missing (how many nodes share the io.max.global limits)");
        int nodes = (int) count("cluster", cluster, "nodes", 0, 1, 1000, "nodes that share the limits");
        long interval = count("cluster", cluster, "interval_ms", ClusterSettings.DEFAULT_INTERVAL_MS, 10, 60_000, "milliseconds between exchanges");
        long lease = count("cluster", cluster, "lease_ms", Math.max(ClusterSettings.DEFAULT_LEASE_MS, 2 * interval), 2 * interval, 3_600_000,
                                  "milliseconds a share holds without the store; at least two intervals, 2 x cluster.interval_ms");
        return new ClusterSettings(node.textValue(), store.textValue(), nodes, interval, lease, access, group == null ? null : group.textValue());
    }

    /**
     * etcd's TLS files ({@code store_ca} turns TLS on; {@code store_cert} and {@code store_key}
     * a client certificate, both or neither) and user ({@code store_user} with
     * {@code store_password_file}, both or neither); each file must be readable now.
     */
    private static EtcdClient.Access storeAccess(JsonNode cluster) throws ConfigException {
        java.nio.file.Path ca = storeFile(cluster, "store_ca");
        java.nio.file.Path cert = storeFile(cluster, "store_cert");
        java.nio.file.Path key = storeFile(cluster, "store_key");
        java.nio.file.Path password = storeFile(cluster, "store_password_file");
        JsonNode user = cluster.get("store_user");
        if (user != null && (!user.isTextual() || user.textValue().isEmpty())) {
            throw new ConfigException("cluster.store_user = " + user + ": expected etcd's user name as a string");
        }
        if ((cert == null) != (key == null)) throw new ConfigException("cluster.store_cert and cluster.store_key: give both (a client certificate and its key) or neither");
        if (cert != null && ca == null) throw new ConfigException("cluster.store_cert: a client certificate needs TLS: give cluster.store_ca too");
        if ((user == null) != (password == null)) throw new ConfigException("cluster.store_user and cluster.store_password_file: give both or neither");
        return new EtcdClient.Access(ca, cert, key, user == null ? null : user.textValue(), password);
    }

    private static java.nio.file.Path storeFile(JsonNode cluster, String name) throws ConfigException {
        JsonNode v = cluster.get(name);
        if (v == null) return null;
        if (!v.isTextual() || v.textValue().isEmpty()) throw new ConfigException("cluster." + name + " = " + v + ": expected a file's path as a string");
        java.nio.file.Path file = java.nio.file.Path.of(v.textValue());
        if (!java.nio.file.Files.isReadable(file)) throw new ConfigException("cluster." + name + " = " + v + ": not a readable file");
        return file;
    }

    /** {@code server.io_engine}: auto (io_uring where it works), io_uring (or refuse to start), threads. */
    private static IoEngine.Kind ioEngine(JsonNode v) throws ConfigException {
        if (v == null) return IoEngine.Kind.AUTO;
        return switch (v.isTextual() ? v.textValue() : "") {
            case "auto" -> IoEngine.Kind.AUTO;
            case "io_uring" -> IoEngine.Kind.IO_URING;
            case "threads" -> IoEngine.Kind.THREADS;
            default -> throw new ConfigException("server.io_engine = " + v + ": expected \"auto\", \"io_uring\" or \"threads\"");
        };
    }

    /** Smallest pool that still serves a few transfers of the spec's default maximum (32 MiB). */
    private static final long MIN_BUFFER_MEMORY = 64L << 20;
    /**
     * A group must be able to hold one NBD transfer of the spec's default maximum, what a client
     * assumes when nothing is advertised; nbd/max_request (default 64 MiB) is held to the share.
     */
    private static final long MIN_BUFFER_SHARE = 32L << 20;

    /** A size setting of the server section ({@code "2G"} or bytes), or its default when absent. */
    private static long size(JsonNode server, String key, long defaultValue) throws ConfigException {
        JsonNode v = server.get(key);
        if (v == null) return defaultValue;
        long bytes = v.isTextual() ? Sizes.parse(v.textValue()) : v.isIntegralNumber() && v.canConvertToLong() ? v.longValue() : -1;
        if (bytes <= 0) throw new ConfigException("server." + key + " = " + v + ": expected " + Sizes.EXPECTED + " (an integer or a string)");
        return bytes;
    }

    /** {@code server.send_buffer}: 0 (the kernel's auto-tuning) or a size from 4K to 64M. */
    private static int sendBuffer(JsonNode v, int defaultValue) throws ConfigException {
        if (v == null) return defaultValue;
        long bytes = v.isTextual() ? Sizes.parse(v.textValue()) : v.isIntegralNumber() && v.canConvertToLong() ? v.longValue() : -1;
        if (bytes != 0 && (bytes < 4096 || bytes > 64L << 20)) {
            throw new ConfigException("server.send_buffer = " + v + ": expected 0 (the kernel's auto-tuning) or a size from 4K to 64M "
                                      + "(in bytes, or with K or M), as an integer or a string");
        }
        return (int) bytes;
    }

    /** An integer setting of {@code section} ("server", "cluster") in [min, max], or its default when absent. */
    private static long count(String section, JsonNode node, String key, long defaultValue, long min, long max, String meaning) throws ConfigException {
        JsonNode v = node.get(key);
        if (v == null) return defaultValue;
        if (!v.isIntegralNumber() || !v.canConvertToLong() || v.longValue() < min || v.longValue() > max) {
            throw new ConfigException(section + "." + key + " = " + v + ": expected an integer from " + min + " to " + max + " (" + meaning + ")");
        }
        return v.longValue();
    }

    private static Path pemFile(String where, JsonNode v) throws ConfigException {
        return absolutePath(where, v, "a PEM file");
    }

    private static Path absolutePath(String where, JsonNode v, String what) throws ConfigException {
        if (v == null) return null;
        if (!v.isTextual() || !v.textValue().startsWith("/") || v.textValue().indexOf('\0') >= 0) {
            throw new ConfigException(where + " = " + v + ": expected the absolute path of " + what + ", as a string");
        }
        return Path.of(v.textValue());
    }

    /** Replays every section onto its tree. */
    public static void apply(JsonNode root, Trees trees) throws ConfigException {
        for (String section : SECTIONS) {
            JsonNode node = root.path(section);
            if (node.isMissingNode()) continue;
            checkObject(node, section);
            ConfigTree tree = trees.tree(section);
            if (tree == null) throw new ConfigException(section + ": this build has no " + section + " front end");
            List<Link> links = new ArrayList<>();
            applyDirectory(tree, "", node, section, links);
            for (Link link : links) {
                try {
                    run(link.where, link.value, () -> tree.link(link.targetPath, link.linkPath));
                } catch (ConfigException e) {
                    throw blamePort(section, node, link, e);
                }
            }
        }
    }

    /** A link to make once the section's directories exist. */
    private record Link(String where, JsonNode value, String targetPath, String linkPath) {
    }

    /**
     * An nvmet port starts listening when its first subsystem is linked, so a busy address
     * surfaces there; it is the port's addr_trsvcid (with its addr_traddr) that is wrong.
     */
    private static ConfigException blamePort(String section, JsonNode node, Link link, ConfigException e) {
        String[] p = link.linkPath.split("/");
        if (!(e.getCause() instanceof ControlException c) || c.errno() != Errno.EADDRINUSE
            || p.length != 4 || !p[0].equals("ports") || !p[2].equals("subsystems")) {
            return e;
        }
        JsonNode port = node.path("ports").path(p[1]).path("addr_trsvcid");
        return new ConfigException(section + ".ports." + p[1] + ".addr_trsvcid = " + (port.isMissingNode() ? "(not set)" : port)
                                   + ": " + c.getMessage() + " (the port starts listening when " + link.where + " is linked)");
    }

    /**
     * Replays one object onto directory {@code dir}. The object's key order is never used: its
     * attributes are written in the order the tree lists them (its dependency order, the order
     * a save writes them in), then its subdirectories are made and filled in listing order, then
     * the gates ({@link #LAST}); keys the listing does not name (new groups, exports, a typo)
     * follow the named ones in name order, so that even the first error is the same whatever
     * the order in the file.
     */
    private static void applyDirectory(ConfigTree tree, String dir, JsonNode object, String where, List<Link> links) throws ConfigException {
        List<String> keys = inListingOrder(tree, dir, object, where);
        for (String name : keys) {
            JsonNode value = object.get(name);
            if (!value.isObject() && !LAST.contains(name)) applyAttribute(tree, dir, name, value, where, links);
        }
        for (String name : keys) {
            JsonNode value = object.get(name);
            if (!value.isObject()) continue;
            String path = path(dir, name);
            String at = where + "." + name;
            ConfigTree.Kind kind = kindOrNull(tree, path);
            if (kind == null) run(at, value, () -> tree.mkdir(path));
            else if (kind != ConfigTree.Kind.DIRECTORY) throw new ConfigException(at + ": is an attribute, not a directory");
            applyDirectory(tree, path, value, at, links);
        }
        for (String name : LAST) {
            JsonNode value = object.get(name);
            if (value != null && !value.isObject()) applyAttribute(tree, dir, name, value, where, links);
        }
    }

    /**
     * The object's keys: those {@code dir}'s listing names in its order, then the others by name.
     * A name that cannot be a tree entry is refused here, before anything is written.
     */
    private static List<String> inListingOrder(ConfigTree tree, String dir, JsonNode object, String where) throws ConfigException {
        List<String> listed = new ArrayList<>();
        try {
            for (String entry : tree.list(dir)) listed.add(entry.endsWith("/") ? entry.substring(0, entry.length() - 1) : entry);
        } catch (ControlException e) {
            // Not a directory the tree lists: every key is then refused by the tree itself, in name order.
        }
        List<String> keys = sortedKeys(object);
        keys.sort(Comparator.comparingInt(k -> listed.contains(k) ? listed.indexOf(k) : Integer.MAX_VALUE));    // stable: the rest by name
        for (String name : keys) {
            if (name.isEmpty() || name.contains("/")) throw new ConfigException(where + "." + name + ": names may not be empty or contain '/'");
        }
        return keys;
    }

    /** One key that is not a directory: an attribute's write or writes, or the links of a links directory (made later). */
    private static void applyAttribute(ConfigTree tree, String dir, String name, JsonNode value, String where, List<Link> links)
            throws ConfigException {
        String path = path(dir, name);
        String at = where + "." + name;
        if (value.isArray() && kindOrNull(tree, path) == ConfigTree.Kind.LINKS) {
            String targetDir = LINK_TARGETS.get(name);
            if (targetDir == null) throw new ConfigException(at + ": links directory without a known target");
            for (int i = 0; i < value.size(); i++) {
                String target = scalar(at + "[" + i + "]", name, value.get(i));
                links.add(new Link(at + "[" + i + "]", value.get(i), targetDir + "/" + target, path + "/" + target));
            }
        } else if (value.isArray()) {
            for (int i = 0; i < value.size(); i++) {
                String text = scalar(at + "[" + i + "]", name, value.get(i));
                run(at + "[" + i + "]", value.get(i), () -> tree.write(path, text));
            }
        } else {
            String text = scalar(at, name, value);
            run(at, SECRET_ATTRIBUTES.contains(name) ? SECRET : value, () -> tree.write(path, text));
        }
    }

    private static String path(String dir, String name) {
        return dir.isEmpty() ? name : dir + "/" + name;
    }

    private static ConfigTree.Kind kindOrNull(ConfigTree tree, String path) {
        try {
            return tree.kind(path);
        } catch (ControlException e) {
            return null;
        }
    }

    private interface TreeOp {
        void run() throws ControlException;
    }

    /** Runs one tree operation; its error, or any failure of the tree, becomes "where = value: error". */
    private static void run(String where, JsonNode value, TreeOp op) throws ConfigException {
        String field = where + " = " + (value.isContainerNode() ? "{...}" : value.toString());
        try {
            op.run();
        } catch (ControlException e) {
            throw new ConfigException(field + ": " + e.getMessage(), e);
        } catch (RuntimeException | OutOfMemoryError e) {
            throw new ConfigException(field + ": internal error: " + e, e);
        }
    }

    /** The text written for a JSON scalar: strings as they are, integers in decimal, booleans as 1/0 where {@code name} is a flag. */
    private static String scalar(String where, String name, JsonNode v) throws ConfigException {
        boolean flag = FLAGS.contains(name);
        if (v.isTextual()) return v.textValue();
        if (v.isIntegralNumber()) return v.bigIntegerValue().toString();
        if (v.isBoolean() && flag) return v.booleanValue() ? "1" : "0";
        String expected = flag ? "0 or 1 (an integer, a string or a boolean)" : EXPECTED.getOrDefault(name, "a string or an integer");
        throw new ConfigException(where + " = " + v + ": expected " + expected + ", got " + jsonKind(v));
    }

    private static String jsonKind(JsonNode v) {
        if (v.isBoolean()) return "a boolean (true/false are for the 0/1 flags: " + String.join(", ", FLAGS.stream().sorted().toList()) + ")";
        if (v.isNumber()) return "a number with a fraction or an exponent";
        if (v.isNull()) return "null";
        return v.isArray() ? "an array" : "an object";
    }

    /** An object's keys in name order: an unknown one is named the same whatever the order in the file. */
    private static List<String> sortedKeys(JsonNode object) {
        List<String> keys = new ArrayList<>();
        object.fieldNames().forEachRemaining(keys::add);
        keys.sort(Comparator.naturalOrder());
        return keys;
    }

    private static void checkObject(JsonNode n, String where) throws ConfigException {
        if (!n.isObject()) throw new ConfigException(where + ": expected an object");
    }

    private static Listen address(String where, JsonNode v) throws ConfigException {
        String text = v.isTextual() ? v.textValue() : "";
        int colon = text.lastIndexOf(':');
        String host = colon < 0 ? "" : text.substring(0, colon);
        String port = colon < 0 ? "" : text.substring(colon + 1);
        if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
        if (host.isEmpty() || !port.matches("\\d{1,5}") || Integer.parseInt(port) > 65535) {
            throw new ConfigException(where + " = " + v + ": expected HOST:PORT as a string, e.g. 127.0.0.1:10809 or [::1]:10809");
        }
        InetSocketAddress address = new InetSocketAddress(host, Integer.parseInt(port));
        if (address.isUnresolved()) throw new ConfigException(where + " = " + v + ": cannot resolve " + host);
        return new Listen(where, v.toString(), address);
    }
}
