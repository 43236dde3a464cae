package io.iotarget.frontend.nvmetcp;

import io.iotarget.backend.FileBackend;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.UUID;

/**
 * {@code subsystems/<nqn>/namespaces/<nsid>}: where a namespace's IO goes and who pays for it.
 * Enabling resolves {@code device_path} to an engine device, takes a user reference on it
 * ({@link Engine#acquire}) and binds the namespace's group; disabling undoes both, so neither the
 * device nor the group can be removed while the namespace serves IO. Configuration lock held
 * for every method.
 *
 * <p>{@code device_path} names an engine device ({@code default}, or any backend the control
 * plane created) or an absolute path of a file or block device; for a path the namespace opens
 * a {@link FileBackend} device of that name on enable (O_DIRECT unless {@code buffered_io}) and
 * removes it on disable. Either way the IO takes the same path through the engine, and the same
 * group pays.
 *
 * <p>Disabling has two halves, {@link #stop} and {@link #release}, with the wait for the
 * commands in flight between them, as in {@code nvmet_ns_disable}; the caller decides whether the
 * configuration lock is held through the wait.
 */
final class Namespace {
    final Subsystem subsystem;
    final int nsid;
    String devicePath;
    UUID uuid = UUID.randomUUID();
    byte[] nguid = new byte[16];
    boolean readOnly;
    boolean bufferedIo;
    /** The bound group; null = unbound, charged to the root group (nvmet with the cgroup_id patch, cgroup_id 0). */
    Group group;

    /** Non-null while enabled. */
    ActiveNamespace active;
    /**
     * Non-null while a disable waits for the commands in flight, with the configuration lock
     * released: the namespace is then neither enabled nor open to change.
     */
    private ActiveNamespace draining;
    /** The device this namespace created for a file path, removed again on disable; null otherwise. */
    private Device ownedDevice;

    Namespace(Subsystem subsystem, int nsid) {
        this.subsystem = subsystem;
        this.nsid = nsid;
    }

    boolean enabled() {
        return active != null;
    }

    boolean draining() {
        return draining != null;
    }

    void enable(Engine engine) throws ControlException {
        if (active != null) return;
        if (devicePath == null) throw new ControlException(Errno.EINVAL, "enable=1: device_path is not set (expected: an engine device name or an absolute path)");
        if (group != null && !group.online()) {
            throw new ControlException(Errno.ENOENT, "enable=1: the bound group " + group.path() + " was removed (write cgroup or cgroup_id again)");
        }
        Device device;
        boolean created = false;
        if (devicePath.startsWith("/")) {
            device = engine.device(devicePath);
            if (device == null) {
                device = engine.addDevice(devicePath, openFile(Path.of(devicePath)), null, Engine.DEFAULT_QUEUE_DEPTH);
                created = true;
            }
        } else {
            device = engine.device(devicePath);
            if (device == null) {
                throw new ControlException(Errno.ENOENT, "enable=1: device_path=" + devicePath
                        + " is no engine device (expected: a device name such as default, or an absolute path)");
            }
        }
        try {
            engine.acquire(device);
        } catch (ControlException e) {
            if (created) removeQuietly(engine, device);
            throw e;
        }
        if (group != null) {
            try {
                engine.controller().bind(group);
            } catch (ControlException e) {
                engine.release(device);
                if (created) removeQuietly(engine, device);
                throw e;
            }
        }
        ownedDevice = created ? device : null;
        int lbaShift = Integer.numberOfTrailingZeros(device.logicalBlockSize());
        var payer = group != null ? group : engine.controller().root();
        active = new ActiveNamespace(nsid, device, payer,
                readOnly || device.readOnly(), lbaShift, device.sizeBytes() >>> lbaShift, uuidBytes(uuid), nguid.clone(),
                new InFlightCommands(), engine.buffers().account(payer));
    }

    /**
     * Disabling, first half: new commands fail with Invalid Namespace from now on. Returns the
     * commands still in flight (parked by io.max included), which the caller awaits before
     * {@link #release}, or null when the namespace was neither enabled nor already draining.
     */
    InFlightCommands stop() {
        if (active != null) {
            draining = active;
            active = null;
            draining.inFlight().close();
        }
        return draining == null ? null : draining.inFlight();
    }

    /** Disabling, second half, once the commands in flight completed: lets go of the group and device. */
    void release(Engine engine) {
        if (draining == null) return;
        Device device = draining.device();
        draining = null;
        if (group != null) engine.controller().unbind(group);
        engine.release(device);
        if (ownedDevice != null && engine.users(ownedDevice) == 0) removeQuietly(engine, ownedDevice);
        ownedDevice = null;
    }

    /**
     * Opens a file or block device the way nvmet does: O_DIRECT unless buffered_io, the LBA size
     * the file system's block size (at most 4096) for files, the device's logical block size for
     * block devices.
     */
    private FileBackend openFile(Path path) throws ControlException {
        try {
            int lbaSize = Files.isRegularFile(path) ? fileLbaSize(path) : blockDeviceLbaSize(path);
            return FileBackend.open(path, lbaSize, readOnly, !bufferedIo);
        } catch (NoSuchFileException e) {
            throw new ControlException(Errno.ENOENT, "enable=1: device_path=" + devicePath + " does not exist");
        } catch (AccessDeniedException e) {
            throw new ControlException(Errno.EACCES, "enable=1: device_path=" + devicePath + " cannot be opened " + (readOnly ? "read-only" : "read-write"));
        } catch (IOException e) {
            throw new ControlException(Errno.EINVAL, "enable=1: device_path=" + devicePath + " cannot be opened"
                    + (bufferedIo ? "" : " with O_DIRECT (write buffered_io=1 for file systems without it)") + ": " + e.getMessage());
        }
    }

    private static int fileLbaSize(Path path) throws IOException {
        long block = Files.getFileStore(path).getBlockSize();
        return block >= 4096 ? 4096 : 512;
    }

    /** The device's queue/logical_block_size from sysfs, found through its device number. */
    private static int blockDeviceLbaSize(Path path) throws IOException {
        long rdev = (Long) Files.getAttribute(path, "unix:rdev");
        long major = ((rdev >>> 8) & 0xfff) | ((rdev >>> 32) & ~0xfffL);
        long minor = (rdev & 0xff) | ((rdev >>> 12) & ~0xffL);
        Path sysfs = Path.of("/sys/dev/block/" + major + ":" + minor + "/queue/logical_block_size");
        try {
            return Integer.parseInt(Files.readString(sysfs).strip()) >= 4096 ? 4096 : 512;
        } catch (IOException | NumberFormatException e) {
            return 512;
        }
    }

    private static void removeQuietly(Engine engine, Device device) {
        try {
            engine.removeDevice(device);
        } catch (ControlException | IOException e) {
            // The device stays registered; nothing uses it and a later enable reuses it.
        }
    }

    static byte[] uuidBytes(UUID uuid) {
        byte[] b = new byte[16];
        java.nio.ByteBuffer.wrap(b).putLong(uuid.getMostSignificantBits()).putLong(uuid.getLeastSignificantBits());
        return b;
    }
}
