package io.iotarget.control.tree;

import io.iotarget.backend.Backend;
import io.iotarget.backend.BackendFactory;
import io.iotarget.backend.MemoryBackend;
import io.iotarget.control.config.Sizes;
import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.Errno;

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
 * disabling removes the device, which fails (EBUSY) while an export or namespace uses it.
 *
 * <pre>
 *  backends/NAME/type         null | memory | file
 *  backends/NAME/size         bytes, or with K/M/G/T (null and memory; file with create=1); a multiple of
 *                             block_size; a memory backend at most MemoryBackend.sizeLimit()
 *  backends/NAME/path         file or block device (file)
 *  backends/NAME/create       1: create the file with `size` bytes if it does not exist (file)
 *  backends/NAME/direct       1: O_DIRECT (file)
 *  backends/NAME/readonly     0 | 1
 *  backends/NAME/block_size   512 | 4096
 *  backends/NAME/queue_depth  requests on the backend at once (default 256)
 *  backends/NAME/device       MAJ:MIN; empty = the next free 259:N (shows the number once enabled)
 *  backends/NAME/enable       0 | 1
 * </pre>
 * Any thread; operations are serialized.
 */
public final class BackendTree implements ConfigTree {
    private static final List<String> ATTRIBUTES = List.of(
            "type", "size", "path", "create", "direct", "readonly", "block_size", "queue_depth", "device", "enable");

    private final Engine engine;
    private final Map<String, Spec> backends = new TreeMap<>();

    public BackendTree(Engine engine) {
        this.engine = engine;
    }

    /** One backend's attributes, and its device once enabled. */
    private static final class Spec {
        String type = "";
        long size = -1;
        String path = "";
        boolean create;
        boolean direct;
        boolean readOnly;
        int blockSize = 512;
        int queueDepth = Engine.DEFAULT_QUEUE_DEPTH;
        DeviceNumber number;
        Device device;
    }

    @Override
    public synchronized Kind kind(String path) throws ControlException {
        String[] p = split(path);
        if (p.length == 0) return Kind.DIRECTORY;
        spec(p[0]);
        if (p.length == 1) return Kind.DIRECTORY;
        if (p.length == 2 && ATTRIBUTES.contains(p[1])) return Kind.FILE;
        throw new ControlException(Errno.ENOENT, "no " + path);
    }

    @Override
    public synchronized List<String> list(String path) throws ControlException {
        String[] p = split(path);
        if (p.length == 0) {
            List<String> names = new ArrayList<>();
            for (String n : backends.keySet()) names.add(n + "/");
            return names;
        }
        if (p.length == 1) {
            spec(p[0]);
            return ATTRIBUTES;
        }
        throw new ControlException(Errno.ENOTDIR, path + " is not a directory");
    }

    @Override
    public synchronized String read(String path) throws ControlException {
        String[] p = attribute(path);
        Spec s = spec(p[0]);
        String value = switch (p[1]) {
            case "type" -> s.type;
            case "size" -> s.device != null ? Long.toString(s.device.sizeBytes()) : s.size < 0 ? "" : Long.toString(s.size);
            case "path" -> s.path;
            case "create" -> flag(s.create);
            case "direct" -> flag(s.direct);
            case "readonly" -> flag(s.readOnly);
            case "block_size" -> Integer.toString(s.blockSize);
            case "queue_depth" -> Integer.toString(s.queueDepth);
            case "device" -> s.device != null ? s.device.number().toString() : s.number == null ? "" : s.number.toString();
            case "enable" -> flag(s.device != null);
            default -> throw new ControlException(Errno.ENOENT, "no attribute " + p[1]);
        };
        return value + "\n";
    }

    @Override
    public synchronized void write(String path, String value) throws ControlException {
        String[] p = attribute(path);
        Spec s = spec(p[0]);
        String v = value.strip();
        if (p[1].equals("enable")) {
            boolean on = bool("enable", v);
            if (on && s.device == null) enable(p[0], s);
            else if (!on && s.device != null) disable(s);
            return;
        }
        if (s.device != null) throw new ControlException(Errno.EBUSY, "backend " + p[0] + " is enabled; write enable=0 first");
        switch (p[1]) {
            case "type" -> {
                if (!List.of("null", "memory", "file").contains(v)) throw invalid("type", v, "null, memory or file");
                checkGeometry("type", v, v, s.size, s.blockSize);
                s.type = v;
            }
            case "size" -> {
                long size = Sizes.parse(v);
                if (size <= 0) throw invalid("size", v, Sizes.EXPECTED);
                checkGeometry("size", v, s.type, size, s.blockSize);
                s.size = size;
            }
            case "path" -> {
                if (!v.startsWith("/")) throw invalid("path", v, "an absolute path");
                s.path = v;
            }
            case "create" -> s.create = bool("create", v);
            case "direct" -> s.direct = bool("direct", v);
            case "readonly" -> s.readOnly = bool("readonly", v);
            case "block_size" -> {
                if (!v.equals("512") && !v.equals("4096")) throw invalid("block_size", v, "512 or 4096");
                checkGeometry("block_size", v, s.type, s.size, Integer.parseInt(v));
                s.blockSize = Integer.parseInt(v);
            }
            case "queue_depth" -> {
                long d = Sizes.parse(v);
                if (d < 1 || d > 65536 || !v.chars().allMatch(Character::isDigit)) throw invalid("queue_depth", v, "1..65536");
                s.queueDepth = (int) d;
            }
            case "device" -> s.number = v.isEmpty() ? null : DeviceNumber.parse(v);
            default -> throw new ControlException(Errno.EACCES, p[1] + " is read-only");
        }
    }

