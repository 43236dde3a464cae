package io.iotarget.iocontrol.chain;

import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.Errno;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The one table of devices, shared by the engine and the controller: by dense index, each
 * device's chain state ({@link DeviceControl}), what its owner runs it with ({@code Q}: the
 * engine's dispatch queue; nothing for a controller used on its own), and how many front-end
 * users (exports, namespaces) hold it. Names and numbers are unique; a removed device's index
 * is given to the next one.
 *
 * <p>Threads: lookups are lock-free reads of a copy-on-write array, for the IO path; changes
 * are synchronized on the registry, which calls out to nothing while it holds its monitor. An
 * owner that checks ({@link #claim}), numbers and adds a device as one step serializes its own
 * additions (the engine's device methods are synchronized); the controller adds and removes
 * under its tree lock.
 *
 * @param <Q> the owner's per-device object
 */
public final class DeviceRegistry<Q> {
    /** One registered device. */
    static final class Entry<Q> {
        /** The control's device, kept here too so that the IO path's lookups take one load less. */
        private final Device device;
        private final DeviceControl control;
        private final Q queue;
        /** Front-end users; guarded by the registry. */
        private int users;

        Entry(DeviceControl control, Q queue) {
            this.device = control.device();
            this.control = control;
            this.queue = queue;
        }

        Device device() {
            return device;
        }

        DeviceControl control() {
            return control;
        }
    }

    private volatile Entry<?>[] entries = new Entry<?>[0];

    // ---------------------------------------------------------------- lookups (any thread, lock-free)

    /** The chain state of the device with this index, or null. */
    public DeviceControl control(int index) {
        Entry<?>[] a = entries;
        return index < a.length && a[index] != null ? a[index].control : null;
    }

    /** The chain state of this very device; null once it was removed (even if its index was reused). */
    public DeviceControl control(Device device) {
        Entry<Q> e = entry(device);
        return e == null ? null : e.control;
    }

    /** The owner's object for this very device; null once it was removed (even if its index was reused). */
    public Q queue(Device device) {
        Entry<Q> e = entry(device);
        return e == null ? null : e.queue;
    }

    /** Registered devices in index order. */
    public List<Device> devices() {
        List<Device> list = new ArrayList<>();
        for (Entry<?> e : entries) if (e != null) list.add(e.device());
        return list;
    }

    /** Chain states in device-index order. */
    public List<DeviceControl> controls() {
        List<DeviceControl> list = new ArrayList<>();
        for (Entry<?> e : entries) if (e != null) list.add(e.control);
        return list;
    }

    /** The owners' objects in device-index order (those registered without one left out). */
    @SuppressWarnings("unchecked")
    public List<Q> queues() {
        List<Q> list = new ArrayList<>();
        for (Entry<?> e : entries) if (e != null && e.queue != null) list.add((Q) e.queue);
        return list;
    }

    /** The device with this name, or null. */
    public Device device(String name) {
        for (Entry<?> e : entries) if (e != null && e.device().name().equals(name)) return e.device();
        return null;
    }

    /**
     * Finds a device by {@code MAJ:MIN} or by name, as io.* files do.
     *
     * @throws ControlException ENODEV when no such device exists
     */
    public DeviceControl find(String key) throws ControlException {
        for (Entry<?> e : entries) {
            if (e != null && (e.device().number().toString().equals(key) || e.device().name().equals(key))) return e.control;
        }
        throw new ControlException(Errno.ENODEV, "no device " + key);
    }

    /** The raw table, for the chain's allocation-free walks. */
    Entry<?>[] snapshot() {
        return entries;
    }

    @SuppressWarnings("unchecked")
    private Entry<Q> entry(Device device) {
        Entry<?>[] a = entries;
        int i = device.index();
        Entry<?> e = i < a.length ? a[i] : null;
        return e != null && e.device == device ? (Entry<Q>) e : null;
    }

    // ---------------------------------------------------------------- changes (synchronized)

    /**
     * Checks that {@code name} and {@code number} are free and returns the number the new
     * device gets: {@code number}, or the lowest free {@code defaultMajor:N} when null.
     *
     * @throws ControlException EEXIST when the name or number is taken
     */
    public synchronized DeviceNumber claim(String name, DeviceNumber number, int defaultMajor) throws ControlException {
        for (Entry<?> e : entries) {
            if (e == null) continue;
            if (e.device().name().equals(name)) throw new ControlException(Errno.EEXIST, "a device named " + name + " exists");
            if (number != null && e.device().number().equals(number)) throw new ControlException(Errno.EEXIST, "device number " + number + " is taken");
        }
        if (number != null) return number;
        int minor = 0;
        while (taken(new DeviceNumber(defaultMajor, minor))) minor++;
        return new DeviceNumber(defaultMajor, minor);
    }

    private boolean taken(DeviceNumber number) {
        for (Entry<?> e : entries) if (e != null && e.device().number().equals(number)) return true;
        return false;
    }

    /** The index the next device gets: the lowest free one. */
    public synchronized int freeIndex() {
        Entry<?>[] a = entries;
        for (int i = 0; i < a.length; i++) if (a[i] == null) return i;
        return a.length;
    }

    /**
     * Publishes a device. Its index must be free and its name and number unique (an owner
     * checks with {@link #claim} first; a clash here is a programming error).
     */
    public synchronized void add(DeviceControl control, Q queue) {
        Device device = control.device();
        requireFree(device);
        Entry<?>[] next = Arrays.copyOf(entries, Math.max(entries.length, device.index() + 1));
        next[device.index()] = new Entry<>(control, queue);
        entries = next;
    }

    /** Throws IllegalStateException when the device's index, name or number is taken. */
    public synchronized void requireFree(Device device) {
        Entry<?>[] current = entries;
        int index = device.index();
        if (index < current.length && current[index] != null) throw new IllegalStateException("device index " + index + " already registered");
        for (Entry<?> e : current) {
            if (e != null && (e.device().number().equals(device.number()) || e.device().name().equals(device.name()))) {
                throw new IllegalStateException("device " + device.name() + " (" + device.number() + ") already registered");
            }
        }
    }

    /** Forgets the device; lookups stop finding it at once. */
    public synchronized void remove(Device device) {
        if (entry(device) == null) return;
        Entry<?>[] next = entries.clone();
        next[device.index()] = null;
        entries = next;
    }

    /**
     * A front end starts using the device (an export or namespace on it).
     *
     * @throws ControlException ENODEV when it was removed
     */
    public synchronized void acquire(Device device) throws ControlException {
        Entry<Q> e = entry(device);
        if (e == null) throw new ControlException(Errno.ENODEV, "device " + device.name() + " was removed");
        e.users++;
    }

    /** Undoes one {@link #acquire}. */
    public synchronized void release(Device device) {
        Entry<Q> e = entry(device);
        if (e != null && e.users > 0) e.users--;
    }

    /** Front-end users of the device; 0 once it was removed. */
    public synchronized int users(Device device) {
        Entry<Q> e = entry(device);
        return e == null ? 0 : e.users;
    }
}
