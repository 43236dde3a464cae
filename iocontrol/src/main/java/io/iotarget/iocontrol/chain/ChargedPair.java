package io.iotarget.iocontrol.chain;

import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.iocontrol.stat.DeviceStats;
import io.iotarget.iocontrol.stat.HeldTime;
import io.iotarget.iocontrol.stat.LatencyStats;

/**
 * A (group, device) pair as the chain charges requests to it: what the policies see of it, and
 * the accounting the chain keeps there besides — io.stat's counters, the latency from entering
 * the controller to completion, and the time requests were held, by cause. The controller's
 * {@code DeviceGroup} is the only implementation; the chain names pairs only by this, so it
 * depends on the policies and not on the group tree that is built on it. Any thread.
 */
public interface ChargedPair extends PolicyDeviceGroup {
    @Override
    DeviceControl device();

    /** io.stat's counters of the pair. */
    DeviceStats stats();

    /** Latency from entering the controller to completion; hierarchical once folded. */
    LatencyStats latency();

    /** Counts {@code ns} of {@code cause} here and in every ancestor pair. */
    void addHeld(HeldTime cause, long ns);

    /**
     * The pair a policy or a request hands back as a {@link PolicyDeviceGroup}: the controller's
     * pairs are the only implementation of both, so this one place turns it back (a type check,
     * no allocation).
     */
    static ChargedPair of(PolicyDeviceGroup pair) {
        return (ChargedPair) pair;
    }
}
