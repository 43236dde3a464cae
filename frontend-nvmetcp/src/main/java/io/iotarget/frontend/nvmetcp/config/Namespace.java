package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.backend.Backend;
import io.iotarget.backend.factory.BackendFactory;
import io.iotarget.engine.Engine;
import io.iotarget.engine.Lease;
import io.iotarget.frontend.nvmetcp.reservation.NamespaceReservation;
import io.iotarget.frontend.nvmetcp.reservation.Reservations;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;

import java.io.IOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.UUID;

/**
 * {@code subsystems/<nqn>/namespaces/<nsid>}: where a namespace's IO goes and who pays for it.
 * Enabling resolves {@code device_path} to an engine device and takes a {@link Lease} on it and
 * the namespace's group ({@link Engine#bind}); disabling closes the lease, so neither the
 * device nor the group can be removed while the namespace serves IO. Configuration lock held
 * for every method.
 *
 * <p>{@code device_path} names an engine device ({@code default}, or any backend the control
 * plane created) or an absolute path of a file or block device; for a path the namespace opens
 * a file backend ({@link BackendFactory}) device of that name on enable (O_DIRECT unless {@code buffered_io}) and
 * removes it on disable. Either way the IO takes the same path through the engine, and the same
 * group pays.
 *
 * <p>Disabling has two halves, {@link #stop} and {@link #release}, with the wait for the
 * commands in flight between them, as in {@code nvmet_ns_disable}; the caller decides whether the
 * configuration lock is held through the wait.
 */
public final class Namespace {
    final Subsystem subsystem;
    final int nsid;
    String devicePath;
    UUID uuid = UUID.randomUUID();
    /** device_uuid was written: the random default would differ on every node. */
    boolean uuidWritten;
    byte[] nguid = new byte[16];
    boolean readOnly;
    boolean bufferedIo;
    /** resv_enable: persistent reservations (fixed while enabled). */
    boolean reservations;
    /** ana_grpid: 1..128, the default group unless written. */
    int anaGroup = Port.DEFAULT_ANA_GROUP;
    /** The bound group; null = unbound, charged to the root group (nvmet with the cgroup_id patch, cgroup_id 0). */
    Group group;
    /** cgroup_per_host: each host pays in its own child of the group that would pay. */
    boolean perHost;

    /** Non-null while enabled. */
    ActiveNamespace active;
    /**
     * Non-null while a disable waits for the commands in flight, with the configuration lock
     * released: the namespace is then neither enabled nor open to change.
     */
    private ActiveNamespace draining;
    /** The hold on the device and group from enable until the disable's commands in flight are done; null otherwise. */
    private Lease lease;
    /** Its reservation while enabled with resv_enable (until the disable's commands in flight are done); null otherwise. */
    private NamespaceReservation reservation;
    /** The device this namespace created for a file path, removed again on disable; null otherwise. */
    private Device ownedDevice;

    Namespace(Subsystem subsystem, int nsid) {
        this.subsystem = subsystem;
        this.nsid = nsid;
    }

    boolean enabled() {
        return active != null;
    }

    /** Moves the namespace to ANA group {@code grpid}; an enabled one is republished by the caller. */
    void anaGroup(int grpid) {
        anaGroup = grpid;
        if (active != null) active = active.inAnaGroup(grpid);
    }

    /** Its device's size changed: NSZE (and the IO path's bounds) follow. Lock held. */
    void resized() {
        if (active != null) active = active.withBlocks(active.device().sizeBytes() >>> active.lbaShift());
    }

    boolean draining() {
        return draining != null;
    }

