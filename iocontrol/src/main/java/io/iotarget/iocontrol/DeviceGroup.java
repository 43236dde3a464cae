package io.iotarget.iocontrol;

import io.iotarget.iocontrol.chain.ChargedPair;
import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.iocontrol.stat.DeviceStats;
import io.iotarget.iocontrol.stat.HeldTime;
import io.iotarget.iocontrol.stat.LatencyStats;
import io.iotarget.model.Counters;

/**
 * The state of one group on one device, the analogue of the kernel's blkg: io.stat counters
 * and each policy's per-(group, device) state. Created lazily, on the group's first IO or first
 * configuration for the device, together with any missing ancestors (top-down), and kept until
 * the group is removed. Besides io.stat it keeps what io.stat has no field for (the
 * {@code iotarget.io.stat} file and /metrics read it): latency and the time requests were held.
 */
public final class DeviceGroup implements ChargedPair {
    private final Group group;
    private final DeviceControl device;
    private final DeviceGroup parent;
    private final DeviceStats stats;
    private final LatencyStats latency;
    private final Counters<HeldTime> held = new Counters<>(HeldTime.class);
    /** Set once, before the pair is published in its group. */
    private Object[] policyState;

    DeviceGroup(Group group, DeviceControl device, DeviceGroup parent, DeviceStats stats) {
        this.group = group;
        this.device = device;
        this.parent = parent;
        this.stats = stats;
        this.latency = new LatencyStats(parent == null ? null : parent.latency);
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

    /** Latency from entering the controller to completion; hierarchical once folded. */
    public LatencyStats latency() {
        return latency;
    }

    /** Time this pair's requests and its descendants' were held back, ns, by cause. Any thread. */
    public Counters<HeldTime> held() {
        return held;
    }

    /** Counts {@code ns} of {@code cause} here and in every ancestor pair. Any thread. */
    public void addHeld(HeldTime cause, long ns) {
        for (DeviceGroup dg = this; dg != null; dg = dg.parent) dg.held.add(cause, ns);
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
