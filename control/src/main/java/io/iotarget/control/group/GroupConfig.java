package io.iotarget.control.group;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.cluster.ClusterSettings;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.control.tree.ForwardingTree;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.TreePath;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The nvmet tree as a member of a gateway group serves it: changes to the subsystems the
 * group's store holds go through the store, every other path straight to the tree (package
 * documentation: the layout, the order of a change, the start). Mounted as {@code /nvmet} in
 * place of the target's own tree when the config names {@code cluster.group}.
 *
 * <p>Lifecycle: {@link #open} before the config is applied; the store's objects are read at the
 * tree's first use (the config's nvmet section, after backends and groups exist); {@link #start}
 * once the config is applied, before the control endpoint listens; {@link #close} at shutdown.
 *
 * <p>Any thread. Changes to the group's subsystems, and everything the watch applies, run one at
 * a time under this object's lock, taken before the tree's own (the persisted tree's lock, when
 * there is one, is taken before this one).
 */
public final class GroupConfig extends ForwardingTree implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(GroupConfig.class.getName());
    private static final ObjectMapper JSON = new ObjectMapper();
    /** What one store call may take before the change fails (and is put back). */
    static final Duration STORE_TIMEOUT = Duration.ofSeconds(2);
    /** Between attempts to read the store again after the watch ended. */
    private static final long RESYNC_RETRY_MS = 1000;
    /** A subsystem's attributes that are each node's own: its controller-id range. */
    static final Set<String> NODE_LOCAL = Set.of("attr_cntlid_min", "attr_cntlid_max");
    private static final String SUBSYSTEMS = "subsystems";
    private static final String NAMESPACES = "namespaces";
    private static final String ALLOWED_HOSTS = "allowed_hosts";
    private static final String SHARED = "shared";
    private static final String ENABLE = "enable";
    /** The one namespace attribute that may change while the namespace is enabled, besides enable. */
    private static final String ANA_GRPID = "ana_grpid";

    private final String group;
    private final ConfigTree nvmet;
    private final EtcdClient etcd;
    /** {@code /iotarget/groups/GROUP/config/}. */
    private final String prefix;
    private final ReentrantLock lock = new ReentrantLock();
    /** Every key of the group's config this member knows, with its mod revision; lock. */
    private final Map<String, Long> revisions = new HashMap<>();
    /** The NQNs of the subsystems the store holds; lock. */
    private final Set<String> held = new TreeSet<>();
    /** Subsystems whose config-file entries were ignored (logged once each); lock. */
    private final Set<String> ignored = new HashSet<>();
    /** The store's objects were applied to the tree. */
    private volatile boolean loaded;
    /** Started: changes to the group's subsystems go to the store; before, the config file's are ignored. Lock. */
    private boolean live;
    /** The running watch; null before start and while the store is read again; lock. */
    private EtcdClient.Watch watch;
    private volatile boolean closed;
    /**
     * The first reading of the store, before the config gave this node its own attributes (a
     * namespace cannot enable before the controller ids): {@link #start} applies it again, and
     * only then is what fails logged as a warning. Lock.
     */
    private boolean firstPass;
    /** The watch ended and the store could not be read since (logged once per outage); lock. */
    private boolean outage;

    private GroupConfig(String group, ConfigTree nvmet, EtcdClient etcd) {
        this.group = group;
        this.nvmet = nvmet;
        this.etcd = etcd;
        this.prefix = "/iotarget/groups/" + group + "/config/";
    }

    /**
     * The group's view of {@code nvmet} for {@code cluster.group}; nothing is read yet.
     *
     * @throws IOException the store's TLS files cannot be read
     */
    public static GroupConfig open(ClusterSettings cluster, ConfigTree nvmet) throws IOException {
        return new GroupConfig(cluster.group(), nvmet, EtcdClient.create(cluster.store(), cluster.access(), STORE_TIMEOUT));
    }

    /** The store key of subsystem {@code nqn} ({@code %} and {@code /} written {@code %25}, {@code %2F}). */
    String subsystemKey(String nqn) {
        return prefix + SUBSYSTEMS + "/" + escape(nqn);
    }

    String namespaceKey(String nqn, String nsid) {
        return subsystemKey(nqn) + "/" + NAMESPACES + "/" + nsid;
    }

    private static String escape(String name) {
        return name.replace("%", "%25").replace("/", "%2F");
    }

    private static String unescape(String name) {
        return name.replace("%2F", "/").replace("%25", "%");
    }

    // ---------------------------------------------------------------- the tree

    @Override
    public Target resolve(String path) throws ControlException {
        if (!loaded) load();
        return new Target(nvmet, path);
    }

    /**
     * A change under a subsystem the store holds (but its node's own attributes), or one that
     * marks a subsystem shared, goes through the store once started; before, the config file's
     * change to a subsystem the store holds is ignored. Every other change is the tree's alone.
     */
    @Override
    protected void change(Change change, String op, String... args) throws ControlException {
        String path = op.equals("link") ? args[1] : args[0];
        List<String> parts = TreePath.split(path);
        lock.lock();
        try {
            String nqn = parts.size() >= 2 && parts.getFirst().equals(SUBSYSTEMS) ? parts.get(1) : null;
            if (nqn == null || !concernsGroup(nqn, parts)) {
                change.run();
            } else if (!live) {
                if (ignored.add(nqn)) {
                    LOG.log(System.Logger.Level.INFO, "cluster.group " + group + ": the store holds subsystems/" + nqn
                                                      + ": its copy is served, and this node's config of it is ignored (but attr_cntlid_min, attr_cntlid_max)");
                }
            } else {
                changeThroughStore(nqn, path, change);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Lock held. */
    private boolean concernsGroup(String nqn, List<String> parts) {
        if (held.contains(nqn)) return !(parts.size() == 3 && NODE_LOCAL.contains(parts.get(2)));
        return live && parts.size() == 3 && parts.get(2).equals(SHARED);
    }

    /**
     * Makes the change on this node's tree (its validation), then swaps the objects it changed
     * into the store; a store that refuses or cannot be reached gets the tree put back. Lock held.
     */
    private void changeThroughStore(String nqn, String path, Change change) throws ControlException {
        boolean seeding = !held.contains(nqn);
        Map<String, String> before = objects(nqn);
        change.run();
        Map<String, String> after = objects(nqn);
        String subsystemKey = subsystemKey(nqn);
        String sharedAfter = sharedOf(after.get(subsystemKey));
        if (!seeding && after.containsKey(subsystemKey) && !"1".equals(sharedAfter)) {
            putBack(nqn, before, after);
            throw new ControlException(Errno.EPERM, path + ": subsystems/" + nqn + " is gateway group " + group
                                                    + "'s (shared=1 on every member); remove it from the group with rmdir");
        }
        if (seeding && !"1".equals(sharedAfter)) return;     // shared=0 on a subsystem of this node alone
        Map<String, String> stored = seeding ? Map.of() : before;
        List<EtcdClient.Compare> expect = new ArrayList<>();
        List<EtcdClient.Put> puts = new ArrayList<>();
        List<String> deletes = new ArrayList<>();
        for (Map.Entry<String, String> e : after.entrySet()) {
            if (e.getValue().equals(stored.get(e.getKey()))) continue;
            expect.add(EtcdClient.Compare.unchanged(e.getKey(), revisions.getOrDefault(e.getKey(), 0L)));
            puts.add(new EtcdClient.Put(e.getKey(), e.getValue().getBytes(StandardCharsets.UTF_8), 0));
        }
        for (String key : stored.keySet()) {
            if (after.containsKey(key)) continue;
            expect.add(EtcdClient.Compare.unchanged(key, revisions.getOrDefault(key, 0L)));
            deletes.add(key);
        }
        if (expect.isEmpty()) return;
        long revision;
        try {
            revision = etcd.txn(expect, puts, deletes);
        } catch (IOException e) {
            putBack(nqn, before, after);
            String what = e instanceof EtcdClient.EtcdError ? "refused the change" : "could not be reached";
            throw new ControlException(Errno.EIO, path + ": the store of gateway group " + group + " " + what + " (" + e.getMessage()
                                                  + "); nothing was changed on this node, and no other member got it");
        }
        if (revision < 0) {
            putBack(nqn, before, after);
            throw new ControlException(Errno.EAGAIN, seeding
                    ? path + ": gateway group " + group + " already holds a subsystems/" + nqn + " (another member shared one first); nothing was changed"
                    : path + ": subsystems/" + nqn + " changed meanwhile through another member of gateway group " + group
                      + "; nothing was changed (read it again, then retry)");
        }
        for (EtcdClient.Put p : puts) revisions.put(p.key(), revision);
        for (String key : deletes) revisions.remove(key);
        if (after.containsKey(subsystemKey)) held.add(nqn);
        else held.remove(nqn);
    }

    /** The {@code shared} value of a subsystem object, or null. */
    private static String sharedOf(String object) {
        if (object == null) return null;
        try {
            return JSON.readTree(object).path(SHARED).asText(null);
        } catch (IOException e) {
            return null;
        }
    }

    /** A change the store did not take: the tree goes back to {@code before}. Lock held. */
    private void putBack(String nqn, Map<String, String> before, Map<String, String> after) {
        try {
            for (String key : after.keySet()) {
                if (!before.containsKey(key) && !key.equals(subsystemKey(nqn))) removeNamespace(nqn, key.substring(key.lastIndexOf('/') + 1));
            }
            String subsystem = before.get(subsystemKey(nqn));
            if (subsystem == null) {
                if (after.containsKey(subsystemKey(nqn))) removeSubsystem(nqn);
                return;
            }
            applySubsystem(nqn, (ObjectNode) JSON.readTree(subsystem));
            for (Map.Entry<String, String> e : before.entrySet()) {
                if (e.getKey().equals(subsystemKey(nqn))) continue;
                applyNamespace(nqn, e.getKey().substring(e.getKey().lastIndexOf('/') + 1), (ObjectNode) JSON.readTree(e.getValue()));
            }
        } catch (ControlException | IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cluster.group " + group + ": subsystems/" + nqn
                                                 + ": a change the store did not take could not be undone here: " + e.getMessage());
        }
    }

    // ---------------------------------------------------------------- this node's objects

    /** Subsystem {@code nqn}'s objects on this node, by store key, as the store keeps them; empty without the subsystem. Lock held. */
    private Map<String, String> objects(String nqn) throws ControlException {
        Map<String, String> out = new LinkedHashMap<>();
        String base = SUBSYSTEMS + "/" + nqn;
        if (!exists(base)) return out;
        ObjectNode subsystem = attributes(base, NODE_LOCAL);
        ArrayNode hosts = subsystem.putArray(ALLOWED_HOSTS);
        for (String link : nvmet.list(base + "/" + ALLOWED_HOSTS)) hosts.add(link);
        out.put(subsystemKey(nqn), subsystem.toString());
        for (String entry : nvmet.list(base + "/" + NAMESPACES)) {
            String nsid = directoryName(entry);
            out.put(namespaceKey(nqn, nsid), attributes(base + "/" + NAMESPACES + "/" + nsid, Set.of()).toString());
        }
        return out;
    }

    /** A directory's attributes as a save keeps them (one write: a string; several: an array), leaving out {@code skip}. */
    private ObjectNode attributes(String dir, Set<String> skip) throws ControlException {
        ObjectNode object = JSON.createObjectNode();
        for (String entry : nvmet.list(dir)) {
            if (entry.endsWith("/") || skip.contains(entry)) continue;
            List<String> writes = nvmet.replay(dir + "/" + entry);
            if (writes.size() == 1) {
                object.put(entry, writes.getFirst());
            } else if (!writes.isEmpty()) {
                ArrayNode array = object.putArray(entry);
                writes.forEach(array::add);
            }
        }
        return object;
    }

    private static String directoryName(String entry) {
        return entry.endsWith("/") ? entry.substring(0, entry.length() - 1) : entry;
    }

    private boolean exists(String path) {
        try {
            nvmet.kind(path);
            return true;
        } catch (ControlException e) {
            return false;
        }
    }

    // ---------------------------------------------------------------- applying the store's objects

    /** Gives this node's subsystem {@code nqn} the store's shared attributes and allowed hosts, making it if missing. Lock held. */
    private void applySubsystem(String nqn, ObjectNode desired) throws ControlException {
        String base = SUBSYSTEMS + "/" + nqn;
        if (!exists(base)) nvmet.mkdir(base);
        Set<String> hosts = new LinkedHashSet<>();
        desired.path(ALLOWED_HOSTS).forEach(h -> hosts.add(h.asText()));
        String links = base + "/" + ALLOWED_HOSTS;
        for (String link : nvmet.list(links)) if (!hosts.contains(link)) nvmet.unlink(links + "/" + link);
        for (String entry : nvmet.list(base)) {
            if (entry.endsWith("/") || NODE_LOCAL.contains(entry) || !desired.has(entry)) continue;
            writeIfDifferent(base + "/" + entry, desired.get(entry));
        }
        List<String> linked = nvmet.list(links);
        for (String host : hosts) {
            if (linked.contains(host)) continue;
            if (!exists("hosts/" + host)) nvmet.mkdir("hosts/" + host);
            nvmet.link("hosts/" + host, links + "/" + host);
        }
    }

    /**
     * Gives this node's namespace the store's attributes, making it if missing: an enabled
     * namespace whose fixed attributes differ is disabled first, and enabled last. Lock held.
     */
    private void applyNamespace(String nqn, String nsid, ObjectNode desired) throws ControlException {
        String base = SUBSYSTEMS + "/" + nqn + "/" + NAMESPACES + "/" + nsid;
        if (!exists(SUBSYSTEMS + "/" + nqn)) throw new ControlException(Errno.ENOENT, "subsystems/" + nqn + " is not on this node");
        if (!exists(base)) nvmet.mkdir(base);
        boolean enabled = nvmet.replay(base + "/" + ENABLE).equals(List.of("1"));
        boolean wantEnabled = desired.path(ENABLE).asText("0").equals("1");
        List<String> differing = new ArrayList<>();
        for (String entry : nvmet.list(base)) {
            if (entry.endsWith("/") || entry.equals(ENABLE) || !desired.has(entry)) continue;
            if (!nvmet.replay(base + "/" + entry).equals(writes(desired.get(entry)))) differing.add(entry);
        }
        if (enabled && (!wantEnabled || differing.stream().anyMatch(a -> !a.equals(ANA_GRPID)))) {
            nvmet.write(base + "/" + ENABLE, "0");
            enabled = false;
        }
        for (String entry : differing) for (String w : writes(desired.get(entry))) nvmet.write(base + "/" + entry, w);
        if (wantEnabled && !enabled) nvmet.write(base + "/" + ENABLE, "1");
    }

    private void writeIfDifferent(String path, JsonNode want) throws ControlException {
        List<String> writes = writes(want);
        if (nvmet.replay(path).equals(writes)) return;
        for (String w : writes) nvmet.write(path, w);
    }

    private static List<String> writes(JsonNode value) {
        List<String> out = new ArrayList<>();
        if (value.isArray()) value.forEach(v -> out.add(v.asText()));
        else out.add(value.asText());
        return out;
    }

    private void removeNamespace(String nqn, String nsid) throws ControlException {
        String base = SUBSYSTEMS + "/" + nqn + "/" + NAMESPACES + "/" + nsid;
        if (exists(base)) nvmet.rmdir(base);
    }

    /** The group removed subsystem {@code nqn}: this node's ports stop serving it, and it goes. Lock held. */
    private void removeSubsystem(String nqn) throws ControlException {
        String base = SUBSYSTEMS + "/" + nqn;
        if (!exists(base)) return;
        for (String port : nvmet.list("ports")) {
            String links = "ports/" + directoryName(port) + "/" + SUBSYSTEMS;
            for (String link : nvmet.list(links)) {
                if (nvmet.readLink(links + "/" + link).equals(base)) nvmet.unlink(links + "/" + link);
            }
        }
        for (String ns : nvmet.list(base + "/" + NAMESPACES)) nvmet.rmdir(base + "/" + NAMESPACES + "/" + directoryName(ns));
        for (String link : nvmet.list(base + "/" + ALLOWED_HOSTS)) nvmet.unlink(base + "/" + ALLOWED_HOSTS + "/" + link);
        nvmet.rmdir(base);
    }

    /** One object of the store applied, or its failure logged. Lock held. */
    private void applyLogged(String what, TreeChange change) {
        try {
            change.run();
        } catch (ControlException | IOException | RuntimeException e) {
            LOG.log(firstPass ? System.Logger.Level.DEBUG : System.Logger.Level.WARNING, "cluster.group " + group + ": " + what + " as the store holds it cannot be applied on this node: "
                                                 + e.getMessage() + " (this node keeps it as it was)");
        }
    }

    @FunctionalInterface
    private interface TreeChange {
        void run() throws ControlException, IOException;
    }

    /** The store's key parsed: a subsystem's NQN, and a namespace's nsid (null for the subsystem); null for a key of another kind. */
    private record ObjectKey(String nqn, String nsid) {
    }

    private ObjectKey parse(String key) {
        if (!key.startsWith(prefix)) return null;
        String[] p = key.substring(prefix.length()).split("/", -1);
        if (p.length == 2 && p[0].equals(SUBSYSTEMS)) return new ObjectKey(unescape(p[1]), null);
        if (p.length == 4 && p[0].equals(SUBSYSTEMS) && p[2].equals(NAMESPACES)) return new ObjectKey(unescape(p[1]), p[3]);
        return null;
    }

    /**
     * This node's tree made what {@code range} holds: subsystems the store no longer holds go,
     * the others take the store's attributes, and their namespaces are the store's. Lock held.
     */
    private void applyAll(EtcdClient.Range range) {
        Map<String, String> subsystems = new TreeMap<>();
        Map<String, Map<String, String>> namespaces = new TreeMap<>();
        revisions.clear();
        for (EtcdClient.KeyValue kv : range.kvs()) {
            ObjectKey k = parse(kv.key());
            if (k == null) continue;
            revisions.put(kv.key(), kv.modRevision());
            if (k.nsid() == null) subsystems.put(k.nqn(), kv.valueText());
            else namespaces.computeIfAbsent(k.nqn(), n -> new TreeMap<>()).put(k.nsid(), kv.valueText());
        }
        for (String nqn : new ArrayList<>(held)) {
            if (!subsystems.containsKey(nqn)) applyLogged("the removal of subsystems/" + nqn, () -> removeSubsystem(nqn));
        }
        held.clear();
        held.addAll(subsystems.keySet());
        for (Map.Entry<String, String> s : subsystems.entrySet()) {
            String nqn = s.getKey();
            applyLogged("subsystems/" + nqn, () -> applySubsystem(nqn, (ObjectNode) JSON.readTree(s.getValue())));
            Map<String, String> wanted = namespaces.getOrDefault(nqn, Map.of());
            applyLogged("subsystems/" + nqn + "/namespaces", () -> {
                if (!exists(SUBSYSTEMS + "/" + nqn)) return;
                for (String entry : nvmet.list(SUBSYSTEMS + "/" + nqn + "/" + NAMESPACES)) {
                    if (!wanted.containsKey(directoryName(entry))) removeNamespace(nqn, directoryName(entry));
                }
            });
            for (Map.Entry<String, String> ns : wanted.entrySet()) {
                applyLogged("subsystems/" + nqn + "/namespaces/" + ns.getKey(),
                            () -> applyNamespace(nqn, ns.getKey(), (ObjectNode) JSON.readTree(ns.getValue())));
            }
        }
    }

    /** Reads the store's objects and applies them, once, at the tree's first use. */
    private void load() throws ControlException {
        lock.lock();
        try {
            if (loaded) return;
            EtcdClient.Range range;
            try {
                range = etcd.range(prefix);
            } catch (IOException e) {
                throw new ControlException(Errno.EIO, "cluster.group " + group + ": cannot read the group's shared subsystems from the store: " + e.getMessage());
            }
            firstPass = true;
            try {
                applyAll(range);
            } finally {
                firstPass = false;
            }
            loaded = true;
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- start, watch, close

    /**
     * Once the config is applied: subsystems this node's config marks shared that the store
     * lacks are put there (the first member to start with one seeds the group); the store is
     * read again and wins over this node's copy (a subsystem another member seeded meanwhile,
     * a namespace that could not enable before the config gave this node its controller ids);
     * from now on changes go through the store and the watch applies the others'.
     *
     * @throws IOException the store cannot be reached
     */
    public void start() throws IOException {
        try {
            load();
        } catch (ControlException e) {
            throw new IOException(e.getMessage(), e);
        }
        lock.lock();
        try {
            seed();
            EtcdClient.Range range = etcd.range(prefix);
            applyAll(range);
            live = true;
            watch = etcd.watch(prefix, range.revision() + 1, this::event, this::ended);
        } finally {
            lock.unlock();
        }
    }

    /** Lock held. */
    private void seed() throws IOException {
        List<String> nqns;
        try {
            nqns = nvmet.list(SUBSYSTEMS).stream().map(GroupConfig::directoryName).toList();
        } catch (ControlException e) {
            throw new IOException(e.getMessage(), e);
        }
        for (String nqn : nqns) {
            if (held.contains(nqn)) continue;
            Map<String, String> objects;
            try {
                objects = objects(nqn);
            } catch (ControlException e) {
                continue;                                   // removed meanwhile
            }
            if (!"1".equals(sharedOf(objects.get(subsystemKey(nqn))))) continue;
            List<EtcdClient.Compare> expect = new ArrayList<>();
            List<EtcdClient.Put> puts = new ArrayList<>();
            for (Map.Entry<String, String> e : objects.entrySet()) {
                expect.add(EtcdClient.Compare.unchanged(e.getKey(), 0));
                puts.add(new EtcdClient.Put(e.getKey(), e.getValue().getBytes(StandardCharsets.UTF_8), 0));
            }
            if (etcd.txn(expect, puts, List.of()) < 0) {
                LOG.log(System.Logger.Level.INFO, "cluster.group " + group + ": subsystems/" + nqn
                                                  + ": another member put it in the store first; its copy replaces this node's");
            } else {
                LOG.log(System.Logger.Level.INFO, "cluster.group " + group + ": subsystems/" + nqn + " and its "
                                                  + (objects.size() - 1) + " namespace(s) put in the store from this node's config");
            }
        }
    }

    /** One change the watch saw; on the watch's thread. */
    private void event(EtcdClient.Event event) {
        ObjectKey k = parse(event.kv().key());
        if (k == null) return;
        lock.lock();
        try {
            if (closed) return;
            String key = event.kv().key();
            String what = "subsystems/" + k.nqn() + (k.nsid() == null ? "" : "/namespaces/" + k.nsid());
            if (!event.put()) {
                revisions.remove(key);
                if (k.nsid() == null) {
                    held.remove(k.nqn());
                    applyLogged("the removal of " + what, () -> removeSubsystem(k.nqn()));
                } else {
                    applyLogged("the removal of " + what, () -> removeNamespace(k.nqn(), k.nsid()));
                }
                return;
            }
            revisions.put(key, event.kv().modRevision());
            ObjectNode desired;
            try {
                desired = (ObjectNode) JSON.readTree(event.kv().valueText());
            } catch (IOException | ClassCastException e) {
                LOG.log(System.Logger.Level.WARNING, "cluster.group " + group + ": " + what + " in the store is not a JSON object: " + e.getMessage());
                return;
            }
            if (k.nsid() == null) {
                held.add(k.nqn());
                applyLogged(what, () -> applySubsystem(k.nqn(), desired));
            } else {
                applyLogged(what, () -> applyNamespace(k.nqn(), k.nsid(), desired));
            }
        } finally {
            lock.unlock();
        }
    }

    /** The watch ended (a member went away, the history was compacted): read everything again and watch anew, on a thread of its own. */
    private void ended(String why) {
        if (closed) return;
        Thread.ofPlatform().daemon().name("iotarget-group-config-resync").start(() -> {
            while (!closed) {
                try {
                    EtcdClient.Range range = etcd.range(prefix);
                    lock.lock();
                    try {
                        if (closed) return;
                        if (outage) LOG.log(System.Logger.Level.INFO, "cluster.group " + group + ": the store is reachable again; its config applied");
                        outage = false;
                        applyAll(range);
                        watch = etcd.watch(prefix, range.revision() + 1, this::event, this::ended);
                    } finally {
                        lock.unlock();
                    }
                    return;
                } catch (IOException e) {
                    lock.lock();
                    try {
                        if (!outage) {
                            LOG.log(System.Logger.Level.WARNING, "cluster.group " + group + ": the watch of the group's config ended (" + why
                                                                 + ") and the store cannot be read (" + e.getMessage() + "): changes by other members wait until it can");
                        }
                        outage = true;
                    } finally {
                        lock.unlock();
                    }
                }
                try {
                    Thread.sleep(RESYNC_RETRY_MS);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    @Override
    public void close() {
        closed = true;
        lock.lock();
        try {
            if (watch != null) watch.close();
            watch = null;
        } finally {
            lock.unlock();
        }
        etcd.close();
    }
}
