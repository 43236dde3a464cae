package io.iotarget.iocontrol;

import io.iotarget.iocontrol.chain.DeviceControl;
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
    /** Set once, before the pair is published in its group. */
    private Object[] policyState;

    DeviceGroup(Group group, DeviceControl device, DeviceGroup parent, DeviceStats stats) {
        this.group = group;
        this.device = device;
        this.parent = parent;
        this.stats = stats;
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

    void policyStates(Object[] states) {
        policyState = states;
    }

    @Override
    public String toString() {
        return group.path() + "@" + device.device().number();
    }
}
