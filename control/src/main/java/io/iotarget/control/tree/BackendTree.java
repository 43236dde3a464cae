package io.iotarget.control.tree;

import io.iotarget.backend.Backend;
import io.iotarget.backend.factory.BackendFactory;
import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.Attribute;
import io.iotarget.model.tree.Attributes;
import io.iotarget.model.tree.KernelParse;
import io.iotarget.model.tree.TreePath;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The backends (the engine's devices), configured like an nvmet namespace: mkdir a directory,
 * write its attributes, then {@code enable}. While enabled the attributes are fixed (EBUSY);
 * disabling removes the device, which fails (EBUSY) while an export or namespace uses it. Online
 * resize is the exception: a memory backend's {@code size} may be written while enabled, and
 * {@code revalidate_size} applies it (or a file's new size).
 *
 * <pre>
 *  backends/NAME/type         null | memory | file | rbd
 *  backends/NAME/size         bytes, or with K/M/G/T (null and memory; file and rbd with create=1); a multiple of
 *                             block_size; a memory backend at most MemoryBackend.sizeLimit()
 *  backends/NAME/path         file or block device (file)
 *  backends/NAME/create       1: create the file or image with `size` bytes if it does not exist (file, rbd)
 *  backends/NAME/pool, image, namespace, snapshot (read-only), conf (ceph.conf), id (client.ID),
 *                keyring      the RBD image and how to reach it (rbd; docs/rbd.md)
 *  backends/NAME/direct       1: O_DIRECT (file)
 *  backends/NAME/readonly     0 | 1
 *  backends/NAME/block_size   512 | 4096
 *  backends/NAME/queue_depth  requests on the backend at once (default 256; null_blk's hw_queue_depth)
 *  backends/NAME/completion_nsec  null: every request takes this long (0: none; null_blk's completion_nsec)
 *  backends/NAME/mbps         null: bandwidth in MiB/s (0: unlimited; null_blk's mbps)
 *  backends/NAME/device       MAJ:MIN; empty = the next free 259:N (shows the number once enabled)
 *  backends/NAME/enable       0 | 1
 *  backends/NAME/revalidate_size  1: take the size the backend has now (nvmet's name) — a file
 *                             grown on disk, a block device resized, a memory backend's size
 *                             as written while enabled; NVMe hosts are told, NBD clients see it
 *                             on their next connection; shrinking is refused while in use
 * </pre>
 * Flags read as kstrtobool ({@code 1}, {@code y}, {@code on}, ...) and numbers as kstrtou64, the
 * same as in the NBD and nvmet trees ({@code io.iotarget.model.tree}); {@code size} also takes
 * K/M/G/T. Any thread; operations are serialized.
 */
public final class BackendTree implements ConfigTree {
    private static final String ENABLE = "enable";
    /** A minute per request: longer would only stall the clients' timeouts. */
    private static final long MAX_COMPLETION_NS = 60_000_000_000L;
    /** null_blk's mbps is an unsigned int. */
    private static final long MAX_MBPS = 0xffff_ffffL;
    private static final String REVALIDATE_SIZE = "revalidate_size";

    private final Engine engine;
    private final Map<String, Spec> backends = new TreeMap<>();
    private final Attributes<Spec> attributes;
    private volatile RbdOpened rbdOpened = backend -> { };

    /** Hears each RBD image this tree opens, before it serves (the cluster's storage fence publishes its client: docs/rbd.md). */
    @FunctionalInterface
    public interface RbdOpened {
        /** @throws IOException when the image must not serve: it is closed and the enable fails */
        void opened(RbdBackend backend) throws IOException;
    }

    /** Sets what hears each RBD image opened; before the config is applied. */
    public BackendTree onRbdOpened(RbdOpened hook) {
        this.rbdOpened = hook;
        return this;
    }

    public BackendTree(Engine engine) {
        this.engine = engine;
        this.attributes = Attributes.of(List.of(
                Attribute.text("type", s -> s.type, BackendTree::writeType),
                Attribute.text("size", s -> s.device != null ? Long.toString(s.device.sizeBytes()) : s.size < 0 ? "" : Long.toString(s.size),
                               BackendTree::writeSize),
                Attribute.text("path", s -> s.path, BackendTree::writePath),
                Attribute.text("pool", s -> s.pool, (s, v) -> s.pool = rbdName("pool", v)),
                Attribute.text("image", s -> s.image, (s, v) -> s.image = rbdName("image", v)),
                Attribute.text("namespace", s -> s.namespace, (s, v) -> s.namespace = rbdName("namespace", v)),
                Attribute.text("snapshot", s -> s.snapshot, (s, v) -> s.snapshot = rbdName("snapshot", v)),
                Attribute.text("conf", s -> s.conf, (s, v) -> s.conf = absolutePath("conf", v)),
                Attribute.text("id", s -> s.id, (s, v) -> s.id = rbdName("id", v)),
                Attribute.text("keyring", s -> s.keyring, (s, v) -> s.keyring = absolutePath("keyring", v)),
                Attribute.flag("create", s -> s.create, (s, on) -> s.create = on),
                Attribute.flag("direct", s -> s.direct, (s, on) -> s.direct = on),
                Attribute.flag("readonly", s -> s.readOnly, (s, on) -> s.readOnly = on),
                Attribute.number("block_size", s -> s.blockSize, BackendTree::writeBlockSize),
                Attribute.number("queue_depth", s -> s.queueDepth, BackendTree::writeQueueDepth),
                Attribute.number("completion_nsec", s -> s.completionNs, BackendTree::writeCompletionNs),
                Attribute.number("mbps", s -> s.mbps, BackendTree::writeMbps),
                Attribute.text("device", s -> s.device != null ? s.device.number().toString() : s.number == null ? "" : s.number.toString(),
                               (s, v) -> s.number = v.isBlank() ? null : DeviceNumber.parse(v.strip())),
                Attribute.flag(ENABLE, s -> s.device != null, this::writeEnable),
                Attribute.flag(REVALIDATE_SIZE, s -> false, this::writeRevalidateSize).replayedAs(Attribute::nothing)));
    }

    /** One backend's attributes, and its device once enabled. */
    private static final class Spec {
        final String name;
        String type = "";
        long size = -1;
        String path = "";
        String pool = "";
        String image = "";
        String namespace = "";
        String snapshot = "";
        String conf = "";
        String id = "";
        String keyring = "";
        boolean create;
        boolean direct;
        boolean readOnly;
        int blockSize = 512;
        int queueDepth = Engine.DEFAULT_QUEUE_DEPTH;
        long completionNs;
        long mbps;
        DeviceNumber number;
        Device device;

        Spec(String name) {
            this.name = name;
        }
    }

    @Override
    public synchronized Kind kind(String path) throws ControlException {
        List<String> p = TreePath.split(path);
        if (p.isEmpty()) return Kind.DIRECTORY;
        spec(p.get(0));
        if (p.size() == 1) return Kind.DIRECTORY;
        if (p.size() == 2 && attributes.find(p.get(1)) != null) return Kind.FILE;
        throw new ControlException(Errno.ENOENT, "no " + path);
    }

    @Override
    public synchronized List<String> list(String path) throws ControlException {
        List<String> p = TreePath.split(path);
        if (p.isEmpty()) {
            List<String> names = new ArrayList<>();
            for (String n : backends.keySet()) names.add(n + "/");
            return names;
        }
        if (p.size() == 1) {
            spec(p.get(0));
            return attributes.names();
        }
        throw new ControlException(Errno.ENOTDIR, path + " is not a directory");
    }

    @Override
    public synchronized String read(String path) throws ControlException {
        List<String> p = attributePath(path);
        return attributes.find(p.get(1)).read(spec(p.get(0)));
    }

    @Override
    public synchronized List<String> replay(String path) throws ControlException {
        List<String> p = attributePath(path);
        return attributes.find(p.get(1)).replay(spec(p.get(0)));
    }

    /** Every attribute but {@code enable}, {@code revalidate_size} and a memory backend's {@code size} is fixed while the backend is enabled. */
    @Override
    public synchronized void write(String path, String value) throws ControlException {
        List<String> p = attributePath(path);
        Spec s = spec(p.get(0));
        String name = p.get(1);
        boolean online = name.equals(ENABLE) || name.equals(REVALIDATE_SIZE) || (name.equals("size") && s.type.equals("memory"));
        if (!online && s.device != null) {
            throw new ControlException(Errno.EBUSY, "backend " + s.name + " is enabled; write enable=0 first");
        }
        attributes.find(name).write(s, value);
    }

    /** nvmet_ns_revalidate_size_store: EINVAL unless enabled; any true value revalidates. */
    private void writeRevalidateSize(Spec s, boolean on) throws ControlException {
        if (!on) throw KernelParse.invalid(REVALIDATE_SIZE, "0", "1");
        if (s.device == null) throw new ControlException(Errno.EINVAL, "backend " + s.name + " is not enabled: enable it before revalidate_size");
        try {
            engine.revalidateSize(s.device, s.size);
        } catch (IOException e) {
            throw new ControlException(Errno.EIO, "backend " + s.name + ": cannot read its size: " + e.getMessage());
        }
    }

    private void writeEnable(Spec s, boolean on) throws ControlException {
        if (on && s.device == null) enable(s);
        else if (!on && s.device != null) disable(s);
    }

    private static void writeType(Spec s, String value) throws ControlException {
        String v = value.strip();
        if (!List.of("null", "memory", "file", "rbd").contains(v)) throw KernelParse.invalid("type", v, "null, memory, file or rbd");
        checkGeometry("type", v, v, s.size, s.blockSize);
        s.type = v;
    }

    private static void writeSize(Spec s, String value) throws ControlException {
        String v = value.strip();
        long size = Sizes.parse(v);
        if (size <= 0) throw KernelParse.invalid("size", v, Sizes.EXPECTED);
        checkGeometry("size", v, s.type, size, s.blockSize);
        s.size = size;
    }

    private static void writePath(Spec s, String value) throws ControlException {
        String v = value.strip();
        if (!v.startsWith("/")) throw KernelParse.invalid("path", v, "an absolute path");
        s.path = v;
    }

    /** A pool, image, namespace, snapshot or client id: empty, or printable without spaces, '/' or '@' (they separate the parts of pool/image@snap). */
    private static String rbdName(String attribute, String value) throws ControlException {
        String v = value.strip();
        if (!v.matches("[^\\s/@\\p{Cntrl}]{0,255}")) throw KernelParse.invalid(attribute, v, "a name without spaces, '/' or '@'");
        return v;
    }

    private static String absolutePath(String attribute, String value) throws ControlException {
        String v = value.strip();
        if (!v.isEmpty() && !v.startsWith("/")) throw KernelParse.invalid(attribute, v, "an absolute path");
        return v;
    }

    private static void writeBlockSize(Spec s, long blockSize) throws ControlException {
        if (blockSize != 512 && blockSize != 4096) throw KernelParse.invalid("block_size", Long.toUnsignedString(blockSize), "512 or 4096");
        checkGeometry("block_size", Long.toString(blockSize), s.type, s.size, (int) blockSize);
        s.blockSize = (int) blockSize;
    }

    private static void writeQueueDepth(Spec s, long depth) throws ControlException {
        if (depth < 1 || depth > 65536) throw KernelParse.invalid("queue_depth", Long.toUnsignedString(depth), "1..65536");
        s.queueDepth = (int) depth;
    }

    private static void writeCompletionNs(Spec s, long ns) throws ControlException {
        if (ns > MAX_COMPLETION_NS) throw KernelParse.invalid("completion_nsec", Long.toUnsignedString(ns), "0.." + MAX_COMPLETION_NS);
        s.completionNs = ns;
    }

    private static void writeMbps(Spec s, long mbps) throws ControlException {
        if (mbps > MAX_MBPS) throw KernelParse.invalid("mbps", Long.toUnsignedString(mbps), "0.." + MAX_MBPS);
        s.mbps = mbps;
    }

    /**
     * Refuses a type, size or block_size that cannot make a backend, naming the attribute being
     * written: a size must be a multiple of the block size, and a memory backend may not be
     * larger than it could ever hold ({@link MemoryBackend#sizeLimit()}).
     */
    private static void checkGeometry(String attribute, String value, String type, long size, int blockSize) throws ControlException {
        if (size < 0) return;
        if (size % blockSize != 0) {
            throw KernelParse.invalid(attribute, value, attribute.equals("block_size") ? "a block size that divides size " + size
                                                                          : "a multiple of block_size " + blockSize);
        }
        if (!type.equals("memory")) return;
        MemoryBackend.SizeLimit limit = MemoryBackend.sizeLimit();
        if (size > limit.bytes()) {
            throw KernelParse.invalid(attribute, value, (attribute.equals("size") ? "" : "a type that can hold size " + size + ": ")
                                            + "at most " + Sizes.describe(limit.bytes()) + " for a memory backend, " + limit.reason()
                                            + "; a file backend may be larger");
        }
    }

    /** Enables the backend; a file that {@code create=1} made is removed again if enabling fails. */
    private void enable(Spec s) throws ControlException {
        Path created = s.type.equals("file") && s.create && !s.path.isEmpty() && !Files.exists(Path.of(s.path)) ? Path.of(s.path) : null;
        try {
            enableBackend(s);
        } catch (ControlException | RuntimeException e) {
            if (created != null) {
                try {
                    Files.deleteIfExists(created);
                } catch (IOException ignored) {
                    // the enable error is the one to report
                }
            }
            throw e;
        }
    }

    private void enableBackend(Spec s) throws ControlException {
        String name = s.name;
        if (!s.type.equals("null") && (s.completionNs != 0 || s.mbps != 0)) {
            throw new ControlException(Errno.EINVAL, "backend " + name + ": completion_nsec and mbps are for type null (write 0 to them)");
        }
        Backend backend = switch (s.type) {
            case "null", "memory" -> {
                if (s.size <= 0) throw new ControlException(Errno.EINVAL, "backend " + name + ": size is required for type " + s.type);
                yield open(name, s, s.type.equals("null") ? BackendFactory.Spec.nullDevice(s.size, s.blockSize, s.readOnly, s.completionNs, s.mbps)
                                                          : BackendFactory.Spec.memory(s.size, s.blockSize, s.readOnly));
            }
            case "file" -> openFile(name, s);
            case "rbd" -> openRbd(name, s);
            case "" -> throw new ControlException(Errno.EINVAL, "backend " + name + ": write type (null, memory, file or rbd) first");
            default -> throw new IllegalStateException(s.type);
        };
        if (backend instanceof RbdBackend rbd) {
            try {
                rbdOpened.opened(rbd);
            } catch (IOException e) {
                closeQuietly(backend);
                throw new ControlException(Errno.EIO, "backend " + name + ": its RADOS client could not be published in the cluster's store, "
                                                      + "so no node could fence it: " + e.getMessage());
            }
        }
        try {
            s.device = engine.addDevice(name, backend, s.number, s.queueDepth);
        } catch (ControlException e) {
            closeQuietly(backend);
            throw e;
        }
    }

    private static Backend openFile(String name, Spec s) throws ControlException {
        if (s.path.isEmpty()) throw new ControlException(Errno.EINVAL, "backend " + name + ": path is required for type file");
        Path path = Path.of(s.path);
        if (s.create && !Files.exists(path)) {
            if (s.size <= 0) throw new ControlException(Errno.EINVAL, "backend " + name + ": create=1 needs a size");
            try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ch.truncate(0);
                ch.write(java.nio.ByteBuffer.allocate(1), s.size - 1);
            } catch (IOException e) {
                throw new ControlException(Errno.EIO, "backend " + name + ": cannot open " + s.path + ": " + e.getMessage());
            }
        }
        return open(name, s, BackendFactory.Spec.file(path, s.blockSize, s.readOnly, s.direct));
    }

    private static Backend openRbd(String name, Spec s) throws ControlException {
        if (s.pool.isEmpty() || s.image.isEmpty()) throw new ControlException(Errno.EINVAL, "backend " + name + ": pool and image are required for type rbd");
        if (s.create && s.size <= 0) throw new ControlException(Errno.EINVAL, "backend " + name + ": create=1 needs a size");
        RbdBackend.Options options = new RbdBackend.Options(s.pool, s.image, s.namespace, s.snapshot, s.conf.isEmpty() ? null : Path.of(s.conf),
                                                            s.id, s.keyring.isEmpty() ? null : Path.of(s.keyring), s.create ? s.size : 0,
                                                            s.blockSize, s.readOnly);
        try {
            return BackendFactory.open(BackendFactory.Spec.rbd(options));
        } catch (IOException e) {
            boolean missing = RbdBackend.imageMissing(e);
            throw new ControlException(missing ? Errno.ENOENT : Errno.EIO, "backend " + name + ": cannot open rbd image " + options.spec() + ": "
                                                                          + e.getMessage() + (missing && !s.create ? " (write create=1 and a size to create it)" : ""));
        }
    }

    private static Backend open(String name, Spec s, BackendFactory.Spec spec) throws ControlException {
        try {
            return BackendFactory.open(spec);
        } catch (IllegalArgumentException e) {       // the machine shrank since size was written
            throw new ControlException(Errno.EINVAL, "backend " + name + ": " + e.getMessage());
        } catch (NoSuchFileException e) {
            throw new ControlException(Errno.ENOENT, "backend " + name + ": no file " + s.path + " (write create=1 and a size to create it)");
        } catch (IOException e) {
            throw new ControlException(Errno.EIO, "backend " + name + ": cannot open " + s.path + ": " + e.getMessage());
        }
    }

    private void disable(Spec s) throws ControlException {
        try {
            engine.removeDevice(s.device);
        } catch (IOException e) {
            throw new ControlException(Errno.EIO, "closing " + s.device.name() + ": " + e.getMessage());
        }
        s.device = null;
    }

    @Override
    public synchronized void mkdir(String path) throws ControlException {
        List<String> p = TreePath.split(path);
        if (p.size() != 1) throw new ControlException(Errno.EPERM, "backends are created as backends/NAME");
        String name = p.get(0);
        if (backends.containsKey(name)) throw new ControlException(Errno.EEXIST, "backend " + name + " exists");
        if (!name.matches("[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")) {
            throw new ControlException(Errno.EINVAL, "backend name '" + name + "' (expected: letters, digits, ._:- up to 64)");
        }
        backends.put(name, new Spec(name));
    }

    @Override
    public synchronized void rmdir(String path) throws ControlException {
        List<String> p = TreePath.split(path);
        if (p.size() != 1) throw new ControlException(Errno.EPERM, "only backends/NAME can be removed");
        Spec s = spec(p.get(0));
        if (s.device != null) throw new ControlException(Errno.EBUSY, "backend " + s.name + " is enabled; write enable=0 first");
        backends.remove(s.name);
    }

    private Spec spec(String name) throws ControlException {
        Spec s = backends.get(name);
        if (s == null) throw new ControlException(Errno.ENOENT, "no backend " + name);
        return s;
    }

    /** NAME/ATTRIBUTE, both existing. */
    private List<String> attributePath(String path) throws ControlException {
        List<String> p = TreePath.split(path);
        if (p.size() != 2) throw new ControlException(p.size() < 2 ? Errno.EISDIR : Errno.ENOENT, path + " is not an attribute");
        spec(p.get(0));
        if (attributes.find(p.get(1)) == null) {
            throw new ControlException(Errno.ENOENT, "no attribute " + p.get(1) + " (expected one of " + attributes.names() + ")");
        }
        return p;
    }

    private static void closeQuietly(Backend backend) {
        try {
            backend.close();
        } catch (IOException ignored) {
            // the backend was never used
        }
    }
}