    void enable(Engine engine, Reservations service) throws ControlException {
        if (active != null) return;
        if (devicePath == null) throw new ControlException(Errno.EINVAL, "enable=1: device_path is not set (expected: an engine device name or an absolute path)");
        if (group != null && !group.online()) {
            throw new ControlException(Errno.ENOENT, "enable=1: the bound group " + group.path() + " was removed (write cgroup or cgroup_id again)");
        }
        Device device = engine.device(devicePath);
        boolean created = false;
        if (device == null && devicePath.startsWith("/")) {
            device = engine.addDevice(devicePath, openFile(Path.of(devicePath)), null, Engine.DEFAULT_QUEUE_DEPTH);
            created = true;
        } else if (device == null) {
            throw new ControlException(Errno.ENOENT, "enable=1: device_path=" + devicePath
                    + " is no engine device (expected: a device name such as default, or an absolute path)");
        }
        try {
            String unshareable = subsystem.shared ? unshareable(engine.backend(device)) : null;
            if (unshareable != null) throw new ControlException(Errno.EINVAL, "enable=1: " + unshareable);
            lease = engine.bind(device, group);
        } catch (ControlException e) {
            if (created) removeQuietly(engine, device);
            throw e;
        }
        ownedDevice = created ? device : null;
        int lbaShift = Integer.numberOfTrailingZeros(device.logicalBlockSize());
        reservation = reservations ? service.open(subsystem.nqn, nsid) : null;
        active = new ActiveNamespace(nsid, device, lease.payer(), group != null, perHost,
                readOnly || device.readOnly(), lbaShift, device.sizeBytes() >>> lbaShift, uuidBytes(uuid), nguid.clone(),
                new InFlightCommands(), engine.buffers().account(lease.payer()), engine.backend(device).sharesReads(), anaGroup, reservation);
    }

    /**
     * Why this namespace of a shared subsystem cannot be served from several nodes as one
     * namespace, or null: the subsystem's reason, a UUID another node cannot know (the host
     * refuses a path whose ids differ), or data that lives in this process only.
     */
    String unshareable(Backend backend) {
        String reason = subsystem.unshareable();
        if (reason == null && !uuidWritten) reason = "device_uuid is not set (expected: the same device_uuid on every node)";
        if (reason == null && backend.processPrivate()) {
            reason = "device_path=" + devicePath + " is a " + backend.kind() + " backend, which no other node can see (expected: a file or block device every node opens)";
        }
        return reason == null ? null : "subsystems/" + subsystem.nqn + " is shared with other nodes, but " + reason;
    }

    /**
     * Disabling, first half: new commands fail with Invalid Namespace from now on. Returns the
     * commands still in flight (parked by io.max included), which the caller awaits before
     * {@link #release}, or null when the namespace was neither enabled nor already draining.
     */
    public InFlightCommands stop() {
        if (active != null) {
            draining = active;
            active = null;
            draining.inFlight().close();
        }
        return draining == null ? null : draining.inFlight();
    }

    /** Disabling, second half, once the commands in flight completed: lets go of the group and device (and stops following the reservation). */
    public void release(Engine engine) {
        if (draining == null) return;
        if (reservation != null) reservation.close();
        reservation = null;
        draining = null;
        lease.close();
        lease = null;
        if (ownedDevice != null && engine.users(ownedDevice) == 0) removeQuietly(engine, ownedDevice);
        ownedDevice = null;
    }

    /** Opens a file or block device the way nvmet does: O_DIRECT unless buffered_io, its native block size. */
    private Backend openFile(Path path) throws ControlException {
        try {
            return BackendFactory.open(BackendFactory.Spec.file(path, 0, readOnly, !bufferedIo));
        } catch (NoSuchFileException e) {
            throw new ControlException(Errno.ENOENT, "enable=1: device_path=" + devicePath + " does not exist");
        } catch (AccessDeniedException e) {
            throw new ControlException(Errno.EACCES, "enable=1: device_path=" + devicePath + " cannot be opened " + (readOnly ? "read-only" : "read-write"));
        } catch (IOException e) {
            throw new ControlException(Errno.EINVAL, "enable=1: device_path=" + devicePath + " cannot be opened"
                    + (bufferedIo ? "" : " with O_DIRECT (write buffered_io=1 for file systems without it)") + ": " + e.getMessage());
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
