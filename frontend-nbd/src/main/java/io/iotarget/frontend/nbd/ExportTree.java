package io.iotarget.frontend.nbd;

import io.iotarget.engine.Engine;
import io.iotarget.engine.Lease;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.Attribute;
import io.iotarget.model.tree.Attributes;
import io.iotarget.model.tree.GroupBinding;
import io.iotarget.model.tree.KernelParse;
import io.iotarget.model.tree.TreePath;
import io.iotarget.transport.Pem;
import io.iotarget.transport.TlsPsk;

import java.nio.charset.StandardCharsets;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The NBD front end's configuration, laid out like nvmet's configfs namespaces:
 *
 * <pre>
 *  max_request          largest READ/WRITE payload in bytes, advertised in NBD_INFO_BLOCK_SIZE: a power of
 *                       two from 1 MiB to the buffer share; default 64 MiB (the share, if smaller);
 *                       clients that connect afterwards are told and held to a new value
 *  tls/
 *    certificates       absolute path of the server's X.509 credentials ({@link TlsCredentials}); "" = none
 *    psk_file           absolute path of its pre-shared keys, psktool's USERNAME:HEXKEY lines ({@link TlsPsk}); "" = none
 *  exports/
 *    &lt;name&gt;/            mkdir creates a disabled export; rmdir disables and removes it
 *      backend          engine device name (e.g. "default")            changeable only while disabled
 *      cgroup           group path; "" = unbound: the root pays (default) changeable only while disabled
 *      cgroup_id        the same binding by group id (nvmet's); 0 unbinds  changeable only while disabled
 *      cgroup_per_host  0 | 1: each client pays in its own child of that group   changeable only while disabled
 *      readonly         0 | 1                                           changeable only while disabled
 *      description      free text for NBD_OPT_LIST / NBD_INFO_DESCRIPTION
 *      max_connections  clients transmitting on it at once; 0 = no limit (default)
 *      tls              0 | 1: seen and opened only by clients that started TLS
 *      allow_any_client 1 | 0: any client may open it; 0: only those in allowed_clients (needs tls 1)
 *      allowed_clients  client certificates and psk:USERNAMEs that may see and open it, one per line ({@link AllowedClient});
 *                       a write adds its lines, "-ENTRY" removes one, "" empties the list
 *      enable           0 | 1: offered to clients only when 1
 * </pre>
 *
 * {@code allow_any_client} and {@code allowed_clients} work as nvmet's {@code attr_allow_any_host}
 * and {@code allowed_hosts}: a list can be written only while {@code allow_any_client} is 0, which
 * can go back to 1 only once the list is empty — so taking the last client off a list leaves the
 * export open to nobody, never to everybody. {@code tls}, {@code allow_any_client} and
 * {@code allowed_clients} may change while the export is enabled: new
 * negotiations see the change at once, and connections whose client may no longer open the
 * export are ended the way a disable ends them. An export whose {@code tls} is 1 can be enabled
 * only while {@code tls/certificates} or {@code tls/psk_file} is set, and the last of them
 * cannot then be emptied (EBUSY); a path written there again (the same or another) is read
 * anew and serves the handshakes that start after it.
 *
 * Enabling takes a {@link Lease} on the device and the group ({@link Engine#bind}), so neither
 * can be removed under a live export. Disabling an
 * export shuts its connections down: each stops reading, answers what it already accepted,
 * and closes (a client sees a disconnect, as at server shutdown). The device and the group
 * stay held until the last of those connections has finished — as nvmet's namespace disable
 * waits for IO in flight — so a backend is never closed, nor a group removed, under a request
 * that is still running or parked; until then they answer EBUSY. A client
 * asking for the empty export name gets the export named {@value #DEFAULT_EXPORT}.
 *
 * <p>The paths, attribute tables, flags (kstrtobool: {@code y}, {@code on}, ... as for an nvmet
 * namespace), numbers (kstrtou64) and the {@code cgroup}/{@code cgroup_id} binding are the shared
 * toolkit's ({@code io.iotarget.model.tree}), so an attribute spelled alike in another tree
 * behaves alike. Attribute values read back with a trailing newline, as configfs prints them;
 * writes may end with one. Any thread: changes are serialised on this object, lookups by connections are
 * lock-free.
 */
final class ExportTree implements ConfigTree, Negotiation.Exports {
    /** What the empty export name means (nbd-server's default export). */
    static final String DEFAULT_EXPORT = "default";
    static final String EXPORTS = "exports";
    static final String TLS = "tls";
    static final String CERTIFICATES = "certificates";
    static final String PSK_FILE = "psk_file";
    static final String MAX_REQUEST = "max_request";
    private static final int MAX_NAME_BYTES = 255;

    private final Engine engine;
    private final Map<String, Entry> entries = new ConcurrentSkipListMap<>();
    private volatile boolean shuttingDown;
    /** The X.509 credentials, or null. Guarded by the tree. */
    private TlsCredentials certificateCredentials;
    /** The pre-shared keys, or null. Guarded by the tree. */
    private TlsPsk pskKeys;
    /** Both together, or null: no TLS. Written under the tree's lock, read by connections as they open. */
    private volatile TlsCredentials tls;
    /** The largest READ/WRITE payload for clients connecting from now on. Written under the tree's lock. */
    private volatile int maxRequestBytes;

    private final Attributes<Entry> attributes;
    private final Attribute<ExportTree> certificates = Attribute.text(CERTIFICATES,
            t -> t.certificateCredentials == null ? "" : t.certificateCredentials.directory().toString(), ExportTree::writeCertificates);
    private final Attribute<ExportTree> pskFile = Attribute.text(PSK_FILE,
            t -> t.pskKeys == null ? "" : t.pskKeys.file().toString(), ExportTree::writePskFile);
    private final Attribute<ExportTree> maxRequest = Attribute.number(MAX_REQUEST, t -> t.maxRequestBytes, ExportTree::writeMaxRequest);

    ExportTree(Engine engine) {
        this.engine = engine;
        this.maxRequestBytes = (int) Math.min(NbdWire.DEFAULT_MAX_REQUEST, Long.highestOneBit(engine.buffers().shareBytes()));
        this.attributes = Attributes.of(List.of(
                Attribute.flag("allow_any_client", e -> e.allowAnyClient, this::writeAllowAnyClient),
                Attribute.lines("allowed_clients", e -> e.allowedClients.stream().map(AllowedClient::text).toList(), this::writeAllowedClients),
                Attribute.text("backend", e -> e.backend == null ? "" : e.backend, this::writeBackend),
                GroupBinding.cgroup(engine.groups(), e -> e.group, ExportTree::bindGroup),
                GroupBinding.cgroupId(engine.groups(), e -> e.group, ExportTree::bindGroup),
                Attribute.flag("cgroup_per_host", e -> e.perHost, ExportTree::writePerHost),
                Attribute.text("description", e -> e.description, this::writeDescription),
                Attribute.flag("enable", e -> e.live != null, this::writeEnable),
                Attribute.number("max_connections", e -> e.maxConnections, ExportTree::writeMaxConnections),
                Attribute.flag("readonly", e -> e.readOnly, ExportTree::writeReadOnly),
                Attribute.flag("tls", e -> e.tls, this::writeTls)));
    }

    /** One export directory. Fields are guarded by the tree; {@link #live} is read lock-free. */
    static final class Entry {
        final String name;
        String backend;
        /** The bound group; null = unbound, charged to the root ({@link GroupBinding}). */
        Group group;
        /** cgroup_per_host: each client's IO goes to the child of the group named after it. */
        boolean perHost;
        boolean readOnly;
        String description = "";
        /** 0 = no limit; read lock-free by negotiating connections. */
        volatile int maxConnections;
        boolean tls;
        boolean allowAnyClient = true;
        final List<AllowedClient> allowedClients = new ArrayList<>();
        /** The enabled export, or null while disabled. */
        volatile Export live;
        /** What the enabled export holds; null while disabled. */
        volatile Hold hold;
        /** Connections transmitting on the export, with who is at the other end. */
        final Map<NbdConnection, ClientIdentity> connections = new ConcurrentHashMap<>();

        Entry(String name) {
            this.name = name;
        }
    }

    /**
     * The {@link Lease} (device and group) of one enabling of an export, shared by the tree while
     * the export is enabled and by each connection that attached to it; closed when the last
     * holder lets go. Any thread.
     */
    static final class Hold {
        private final Entry entry;
        private final Lease lease;
        private final AtomicInteger holders = new AtomicInteger(1);

        private Hold(Entry entry, Lease lease) {
            this.entry = entry;
            this.lease = lease;
        }

        /** Takes one more hold; false once everything was released. */
        private boolean retain() {
            int n;
            do {
                n = holders.get();
                if (n == 0) return false;
            } while (!holders.compareAndSet(n, n + 1));
            return true;
        }

        private void release() {
            if (holders.decrementAndGet() == 0) lease.close();
        }

        /** A connection that {@link #attach attached} has finished: its hold goes. */
        void detach(NbdConnection connection) {
            entry.connections.remove(connection);
            release();
        }
    }

    // ------------------------------------------------------------ for connections

    @Override
    public Export find(String name) {
        Entry e = entries.get(name.isEmpty() ? DEFAULT_EXPORT : name);
        return e == null ? null : e.live;
    }

    @Override
    public List<Export> enabled() {
        List<Export> list = new ArrayList<>();
        for (Entry e : entries.values()) {
            Export live = e.live;
            if (live != null) list.add(live);
        }
        return list;
    }

    @Override
    public String refusal(Export export) {
        Entry e = entries.get(export.name());
        int max = e == null ? 0 : e.maxConnections;
        if (max == 0 || e.connections.size() < max) return null;
        return "export " + export.name() + " has its maximum of " + max + " connections";
    }

    @Override
    public boolean shuttingDown() {
        return shuttingDown;
    }

    @Override
    public TlsCredentials tls() {
        return tls;
    }

    @Override
    public int maxRequest() {
        return maxRequestBytes;
    }

    /**
     * Registers a connection entering transmission on {@code export}, holding its device and
     * group until {@link Hold#detach}; null when the export was disabled meanwhile (the
     * connection must then close), or when {@code client} may no longer open it. Pairs with
     * {@link #disable} and {@link #republish}: either they see the connection or the
     * connection sees the export gone (or changed).
     */
    Hold attach(Export export, NbdConnection connection, ClientIdentity client) {
        Entry e = entries.get(export.name());
        if (e == null) return null;
        Hold h = e.hold;
        Export live = e.live;
        // A new description republishes the export; a disable (or a re-enable on another binding) does not match.
        if (h == null || live == null || live.device() != export.device() || live.group() != export.group()
            || live.readOnly() != export.readOnly() || !live.admits(client) || !h.retain()) {
            return null;
        }
        if (refusal(export) != null) {                  // another client took the last place meanwhile
            h.release();
            return null;
        }
        e.connections.put(connection, client);
        Export now = e.live;
        if (e.hold != h || now == null || !now.admits(client)) {
            h.detach(connection);
            return null;
        }
        return h;
    }

    /** Server closing: options get ERR_SHUTDOWN from now on. */
    void shutDown() {
        shuttingDown = true;
    }

    /** Disables every export (server close), releasing devices and groups. */
    synchronized void disableAll() {
        for (Entry e : entries.values()) disable(e);
    }

    // ------------------------------------------------------------ ConfigTree

    /** What a path names. */
    private sealed interface Node {
    }

    private record Root() implements Node {
    }

    private record Exports() implements Node {
    }

    private record ExportDir(Entry entry) implements Node {
    }

    private record Tls() implements Node {
    }

    private record File<T>(T owner, Attribute<T> attribute) implements Node {
        String read() {
            return attribute.read(owner);
        }

        void write(String value) throws ControlException {
            attribute.write(owner, value);
        }

        List<String> replay() {
            return attribute.replay(owner);
        }
    }

    @Override
    public synchronized Kind kind(String path) throws ControlException {
        return resolve(path) instanceof File<?> ? Kind.FILE : Kind.DIRECTORY;
    }

    @Override
    public synchronized List<String> list(String path) throws ControlException {
        return switch (resolve(path)) {
            case Root r -> List.of(MAX_REQUEST, TLS + "/", EXPORTS + "/");        // dependency order: an export with tls 1 needs the credentials
            case Tls t -> List.of(CERTIFICATES, PSK_FILE);
            case Exports x -> entries.keySet().stream().map(name -> name + "/").toList();
            case ExportDir d -> attributes.names();
            case File<?> f -> throw new ControlException(Errno.ENOTDIR, path + " is not a directory");
        };
    }

    @Override
    public synchronized String read(String path) throws ControlException {
        return file(path).read();
    }

    @Override
    public synchronized void write(String path, String value) throws ControlException {
        file(path).write(value);
    }

    @Override
    public synchronized List<String> replay(String path) throws ControlException {
        return file(path).replay();
    }

    @Override
    public synchronized void mkdir(String path) throws ControlException {
        String name = exportName("mkdir", path);
        if (name.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
            throw new ControlException(Errno.ENAMETOOLONG, "export name longer than " + MAX_NAME_BYTES + " bytes");
        }
        if (name.indexOf('\0') >= 0) {
            throw new ControlException(Errno.EINVAL, "export name '" + name + "' (expected: a non-empty name without '/' or NUL)");
        }
        if (entries.containsKey(name)) throw new ControlException(Errno.EEXIST, "export " + name + " exists");
        entries.put(name, new Entry(name));
    }

    @Override
    public synchronized void rmdir(String path) throws ControlException {
        Entry e = entry(exportName("rmdir", path), path);
        disable(e);
        entries.remove(e.name);
    }

    /** The name of {@code exports/<name>}; EPERM for any other path. */
    private static String exportName(String operation, String path) throws ControlException {
        List<String> p = TreePath.split(path);
        if (p.size() != 2 || !p.get(0).equals(EXPORTS)) {
            throw new ControlException(Errno.EPERM, operation + " " + path + " (expected: exports/<name>)");
        }
        return p.get(1);
    }

    private File<?> file(String path) throws ControlException {
        if (resolve(path) instanceof File<?> f) return f;
        throw new ControlException(Errno.EISDIR, path + " is a directory");
    }

    /** Walks the path. Lock held. */
    private Node resolve(String path) throws ControlException {
        Node node = new Root();
        for (String name : TreePath.split(path)) {
            node = switch (node) {
                case Root r when name.equals(EXPORTS) -> new Exports();
                case Root r when name.equals(TLS) -> new Tls();
                case Root r when name.equals(MAX_REQUEST) -> new File<>(this, maxRequest);
                case Tls t when name.equals(CERTIFICATES) -> new File<>(this, certificates);
                case Tls t when name.equals(PSK_FILE) -> new File<>(this, pskFile);
                case Exports x when entries.containsKey(name) -> new ExportDir(entries.get(name));
                case ExportDir d when attributes.find(name) != null -> new File<>(d.entry(), attributes.find(name));
                default -> throw noEntry(path);
            };
        }
        return node;
    }

    private Entry entry(String name, String path) throws ControlException {
        Entry e = entries.get(name);
        if (e == null) throw noEntry(path);
        return e;
    }

    private ControlException noEntry(String path) {
        return new ControlException(Errno.ENOENT, "no " + path + " in the NBD tree (expected: " + MAX_REQUEST + ", " + TLS + "/" + CERTIFICATES + ", "
                                                  + TLS + "/" + PSK_FILE + " or exports/<name>/{" + String.join(",", attributes.names()) + "})");
    }

    // ------------------------------------------------------------ export attributes

    /** backend, cgroup, cgroup_id, cgroup_per_host and readonly are fixed while the export is enabled. */
    private static void requireDisabled(Entry e, String attribute) throws ControlException {
        if (e.live != null) {
            throw new ControlException(Errno.EBUSY, EXPORTS + "/" + e.name + "/" + attribute + ": export is enabled (write 0 to enable first)");
        }
    }

    private void writeEnable(Entry e, boolean on) throws ControlException {
        if (on && e.live == null) enable(e);
        if (!on && e.live != null) disable(e);
    }

    private void writeDescription(Entry e, String v) throws ControlException {
        if (v.getBytes(StandardCharsets.UTF_8).length > NbdWire.MAX_STRING || v.indexOf('\0') >= 0) {
            throw new ControlException(Errno.EINVAL, "description of " + v.length() + " characters (expected: at most 4096 bytes of UTF-8 without NUL)");
        }
        e.description = v;
        republish(e);
    }

    private void writeTls(Entry e, boolean on) throws ControlException {
        if (e.live != null) checkTls(e, on, e.allowAnyClient);
        e.tls = on;
        republish(e);
    }

    private void writeAllowAnyClient(Entry e, boolean any) throws ControlException {
        if (any && !e.allowedClients.isEmpty()) {
            throw new ControlException(Errno.EINVAL, EXPORTS + "/" + e.name + "/allow_any_client=1: allowed_clients is not empty "
                                                     + "(empty it first, as nvmet's allowed_hosts)");
        }
        if (e.live != null) checkTls(e, e.tls, any);
        e.allowAnyClient = any;
        republish(e);
    }

    private void writeAllowedClients(Entry e, String v) throws ControlException {
        List<AllowedClient> next = allowedClients(e.allowedClients, v);
        if (e.allowAnyClient && !next.isEmpty()) {
            throw new ControlException(Errno.EINVAL, EXPORTS + "/" + e.name + "/allowed_clients: allow_any_client is 1 "
                                                     + "(write 0 first, as for nvmet's allowed_hosts)");
        }
        e.allowedClients.clear();
        e.allowedClients.addAll(next);
        republish(e);
    }

    /** Applies to clients that connect from now on; those transmitting stay. */
    private static void writeMaxConnections(Entry e, long max) throws ControlException {
        if (Long.compareUnsigned(max, Integer.MAX_VALUE) > 0) {
            throw KernelParse.invalid("max_connections", Long.toUnsignedString(max), "a count of connections up to 2^31 - 1, 0 for no limit");
        }
        e.maxConnections = (int) max;
    }

    private void writeBackend(Entry e, String v) throws ControlException {
        requireDisabled(e, "backend");
        if (engine.device(v) == null) {
            throw new ControlException(Errno.ENODEV, "backend=" + v + " (expected: an engine device name; have " + deviceNames() + ")");
        }
        e.backend = v;
    }

    private static void bindGroup(Entry e, Group group, String write) throws ControlException {
        requireDisabled(e, write);
        e.group = group;
    }

    /**
     * Fixed while enabled, as the binding is: a client's group is chosen once, when it starts
     * transmitting, and no client changes payer mid-connection.
     */
    private static void writePerHost(Entry e, boolean perHost) throws ControlException {
        requireDisabled(e, "cgroup_per_host");
        e.perHost = perHost;
    }

    private static void writeReadOnly(Entry e, boolean readOnly) throws ControlException {
        requireDisabled(e, "readonly");
        e.readOnly = readOnly;
    }

    /**
     * A power of two, so that a request of the maximum takes a buffer of exactly its size from
     * the pool's classes; at least the spec's 1 MiB; at most one group's buffer share, which a
     * request must fit in whole.
     */
    private void writeMaxRequest(long bytes) throws ControlException {
        long share = engine.buffers().shareBytes();
        if (Long.bitCount(bytes) != 1 || bytes < NbdWire.MIN_MAX_REQUEST || bytes > share) {
            throw KernelParse.invalid(MAX_REQUEST, Long.toUnsignedString(bytes), "a power of two from " + NbdWire.MIN_MAX_REQUEST
                                      + " (1 MiB) to the buffer share, " + share + " bytes (server.buffer_share)");
        }
        maxRequestBytes = (int) bytes;
    }

    // ------------------------------------------------------------ TLS

    /** A directory of credentials to serve TLS with from now on, or "" for none (only while TLS stays, or no enabled export needs it). */
    private void writeCertificates(String v) throws ControlException {
        if (v.isEmpty()) {
            if (pskKeys == null) requireNoExportNeedsTls(CERTIFICATES);
            certificateCredentials = null;
        } else {
            certificateCredentials = TlsCredentials.load(absolute(CERTIFICATES, v, "directory"));
        }
        tls = TlsCredentials.of(certificateCredentials, pskKeys);
    }

    /** A psktool file of pre-shared keys to serve TLS with from now on, or "" for none (as for certificates). */
    private void writePskFile(String v) throws ControlException {
        if (v.isEmpty()) {
            if (certificateCredentials == null) requireNoExportNeedsTls(PSK_FILE);
            pskKeys = null;
        } else {
            try {
                pskKeys = TlsPsk.read(absolute(PSK_FILE, v, "file"));
            } catch (Pem.PemException e) {
                throw new ControlException(Errno.EINVAL, PSK_FILE + "=" + v + ": " + e.problem());
            }
        }
        tls = TlsCredentials.of(certificateCredentials, pskKeys);
    }

    private static Path absolute(String attribute, String v, String what) throws ControlException {
        try {
            Path p = Path.of(v);
            if (p.isAbsolute()) return p;
        } catch (InvalidPathException x) {
            // as below
        }
        throw new ControlException(Errno.EINVAL, attribute + "=" + v + " (expected: an absolute " + what + " path)");
    }

    /** TLS is about to go: EBUSY while an enabled export needs it. */
    private void requireNoExportNeedsTls(String attribute) throws ControlException {
        List<String> needing = new ArrayList<>();
        for (Entry e : entries.values()) {
            if (e.live != null && e.tls) needing.add(e.name);
        }
        if (!needing.isEmpty()) {
            throw new ControlException(Errno.EBUSY, TLS + "/" + attribute + ": enabled exports need TLS: " + String.join(", ", needing)
                                                    + " (write their tls 0, or disable them, first)");
        }
    }

    /** An export's {@code tls} and {@code allow_any_client} as they would be: they must make sense together and with the server. */
    private void checkTls(Entry e, boolean tlsOn, boolean allowAnyClient) throws ControlException {
        String where = EXPORTS + "/" + e.name;
        if (!tlsOn && !allowAnyClient) {
            throw new ControlException(Errno.EINVAL, where + ": allow_any_client 0 needs tls 1 (a client certificate is only seen over TLS)");
        }
        if (tlsOn && tls == null) {
            throw new ControlException(Errno.EINVAL, where + ": tls 1 needs the server's credentials in " + TLS + "/" + CERTIFICATES
                                                     + " or " + TLS + "/" + PSK_FILE);
        }
    }

    /**
     * The allow list after writing {@code v}: each line adds an entry (once), "-ENTRY" removes
     * one, an empty write empties the list. Every line is parsed before anything changes.
     */
    private static List<AllowedClient> allowedClients(List<AllowedClient> current, String v) throws ControlException {
        List<AllowedClient> next = new ArrayList<>(current);
        if (v.isBlank()) {
            next.clear();
            return next;
        }
        for (String line : v.split("\n")) {
            String entry = line.strip();
            if (entry.isEmpty()) continue;
            if (entry.startsWith("-")) {
                next.remove(AllowedClient.parse(entry.substring(1)));
            } else {
                AllowedClient a = AllowedClient.parse(entry);
                if (!next.contains(a)) next.add(a);
            }
        }
        return next;
    }

    // ------------------------------------------------------------ enable / disable

    private void enable(Entry e) throws ControlException {
        if (e.backend == null) throw new ControlException(Errno.EINVAL, "enable=1: " + EXPORTS + "/" + e.name + "/backend is not set");
        Device device = engine.device(e.backend);
        if (device == null) throw new ControlException(Errno.ENODEV, "enable=1: backend " + e.backend + " no longer exists");
        try {
            checkTls(e, e.tls, e.allowAnyClient);
        } catch (ControlException x) {
            throw new ControlException(x.errno(), "enable=1: " + x.detail());
        }
        Lease lease;
        try {
            lease = engine.bind(device, e.group);
        } catch (ControlException x) {
            throw new ControlException(x.errno(), "enable=1: " + x.detail());
        }
        e.hold = new Hold(e, lease);
        e.live = new Export(e.name, e.description, device, lease.payer(), e.perHost, e.readOnly, e.tls, e.allowAnyClient, List.copyOf(e.allowedClients));
    }

    /**
     * An enabled export whose description or access changed is published anew; connections
     * whose client may no longer open it end as a disable ends them.
     */
    private void republish(Entry e) {
        Export live = e.live;
        if (live == null) return;
        Export next = new Export(e.name, e.description, live.device(), live.group(), live.perHost(), e.readOnly, e.tls, e.allowAnyClient,
                                 List.copyOf(e.allowedClients));
        e.live = next;
        for (Map.Entry<NbdConnection, ClientIdentity> c : e.connections.entrySet()) {
            if (!next.admits(c.getValue())) c.getKey().shutdown();
        }
    }

    private void disable(Entry e) {
        Hold h = e.hold;
        if (h == null) return;
        e.live = null;
        e.hold = null;
        for (NbdConnection c : e.connections.keySet()) c.shutdown();
        h.release();
    }

    // ------------------------------------------------------------ helpers

    private String deviceNames() {
        List<String> names = new ArrayList<>();
        for (Device d : engine.devices()) names.add(d.name());
        return names.isEmpty() ? "none" : String.join(", ", names);
    }
}
