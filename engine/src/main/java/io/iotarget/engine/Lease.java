package io.iotarget.engine;

import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What an enabled NBD export or NVMe namespace holds, from {@link Engine#bind}: a user
 * reference on its device, so that removing the device fails (EBUSY), and a binding of its
 * group, so that removing the group fails (EBUSY) — as nvmet's enabled namespace holds its
 * block device and its cgroup. {@link #close} lets go of both, once; later calls do nothing.
 * The front end closes it only after the last request it submitted on the device completed, so
 * neither is taken away under a request still running or parked. Any thread.
 */
public final class Lease implements AutoCloseable {
    private final Engine engine;
    private final Device device;
    private final Group group;
    private final AtomicBoolean closed = new AtomicBoolean();

    Lease(Engine engine, Device device, Group group) {
        this.engine = engine;
        this.device = device;
        this.group = group;
    }

    public Device device() {
        return device;
    }

    /** The group that pays: the bound group, or the root for a member bound to none. */
    public Group payer() {
        return group != null ? group : engine.controller().root();
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) return;
        if (group != null) engine.controller().unbind(group);
        engine.release(device);
    }
}
