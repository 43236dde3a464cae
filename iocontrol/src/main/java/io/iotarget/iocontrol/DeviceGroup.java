package io.iotarget.iocontrol;

import io.iotarget.iocontrol.stat.DeviceStats;

/**
 * The state of one group on one device, the analogue of the kernel's blkg: io.stat counters
 * and each policy's per-(group, device) state. Created lazily, on the group's first IO or first
 * configuration for the device, together with any missing ancestors (top-down), and kept until
 * the group is removed.
 */
public final class DeviceGroup {
    private final Group group;
    private final DeviceControl device;
    private final DeviceGroup parent;
    private final DeviceStats stats;
    private final Object[] policyState;

    DeviceGroup(Group group, DeviceControl device, DeviceGroup parent, DeviceStats stats, int policyCount) {
        this.group = group;
        this.device = device;
        this.parent = parent;
        this.stats = stats;
        this.policyState = new Object[policyCount];
    }

    public Group group() {
        return group;
    }

    public DeviceControl device() {
        return device;
    }

    /** The parent group's state on the same device; null for the root group. */
    public DeviceGroup parent() {
        return parent;
    }

    public DeviceStats stats() {
        return stats;
    }

    /** The state the policy at {@code policyIndex} created for this pair. */
    public Object policyState(int policyIndex) {
        return policyState[policyIndex];
    }

    void policyState(int policyIndex, Object state) {
        policyState[policyIndex] = state;
    }

    @Override
    public String toString() {
        return group.path() + "@" + device.device().number();
    }
}
