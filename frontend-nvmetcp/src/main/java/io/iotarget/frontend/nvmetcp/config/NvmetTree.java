package io.iotarget.frontend.nvmetcp.config;


import io.iotarget.frontend.nvmetcp.wire.AnaState;

import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.reservation.Reservations;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.Attribute;
import io.iotarget.model.tree.Attributes;
import io.iotarget.model.tree.GroupBinding;
import io.iotarget.model.tree.KernelParse;
import io.iotarget.model.tree.TreePath;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The target's configuration as a tree shaped like nvmet's configfs, with nvmet's attribute
 * names, value formats and errnos:
 *
 * <pre>
 *  hosts/&lt;hostnqn&gt;/      dhchap_key dhchap_ctrl_key dhchap_hash dhchap_dhgroup tls_key cgroup_id cgroup
 *  subsystems/&lt;nqn&gt;/   attr_allow_any_host attr_version attr_serial attr_model attr_firmware
 *                        attr_cntlid_min attr_cntlid_max attr_qid_max shared
 *      allowed_hosts/&lt;name&gt; -&gt; hosts/&lt;hostnqn&gt;            (links)
 *      namespaces/&lt;nsid&gt;/  device_path device_uuid device_nguid readonly buffered_io
 *                            ana_grpid cgroup_id cgroup cgroup_per_host resv_enable enable
 *  ports/&lt;portid&gt;/      addr_trtype addr_adrfam addr_traddr addr_trsvcid addr_tsas addr_treq
 *                        param_inline_data_size param_max_queue_size
 *      ana_groups/&lt;grpid&gt;/ ana_state        (group 1 always there; mkdir 2..128)
 *      subsystems/&lt;name&gt; -&gt; subsystems/&lt;nqn&gt;              (links; the first starts listening)
 *  discovery_nqn
 * </pre>
 *
 * Listings run in dependency order (hosts, subsystems, ports; {@code enable} last in a
 * namespace), so replaying a listing rebuilds the same target. {@code cgroup_id} is nvmet's
 * attribute with the cgroup_id patch (a group id; 0 = unbound, charged to the root group);
 * {@code cgroup} is iotarget's name for the same binding by group path; writing either updates
 * both ({@link GroupBinding}, as for NBD exports). A host's {@code cgroup} pays for its IO on a
 * namespace bound to none, and {@code cgroup_per_host} charges each host in a child of the
 * group that would pay, named after its NQN ({@code Controller#payer}). {@code readonly} is
 * iotarget's (nvmet has none), and so is a subsystem's {@code shared} (other nodes serve it
 * too: its namespaces enable only with attr_serial and device_uuid written, a controller-id
 * range narrower than the whole, and a backend other processes see). The attribute tables, flags (kstrtobool), numbers and paths are the shared toolkit's
 * ({@code io.iotarget.model.tree}); reads end with a newline, as sysfs reads do, and a trailing
 * newline on writes is ignored.
 *
 * <p>{@code dhchap_key} and {@code dhchap_ctrl_key} read back the secret as written, as nvmet's
 * do; an empty write removes the key (nvmet refuses it, but a listing must replay), and
 * errors about a key never quote it. {@code tls_key} (iotarget's; nvmet reads TLS keys from the
 * kernel keyring) is the host's NVMe/TCP TLS PSK in interchange format, handled the same way.
 * {@code addr_tsas} tls1.3 and {@code addr_treq} are nvmet's, except that "required" needs tls1.3.
 *
 * <p>ANA is nvmet's: a group's state is per port, {@code ana_state} and {@code ana_grpid} writes
 * bump the node-wide change count, and the controllers concerned get an ANA change event
 * (those on the port for a port's group, all of the subsystem's for a namespace). As in
 * nvmet, {@code ana_grpid} takes any group id 1..128, made on a port or not: a listing replays
 * namespaces before ports.
 *
 * <p>This class resolves paths, makes and removes directories and links, and holds the root's
 * and the ANA groups' attributes; each other directory kind's attribute table and writers are
 * beside it ({@link SubsystemAttributes}, {@link NamespaceAttributes}, {@link PortAttributes},
 * {@link HostAttributes}), called from here only.
 *
 * <p>Any thread; every operation runs under the target's configuration lock.
 */
public final class NvmetTree implements ConfigTree {
    private static final String SUBSYSTEMS = "subsystems";
    private static final String PORTS = "ports";
    private static final String HOSTS = "hosts";
    private static final String NAMESPACES = "namespaces";
    private static final String ALLOWED_HOSTS = "allowed_hosts";
    private static final String DISCOVERY_NQN = "discovery_nqn";
    private static final String ANA_GROUPS = "ana_groups";

    /** What a path names. */
    private sealed interface Node {
    }

    private record Root() implements Node {
    }

    private record Collection(String name) implements Node {
    }

    private record SubsystemDir(Subsystem subsystem) implements Node {
    }

    private record AllowedHosts(Subsystem subsystem) implements Node {
    }

    private record Namespaces(Subsystem subsystem) implements Node {
    }

    private record NamespaceDir(Namespace namespace) implements Node {
    }

    private record PortDir(Port port) implements Node {
    }

    private record PortSubsystems(Port port) implements Node {
    }

    private record AnaGroups(Port port) implements Node {
    }

    private record AnaGroupDir(Port port, int grpid) implements Node {
    }

    private record HostDir(Host host) implements Node {
    }

    /** A link inside a LINKS directory; {@code target} is the tree path it points at. */
    private record Link(Node directory, String name, String target) implements Node {
    }

    private record File<T>(T owner, Attribute<T> attribute) implements Node {
    }

    private final NvmetConfig target;
    private final ConfigEvents events;
    private final Engine engine;
    private final Attributes<NvmetConfig> rootAttributes;
    private final Attributes<Subsystem> subsystemAttributes;
    private final Attributes<Namespace> namespaceAttributes;
    private final Attributes<AnaGroupDir> anaGroupAttributes;
    private final Attributes<Host> hostAttributes;

    /**
     * The tree over {@code config}: namespaces enable on {@code engine}'s devices and groups (and
     * {@code reservations}), and {@code events} hears of every change.
     */
    public NvmetTree(NvmetConfig config, Engine engine, Reservations reservations, ConfigEvents events) {
        this.target = config;
        this.events = events;
        this.engine = engine;
        this.hostAttributes = HostAttributes.all(engine.controller(), engine.groups());
        this.rootAttributes = Attributes.of(List.of(Attribute.text(DISCOVERY_NQN, t -> t.discovery.nqn, this::writeDiscoveryNqn)));
        this.subsystemAttributes = SubsystemAttributes.all(engine, events);
        this.namespaceAttributes = NamespaceAttributes.all(config, engine, reservations, events);
        this.anaGroupAttributes = Attributes.of(List.of(
                Attribute.text("ana_state", g -> g.port().anaState(g.grpid()).text, this::writeAnaState)));
        engine.onResize(this::deviceResized);
    }

    /**
     * A backend's {@code revalidate_size} changed its device's size: every enabled namespace on it
     * takes the new NSZE and its hosts are told (Namespace Attribute Changed, the changed
     * namespace list), as nvmet_ns_revalidate and nvmet_ns_changed do; the Linux host then
     * re-reads Identify Namespace and resizes its block device without reconnecting.
     */
    private void deviceResized(Device device) {
        target.lock();
        try {
            for (Subsystem s : target.subsystems.values()) {
                for (Namespace ns : s.namespaces.values()) {
                    if (ns.active == null || ns.active.device() != device) continue;
                    ns.resized();
                    NamespaceAttributes.namespaceChanged(events, ns);
                }
            }
        } finally {
            target.unlock();
        }
    }

    // ---------------------------------------------------------------- ConfigTree

    @Override
    public Kind kind(String path) throws ControlException {
        target.lock();
        try {
            return switch (resolve(path)) {
                case File<?> f -> Kind.FILE;
                case AllowedHosts a -> Kind.LINKS;
                case PortSubsystems p -> Kind.LINKS;
                default -> Kind.DIRECTORY;
            };
        } finally {
            target.unlock();
        }
    }

    @Override
    public List<String> list(String path) throws ControlException {
        target.lock();
        try {
            Node node = resolve(path);
            if (node instanceof Link link) node = resolve(link.target());
            List<String> out = new ArrayList<>();
            switch (node) {
                case Root r -> {
                    out.add(HOSTS + "/");
                    out.add(SUBSYSTEMS + "/");
                    out.add(PORTS + "/");
                    out.addAll(rootAttributes.names());
                }
                case Collection c -> {
                    switch (c.name()) {
                        case HOSTS -> target.hosts.keySet().forEach(n -> out.add(n + "/"));
                        case SUBSYSTEMS -> target.subsystems.keySet().forEach(n -> out.add(n + "/"));
                        default -> target.ports.keySet().forEach(n -> out.add(n + "/"));
                    }
                }
                case SubsystemDir s -> {
                    out.addAll(subsystemAttributes.names());
                    out.add(ALLOWED_HOSTS + "/");
                    out.add(NAMESPACES + "/");
                }
                case AllowedHosts a -> out.addAll(a.subsystem().allowedHosts.keySet());
                case Namespaces n -> n.subsystem().namespaces.keySet().forEach(id -> out.add(Integer.toUnsignedString(id) + "/"));
                case NamespaceDir n -> out.addAll(namespaceAttributes.names());
                case PortDir p -> {
                    out.addAll(PortAttributes.ALL.names());
                    out.add(ANA_GROUPS + "/");
                    out.add(SUBSYSTEMS + "/");
                }
                case AnaGroups a -> a.port().anaGroups.forEach(g -> out.add(g + "/"));
                case AnaGroupDir g -> out.addAll(anaGroupAttributes.names());
                case PortSubsystems p -> out.addAll(p.port().subsystems.keySet());
                case HostDir h -> out.addAll(hostAttributes.names());
                case File<?> f -> throw new ControlException(Errno.ENOTDIR, path + " is a file");
                case Link l -> throw new IllegalStateException("links resolved above");
            }
            return out;
        } finally {
            target.unlock();
        }
    }

    @Override
    public String read(String path) throws ControlException {
        target.lock();
        try {
            if (!(resolve(path) instanceof File<?> file)) throw new ControlException(Errno.EISDIR, path + " is a directory");
            return show(file);
        } finally {
            target.unlock();
        }
    }

    private static <T> String show(File<T> file) {
        return file.attribute().read(file.owner());
    }

    @Override
    public List<String> replay(String path) throws ControlException {
        target.lock();
        try {
            if (!(resolve(path) instanceof File<?> file)) throw new ControlException(Errno.EISDIR, path + " is a directory");
            return replay(file);
        } finally {
            target.unlock();
        }
    }

    private static <T> List<String> replay(File<T> file) {
        return file.attribute().replay(file.owner());
    }

    @Override
    public void write(String path, String value) throws ControlException {
        target.lock();
        try {
            if (!(resolve(path) instanceof File<?> file)) throw new ControlException(Errno.EISDIR, path + " is a directory");
            if (file.owner() instanceof Namespace ns) NamespaceAttributes.requireSettled(ns, path);
            store(file, value);
        } finally {
            target.unlock();
        }
    }

    private static <T> void store(File<T> file, String value) throws ControlException {
        file.attribute().write(file.owner(), value);
    }

    @Override
    public void mkdir(String path) throws ControlException {
        List<String> parts = TreePath.split(path);
        if (parts.isEmpty()) throw new ControlException(Errno.EEXIST, "the root exists");
        String name = parts.getLast();
        target.lock();
        try {
            Node parent = resolve(parts.subList(0, parts.size() - 1));
            if (exists(parent, name)) throw new ControlException(Errno.EEXIST, path + " exists");
            switch (parent) {
                case Collection c when c.name().equals(HOSTS) -> {
                    checkNqn("hosts", name);
                    target.hosts.put(name, new Host(name));
                }
                case Collection c when c.name().equals(SUBSYSTEMS) -> {
                    checkNqn("subsystems", name);
                    if (name.equals(Subsystem.WELL_KNOWN_DISCOVERY_NQN) || name.equals(target.discovery.nqn)) {
                        throw new ControlException(Errno.EINVAL, "subsystems/" + name + ": the discovery subsystem cannot be created");
                    }
                    Subsystem made = new Subsystem(name, false);
                    made.config = target;
                    target.subsystems.put(name, made);
                }
                case Collection c -> {
                    int id = (int) KernelText.unsigned("ports/" + name, name, 0xFFFF, "a port id 0..65535");
                    // Another spelling of a taken id (010 is 8) must not replace that port.
                    if (target.ports.containsKey(id)) throw new ControlException(Errno.EEXIST, "ports/" + id + " exists");
                    target.ports.put(id, new Port(id));
                }
                case Namespaces n -> {
                    long nsid = KernelText.unsigned("namespaces/" + name, name, 0xFFFFFFFFL, "an nsid 1..4294967294");
                    if (nsid == 0 || nsid == 0xFFFFFFFFL) throw KernelParse.invalid("namespaces/" + name, name, "an nsid 1..4294967294");
                    if (n.subsystem().namespaces.containsKey((int) nsid)) {
                        throw new ControlException(Errno.EEXIST, "namespaces/" + Long.toString(nsid) + " exists");
                    }
                    n.subsystem().namespaces.put((int) nsid, new Namespace(n.subsystem(), (int) nsid));
                }
                case AnaGroups a -> {
                    int grpid = (int) KernelText.unsigned("ana_groups/" + name, name, 0xFFFFFFFFL, "a group id 2.." + Port.MAX_ANA_GROUPS);
                    if (grpid <= Port.DEFAULT_ANA_GROUP || grpid > Port.MAX_ANA_GROUPS) {
                        throw KernelParse.invalid("ana_groups/" + name, name, "a group id 2.." + Port.MAX_ANA_GROUPS);
                    }
                    if (!a.port().anaGroups.add(grpid)) throw new ControlException(Errno.EEXIST, "ana_groups/" + grpid + " exists");
                    portAnaEvent(a.port());
                }
                default -> throw new ControlException(Errno.EPERM, path + ": cannot create directories here");
            }
        } finally {
            target.unlock();
        }
    }

    @Override
    public void rmdir(String path) throws ControlException {
        target.lock();
        try {
            switch (resolve(path)) {
                case HostDir h -> {
                    for (Subsystem s : target.subsystems.values()) {
                        for (Map.Entry<String, Host> e : s.allowedHosts.entrySet()) {
                            if (e.getValue() == h.host()) {
                                throw new ControlException(Errno.EBUSY, path + " is linked from subsystems/" + s.nqn + "/allowed_hosts/" + e.getKey());
                            }
                        }
                    }
                    target.hosts.remove(h.host().nqn);
                    if (h.host().ioGroup != null) engine.controller().unbind(h.host().ioGroup);
                }
                case SubsystemDir sd -> {
                    Subsystem s = sd.subsystem();
                    if (!s.namespaces.isEmpty()) throw new ControlException(Errno.ENOTEMPTY, path + " has namespaces");
                    if (!s.allowedHosts.isEmpty()) throw new ControlException(Errno.ENOTEMPTY, path + " has allowed_hosts links");
                    for (Port p : target.ports.values()) {
                        for (Map.Entry<String, Subsystem> e : p.subsystems.entrySet()) {
                            if (e.getValue() == s) throw new ControlException(Errno.EBUSY, path + " is linked from ports/" + p.id + "/subsystems/" + e.getKey());
                        }
                    }
                    target.subsystems.remove(s.nqn);
                    events.controllersFail(s, null);
                }
                case NamespaceDir nd -> {
                    Namespace ns = nd.namespace();
                    NamespaceAttributes.requireSettled(ns, path);
                    boolean wasEnabled = ns.enabled();
                    NamespaceAttributes.disable(target, engine, ns);
                    ns.subsystem.namespaces.remove(ns.nsid);
                    if (wasEnabled) NamespaceAttributes.namespaceChanged(events, ns);
                }
                case AnaGroupDir g -> {
                    if (g.grpid() == Port.DEFAULT_ANA_GROUP) throw new ControlException(Errno.EPERM, path + ": the default ANA group cannot be removed");
                    g.port().anaGroups.remove(g.grpid());
                    g.port().anaState(g.grpid(), AnaState.INACCESSIBLE);
                    portAnaEvent(g.port());
                }
                case PortDir pd -> {
                    if (!pd.port().subsystems.isEmpty()) throw new ControlException(Errno.ENOTEMPTY, path + " has linked subsystems");
                    target.ports.remove(pd.port().id);
                }
                default -> throw new ControlException(Errno.EPERM, path + ": not a removable directory");
            }
        } finally {
            target.unlock();
        }
    }

    @Override
    public void link(String targetPath, String linkPath) throws ControlException {
        List<String> parts = TreePath.split(linkPath);
        if (parts.isEmpty()) throw new ControlException(Errno.EEXIST, "the root exists");
        String name = parts.getLast();
        target.lock();
        try {
            Node directory = resolve(parts.subList(0, parts.size() - 1));
            Node pointee = resolveOrNull(TreePath.split(targetPath));
            switch (directory) {
                case PortSubsystems ps -> {
                    if (!(pointee instanceof SubsystemDir sd)) {
                        throw new ControlException(Errno.EINVAL, linkPath + " -> " + targetPath + " (expected: a link to subsystems/<nqn>)");
                    }
                    Port port = ps.port();
                    if (port.subsystems.containsKey(name)) throw new ControlException(Errno.EEXIST, linkPath + " exists");
                    if (port.links(sd.subsystem())) throw new ControlException(Errno.EEXIST, "ports/" + port.id + " already links subsystems/" + sd.subsystem().nqn);
                    if (port.subsystems.isEmpty()) port.listen(events);
                    port.subsystems.put(name, sd.subsystem());
                    events.discoveryChanged();
                }
                case AllowedHosts ah -> {
                    if (!(pointee instanceof HostDir hd)) {
                        throw new ControlException(Errno.EINVAL, linkPath + " -> " + targetPath + " (expected: a link to hosts/<hostnqn>)");
                    }
                    Subsystem s = ah.subsystem();
                    if (s.allowAnyHost) throw new ControlException(Errno.EINVAL, linkPath + ": attr_allow_any_host=1 (expected: 0 before linking hosts)");
                    if (s.allowedHosts.containsKey(name) || s.allowedHosts.containsValue(hd.host())) throw new ControlException(Errno.EEXIST, linkPath + " exists");
                    s.allowedHosts.put(name, hd.host());
                    events.discoveryChanged();
                }
                default -> throw new ControlException(Errno.EPERM, linkPath + ": links can only be made in ports/<id>/subsystems and subsystems/<nqn>/allowed_hosts");
            }
        } finally {
            target.unlock();
        }
    }

    @Override
    public void unlink(String linkPath) throws ControlException {
        target.lock();
        try {
            if (!(resolve(linkPath) instanceof Link link)) throw new ControlException(Errno.EPERM, linkPath + " is not a link");
            switch (link.directory()) {
                case PortSubsystems ps -> {
                    Port port = ps.port();
                    Subsystem s = port.subsystems.remove(link.name());
                    events.controllersFail(s, port);
                    if (port.subsystems.isEmpty()) {
                        port.stop();
                        events.stopped(port);
                    }
                    events.discoveryChanged();
                }
                case AllowedHosts ah -> {
                    ah.subsystem().allowedHosts.remove(link.name());
                    events.discoveryChanged();
                }
                default -> throw new IllegalStateException("links live in LINKS directories");
            }
        } finally {
            target.unlock();
        }
    }

    @Override
    public String readLink(String linkPath) throws ControlException {
        target.lock();
        try {
            if (!(resolve(linkPath) instanceof Link link)) throw new ControlException(Errno.EINVAL, linkPath + " is not a link");
            return link.target();
        } finally {
            target.unlock();
        }
    }

    // ---------------------------------------------------------------- resolution

    private Node resolve(String path) throws ControlException {
        return resolve(TreePath.split(path));
    }

    private Node resolve(List<String> parts) throws ControlException {
        Node node = resolveOrNull(parts);
        if (node == null) throw new ControlException(Errno.ENOENT, "no such file or directory: " + String.join("/", parts));
        return node;
    }

    /** Walks the path; links are followed when the path goes on through them. Lock held. */
    private Node resolveOrNull(List<String> parts) throws ControlException {
        Node node = new Root();
        for (int i = 0; i < parts.size(); i++) {
            if (node instanceof Link link) node = resolveOrNull(TreePath.split(link.target()));
            if (node == null) return null;
            node = child(node, parts.get(i));
            if (node == null) return null;
        }
        return node;
    }

    private Node child(Node node, String name) {
        return switch (node) {
            case Root r -> switch (name) {
                case HOSTS, SUBSYSTEMS, PORTS -> new Collection(name);
                default -> file(target, rootAttributes, name);
            };
            case Collection c -> switch (c.name()) {
                case HOSTS -> target.hosts.containsKey(name) ? new HostDir(target.hosts.get(name)) : null;
                case SUBSYSTEMS -> target.subsystems.containsKey(name) ? new SubsystemDir(target.subsystems.get(name)) : null;
                default -> {
                    Integer id = portId(name);
                    yield id != null && target.ports.containsKey(id) ? new PortDir(target.ports.get(id)) : null;
                }
            };
            case SubsystemDir s -> switch (name) {
                case ALLOWED_HOSTS -> new AllowedHosts(s.subsystem());
                case NAMESPACES -> new Namespaces(s.subsystem());
                default -> file(s.subsystem(), subsystemAttributes, name);
            };
            case AllowedHosts a -> {
                Host h = a.subsystem().allowedHosts.get(name);
                yield h == null ? null : new Link(a, name, HOSTS + "/" + h.nqn);
            }
            case Namespaces n -> {
                Long nsid = nsid(name);
                Namespace ns = nsid == null ? null : n.subsystem().namespaces.get(nsid.intValue());
                yield ns == null ? null : new NamespaceDir(ns);
            }
            case NamespaceDir n -> file(n.namespace(), namespaceAttributes, name);
            case PortDir p -> switch (name) {
                case SUBSYSTEMS -> new PortSubsystems(p.port());
                case ANA_GROUPS -> new AnaGroups(p.port());
                default -> file(p.port(), PortAttributes.ALL, name);
            };
            case AnaGroups a -> {
                Integer grpid = portId(name);
                yield grpid != null && a.port().anaGroups.contains(grpid) ? new AnaGroupDir(a.port(), grpid) : null;
            }
            case AnaGroupDir g -> file(g, anaGroupAttributes, name);
            case PortSubsystems p -> {
                Subsystem s = p.port().subsystems.get(name);
                yield s == null ? null : new Link(p, name, SUBSYSTEMS + "/" + s.nqn);
            }
            case HostDir h -> file(h.host(), hostAttributes, name);
            case File<?> f -> null;
            case Link l -> null;
        };
    }

    private static <T> File<T> file(T owner, Attributes<T> attributes, String name) {
        Attribute<T> a = attributes.find(name);
        return a == null ? null : new File<>(owner, a);
    }

    private boolean exists(Node parent, String name) {
        return child(parent, name) != null;
    }

    private static Integer portId(String name) {
        try {
            int id = Integer.parseInt(name);
            return id >= 0 && id <= 0xFFFF && name.equals(Integer.toString(id)) ? id : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static Long nsid(String name) {
        try {
            long id = Long.parseLong(name);
            return id > 0 && id < 0xFFFFFFFFL && name.equals(Long.toString(id)) ? id : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    // ---------------------------------------------------------------- root attributes

    private void writeDiscoveryNqn(NvmetConfig t, String value) throws ControlException {
        checkNqn(DISCOVERY_NQN, value);
        if (t.subsystems.containsKey(value)) throw new ControlException(Errno.EINVAL, DISCOVERY_NQN + "=" + value + " is the NQN of a subsystem");
        t.discovery.nqn = value;
        events.discoveryChanged();
    }

    // ---------------------------------------------------------------- ANA groups

    private void writeAnaState(AnaGroupDir g, String value) throws ControlException {
        AnaState state = AnaState.named(value);
        if (state == null) throw KernelParse.invalid("ana_state", value, "optimized, non-optimized, inaccessible, persistent-loss or change");
        g.port().anaState(g.grpid(), state);
        events.anaChanged();
        portAnaEvent(g.port());
    }

    /** nvmet_port_send_ana_event: the controllers that came in through {@code port} hear of an ANA change. */
    private void portAnaEvent(Port port) {
        events.portAnaChanged(port);
    }

    // ---------------------------------------------------------------- names

    private static void checkNqn(String where, String nqn) throws ControlException {
        if (nqn.isEmpty() || nqn.getBytes(java.nio.charset.StandardCharsets.UTF_8).length > Subsystem.MAX_NQN_BYTES) {
            throw KernelParse.invalid(where, nqn, "an NQN of 1.." + Subsystem.MAX_NQN_BYTES + " bytes");
        }
    }
}