    /**
     * Refuses a type, size or block_size that cannot make a backend, naming the attribute being
     * written: a size must be a multiple of the block size, and a memory backend may not be
     * larger than it could ever hold ({@link MemoryBackend#sizeLimit()}).
     */
    private static void checkGeometry(String attribute, String value, String type, long size, int blockSize) throws ControlException {
        if (size < 0) return;
        if (size % blockSize != 0) {
            throw invalid(attribute, value, attribute.equals("block_size") ? "a block size that divides size " + size
                                                                          : "a multiple of block_size " + blockSize);
        }
        if (!type.equals("memory")) return;
        MemoryBackend.SizeLimit limit = MemoryBackend.sizeLimit();
        if (size > limit.bytes()) {
            throw invalid(attribute, value, (attribute.equals("size") ? "" : "a type that can hold size " + size + ": ")
                                            + "at most " + Sizes.describe(limit.bytes()) + " for a memory backend, " + limit.reason()
                                            + "; a file backend may be larger");
        }
    }

    /** Enables the backend; a file that {@code create=1} made is removed again if enabling fails. */
    private void enable(String name, Spec s) throws ControlException {
        Path created = s.type.equals("file") && s.create && !s.path.isEmpty() && !Files.exists(Path.of(s.path)) ? Path.of(s.path) : null;
        try {
            enableBackend(name, s);
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

    private void enableBackend(String name, Spec s) throws ControlException {
        Backend backend = switch (s.type) {
            case "null", "memory" -> {
                if (s.size <= 0) throw new ControlException(Errno.EINVAL, "backend " + name + ": size is required for type " + s.type);
                BackendFactory.Type type = s.type.equals("null") ? BackendFactory.Type.NULL : BackendFactory.Type.MEMORY;
                yield open(name, s, new BackendFactory.Spec(type, s.size, null, s.blockSize, s.readOnly, false));
            }
            case "file" -> openFile(name, s);
            case "" -> throw new ControlException(Errno.EINVAL, "backend " + name + ": write type (null, memory or file) first");
            default -> throw new IllegalStateException(s.type);
        };
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
        String[] p = split(path);
        if (p.length != 1) throw new ControlException(Errno.EPERM, "backends are created as backends/NAME");
        if (backends.containsKey(p[0])) throw new ControlException(Errno.EEXIST, "backend " + p[0] + " exists");
        if (!p[0].matches("[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")) {
            throw new ControlException(Errno.EINVAL, "backend name '" + p[0] + "' (expected: letters, digits, ._:- up to 64)");
        }
        backends.put(p[0], new Spec());
    }

    @Override
    public synchronized void rmdir(String path) throws ControlException {
        String[] p = split(path);
        if (p.length != 1) throw new ControlException(Errno.EPERM, "only backends/NAME can be removed");
        Spec s = spec(p[0]);
        if (s.device != null) throw new ControlException(Errno.EBUSY, "backend " + p[0] + " is enabled; write enable=0 first");
        backends.remove(p[0]);
    }

    private Spec spec(String name) throws ControlException {
        Spec s = backends.get(name);
        if (s == null) throw new ControlException(Errno.ENOENT, "no backend " + name);
        return s;
    }

    private static String[] attribute(String path) throws ControlException {
        String[] p = split(path);
        if (p.length != 2) throw new ControlException(p.length < 2 ? Errno.EISDIR : Errno.ENOENT, path + " is not an attribute");
        if (!ATTRIBUTES.contains(p[1])) throw new ControlException(Errno.ENOENT, "no attribute " + p[1] + " (expected one of " + ATTRIBUTES + ")");
        return p;
    }

    private static String[] split(String path) {
        return java.util.Arrays.stream(path.split("/")).filter(s -> !s.isEmpty()).toArray(String[]::new);
    }

    private static String flag(boolean b) {
        return b ? "1" : "0";
    }

    private static boolean bool(String what, String v) throws ControlException {
        return switch (v) {
            case "1" -> true;
            case "0" -> false;
            default -> throw invalid(what, v, "0 or 1");
        };
    }

    private static ControlException invalid(String what, String value, String expected) {
        return new ControlException(Errno.EINVAL, what + "=" + value + " (expected: " + expected + ")");
    }

    private static void closeQuietly(Backend backend) {
        try {
            backend.close();
        } catch (IOException ignored) {
            // the backend was never used
        }
    }
}
