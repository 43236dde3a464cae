package io.iotarget.iocontrol.policy.latency;

import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.iocontrol.policy.host.PolicyHost;

import java.util.List;

/**
 * io.latency (see the package documentation). Any thread; the per-device work is in
 * {@link LatencyDevice}.
 */
public final class LatencyPolicy implements IoPolicy {
    private final PolicyHost host;
    private final int index;
    private final boolean rotational;
    private final boolean debugStats;

    /**
     * The standard policy: devices are non-rotational (iotarget's backends are memory, files
     * and flash; the mean rule is for disks that seek), debug statistics as the
     * {@value IoPolicy#DEBUG_STATS_PROPERTY} system property says.
     */
    public LatencyPolicy(PolicyHost host, int index) {
        this(host, index, false, Boolean.getBoolean(DEBUG_STATS_PROPERTY));
    }

    /**
     * @param rotational judge windows by their mean latency (the kernel's rule for rotational
     *                   devices) instead of the share of IOs that reached the target
     * @param debugStats add io.latency's fields to io.stat
     */
    public LatencyPolicy(PolicyHost host, int index, boolean rotational, boolean debugStats) {
        this.host = host;
        this.index = index;
        this.rotational = rotational;
        this.debugStats = debugStats;
    }

    @Override
    public String name() {
        return "latency";
    }

    @Override
    public List<InterfaceFile> files() {
        return List.of(new IoLatencyFile(host, this));
    }

    @Override
    public DevicePolicy attach(PolicyDevice device) {
        return new LatencyDevice(index, device.queueDepth(), rotational, debugStats);
    }

    int index() {
        return index;
    }
}
