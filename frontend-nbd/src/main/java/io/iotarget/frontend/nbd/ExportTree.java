package io.iotarget.frontend.nbd;

import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.file.KernelParse;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The NBD front end's configuration, laid out like nvmet's configfs namespaces:
 *
 * <pre>
 *  exports/
 *    &lt;name&gt;/            mkdir creates a disabled export; rmdir disables and removes it
 *      backend          engine device name (e.g. "default")           changeable only while disabled
 *      cgroup           group path, "/" = root (default)               changeable only while disabled
 *      cgroup_id        the same binding by group id (nvmet's name)    changeable only while disabled
 *      readonly         0 | 1                                          changeable only while disabled
 *      description      free text for NBD_OPT_LIST / NBD_INFO_DESCRIPTION
 *      max_connections  clients transmitting on it at once; 0 = no limit (default)
 *      enable           0 | 1: offered to clients only when 1
 * </pre>
 *
 * Enabling acquires the device ({@code engine.acquire}) and binds the group
 * ({@code controller.bind}), so neither can be removed under a live export. Disabling an
 * export shuts its connections down: each stops reading, answers what it already accepted,
 * and closes (a client sees a disconnect, as at server shutdown). The device and the group
 * stay held until the last of those connections has finished — as nvmet's namespace disable
 * waits for IO in flight — so a backend is never closed, nor a group removed, under a request
 * that is still running or parked; until then they answer EBUSY. A client
 * asking for the empty export name gets the export named {@value #DEFAULT_EXPORT}.
 *
 * <p>Attribute values read back with a trailing newline, as configfs prints them; writes may
 * end with one. Any thread: changes are serialised on this object, lookups by connections are
 * lock-free.
 */
final class ExportTree implements ConfigTree, Negotiation.Exports {
    /** What the empty export name means (nbd-server's default export). */
    static final String DEFAULT_EXPORT = "default";
    static final String EXPORTS = "exports";
    private static final List<String> ATTRIBUTES = List.of("backend", "cgroup", "cgroup_id", "description", "enable", "max_connections", "readonly");
    private static final int MAX_NAME_BYTES = 255;

    private final Engine engine;
    private final Map<String, Entry> entries = new ConcurrentSkipListMap<>();
    private volatile boolean shuttingDown;

    ExportTree(Engine engine) {
        this.engine = engine;
    }

    /** One export directory. Fields are guarded by the tree; {@link #live} is read lock-free. */
    static final class Entry {
        final String name;
        String backend;
        Group group;
        boolean readOnly;
        String description = "";
        /** 0 = no limit; read lock-free by negotiating connections. */
        volatile int maxConnections;
        /** The enabled export, or null while disabled. */
        volatile Export live;
        /** What the enabled export holds; null while disabled. */
        volatile Hold hold;
        final Set<NbdConnection> connections = ConcurrentHashMap.newKeySet();

        Entry(String name, Group root) {
            this.name = name;
            this.group = root;
        }
    }

    /**
     * The device and group one enabling of an export holds, for the tree while the export is
     * enabled and for each connection that attached to it; released when the last holder lets
     * go. Any thread.
     */
    final class Hold {
        private final Entry entry;
        private final Device device;
        private final Group group;
        private final AtomicInteger holders = new AtomicInteger(1);

        private Hold(Entry entry, Device device, Group group) {
            this.entry = entry;
            this.device = device;
            this.group = group;
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
            if (holders.decrementAndGet() != 0) return;
            engine.controller().unbind(group);
            engine.release(device);
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

    /**
     * Registers a connection entering transmission on {@code export}, holding its device and
     * group until {@link Hold#detach}; null when the export was disabled meanwhile (the
     * connection must then close). Pairs with {@link #disable}: either the disabler sees the
     * connection or the connection sees the export gone.
     */
    Hold attach(Export export, NbdConnection connection) {
        Entry e = entries.get(export.name());
        if (e == null) return null;
        Hold h = e.hold;
        Export live = e.live;
        // A new description republishes the export; a disable (or a re-enable on another binding) does not match.
        if (h == null || live == null || live.device() != export.device() || live.group() != export.group()
            || live.readOnly() != export.readOnly() || !h.retain()) {
            return null;
        }
        if (refusal(export) != null) {                  // another client took the last place meanwhile
            h.release();
            return null;
        }
        e.connections.add(connection);
        if (e.hold != h) {
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

    @Override
    public Kind kind(String path) throws ControlException {
        String[] p = split(path);
        if (p.length <= 1) return Kind.DIRECTORY;
        entry(p[1], path);
        if (p.length == 2) return Kind.DIRECTORY;
        if (p.length == 3 && ATTRIBUTES.contains(p[2])) return Kind.FILE;
        throw noEntry(path);
    }

    @Override
    public List<String> list(String path) throws ControlException {
        String[] p = split(path);
        if (kind(path) != Kind.DIRECTORY) throw new ControlException(Errno.ENOTDIR, path + " is not a directory");
        if (p.length == 0) return List.of(EXPORTS + "/");
        if (p.length == 1) {
            List<String> names = new ArrayList<>();
            for (String name : entries.keySet()) names.add(name + "/");
            return names;
        }
        return ATTRIBUTES;
    }

    @Override
    public synchronized String read(String path) throws ControlException {
        Entry e = attributeEntry(path);
        return switch (split(path)[2]) {
            case "backend" -> (e.backend == null ? "" : e.backend) + "\n";
            case "cgroup" -> e.group.path() + "\n";
            case "cgroup_id" -> e.group.id() + "\n";
            case "readonly" -> (e.readOnly ? "1" : "0") + "\n";
            case "description" -> e.description + "\n";
            case "max_connections" -> e.maxConnections + "\n";
            case "enable" -> (e.live != null ? "1" : "0") + "\n";
            default -> throw new AssertionError(path);
        };
    }

    @Override
    public synchronized void write(String path, String value) throws ControlException {
        Entry e = attributeEntry(path);
        String attribute = split(path)[2];
        String v = stripNewline(value);
        if (attribute.equals("enable")) {
            boolean on = bool(attribute, v);
            if (on && e.live == null) enable(e);
            if (!on && e.live != null) disable(e);
            return;
        }
        if (attribute.equals("description")) {
            if (v.getBytes(StandardCharsets.UTF_8).length > NbdWire.MAX_STRING || v.indexOf('\0') >= 0) {
                throw new ControlException(Errno.EINVAL, "description of " + v.length() + " characters (expected: at most 4096 bytes of UTF-8 without NUL)");
            }
            e.description = v;
            Export live = e.live;
            if (live != null) e.live = new Export(live.name(), v, live.device(), live.group(), live.readOnly());
            return;
        }
        if (attribute.equals("max_connections")) {
            // Applies to clients that connect from now on; those transmitting stay.
            long max = KernelParse.parseU64("max_connections", v.trim());
            if (max > Integer.MAX_VALUE) throw KernelParse.invalid("max_connections", v, "a count of connections up to 2^31 - 1, 0 for no limit");
            e.maxConnections = (int) max;
            return;
        }
        if (e.live != null) {
            throw new ControlException(Errno.EBUSY, EXPORTS + "/" + e.name + "/" + attribute + ": export is enabled (write 0 to enable first)");
        }
        switch (attribute) {
            case "backend" -> {
                if (engine.device(v) == null) {
                    throw new ControlException(Errno.ENODEV, "backend=" + v + " (expected: an engine device name; have " + deviceNames() + ")");
                }
                e.backend = v;
            }
            case "cgroup" -> {
                try {
                    e.group = engine.controller().group(v);
                } catch (ControlException x) {
                    throw new ControlException(x.errno(), "cgroup=" + v + " (expected: the path of an existing group, / for the root): " + x.detail());
                }
            }
            case "cgroup_id" -> {
                Group g = null;
                try {
                    long id = Long.parseLong(v);
                    if (id > 0) g = engine.controller().groupById(id);
                } catch (NumberFormatException x) {
                    throw new ControlException(Errno.EINVAL, "cgroup_id=" + v + " (expected: a decimal group id, 1 = root)");
                }
                if (g == null) throw new ControlException(Errno.ENOENT, "cgroup_id=" + v + " (expected: the id of an existing group)");
                e.group = g;
            }
            case "readonly" -> e.readOnly = bool(attribute, v);
            default -> throw new AssertionError(attribute);
        }
    }

    @Override
    public synchronized void mkdir(String path) throws ControlException {
        String[] p = components(path);
        if (p.length != 2 || !p[0].equals(EXPORTS)) {
            throw new ControlException(Errno.EPERM, "mkdir " + path + " (expected: exports/<name>)");
        }
        String name = p[1];
        if (name.getBytes(StandardCharsets.UTF_8).length > MAX_NAME_BYTES) {
            throw new ControlException(Errno.ENAMETOOLONG, "export name longer than " + MAX_NAME_BYTES + " bytes");
        }
        if (name.equals(".") || name.equals("..") || name.indexOf('\0') >= 0) {
            throw new ControlException(Errno.EINVAL, "export name '" + name + "' (expected: a non-empty name without '/' or NUL)");
        }
        if (entries.containsKey(name)) throw new ControlException(Errno.EEXIST, "export " + name + " exists");
        entries.put(name, new Entry(name, engine.controller().root()));
    }

    @Override
    public synchronized void rmdir(String path) throws ControlException {
        String[] p = components(path);
        if (p.length != 2 || !p[0].equals(EXPORTS)) {
            throw new ControlException(Errno.EPERM, "rmdir " + path + " (expected: exports/<name>)");
        }
        Entry e = entry(p[1], path);
        disable(e);
        entries.remove(e.name);
    }

    // ------------------------------------------------------------ enable / disable

    private void enable(Entry e) throws ControlException {
        if (e.backend == null) throw new ControlException(Errno.EINVAL, "enable=1: " + EXPORTS + "/" + e.name + "/backend is not set");
        Device device = engine.device(e.backend);
        if (device == null) throw new ControlException(Errno.ENODEV, "enable=1: backend " + e.backend + " no longer exists");
        engine.acquire(device);
        try {
            engine.controller().bind(e.group);
        } catch (ControlException x) {
            engine.release(device);
            throw new ControlException(x.errno(), "enable=1: cgroup " + e.group.path() + ": " + x.detail());
        }
        e.hold = new Hold(e, device, e.group);
        e.live = new Export(e.name, e.description, device, e.group, e.readOnly);
    }

    private void disable(Entry e) {
        Hold h = e.hold;
        if (h == null) return;
        e.live = null;
        e.hold = null;
        for (NbdConnection c : e.connections) c.shutdown();
        h.release();
    }

    // ------------------------------------------------------------ paths

    private Entry attributeEntry(String path) throws ControlException {
        String[] p = split(path);
        if (p.length < 3) {
            if (p.length == 2) entry(p[1], path);
            throw new ControlException(Errno.EISDIR, path + " is a directory");
        }
        Entry e = entry(p[1], path);
        if (p.length > 3 || !ATTRIBUTES.contains(p[2])) throw noEntry(path);
        return e;
    }

    private Entry entry(String name, String path) throws ControlException {
        Entry e = entries.get(name);
        if (e == null) throw noEntry(path);
        return e;
    }

    private static ControlException noEntry(String path) {
        return new ControlException(Errno.ENOENT, "no " + path + " in the NBD tree (expected: exports/<name>/{" + String.join(",", ATTRIBUTES) + "})");
    }

    /** Path components of a path that exists in shape (under exports/); ENOENT otherwise. */
    private static String[] split(String path) throws ControlException {
        String[] parts = components(path);
        if (parts.length > 0 && !parts[0].equals(EXPORTS)) throw noEntry(path);
        return parts;
    }

    private static String[] components(String path) {
        List<String> parts = new ArrayList<>();
        for (String s : path.split("/")) {
            if (!s.isEmpty()) parts.add(s);
        }
        return parts.toArray(String[]::new);
    }

    private String deviceNames() {
        List<String> names = new ArrayList<>();
        for (Device d : engine.devices()) names.add(d.name());
        return names.isEmpty() ? "none" : String.join(", ", names);
    }

    private static String stripNewline(String v) {
        return v.endsWith("\n") ? v.substring(0, v.length() - 1) : v;
    }

    private static boolean bool(String attribute, String v) throws ControlException {
        return switch (v.trim()) {
            case "1" -> true;
            case "0" -> false;
            default -> throw new ControlException(Errno.EINVAL, attribute + "=" + v + " (expected: 0 or 1)");
        };
    }
}
