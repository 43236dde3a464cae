package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;

import java.util.List;

/**
 * iocost: io.weight, io.cost.qos and io.cost.model (see the package documentation). Any
 * thread; the per-device work is in {@link CostDevice}.
 */
public final class CostPolicy implements IoPolicy {
    private final PolicyHost host;
    private final int index;
    private final boolean debugStats;

    /** The standard policy; debug statistics as the {@value #DEBUG_STATS_PROPERTY} system property says. */
    public CostPolicy(PolicyHost host, int index) {
        this(host, index, Boolean.getBoolean(DEBUG_STATS_PROPERTY));
    }

    /** @param debugStats add cost.wait, cost.indebt and cost.indelay to io.stat */
    public CostPolicy(PolicyHost host, int index, boolean debugStats) {
        this.host = host;
        this.index = index;
        this.debugStats = debugStats;
    }

    @Override
    public String name() {
        return "cost";
    }

    @Override
    public List<InterfaceFile> files() {
        return List.of(new IoWeightFile(host, this), new IoMinFile(host, this), new IoCostQosFile(host, this), new IoCostModelFile(host, this));
    }

    /** The group's io.weight "default" line (the kernel's ioc_cgrp); tree lock to write. */
    static final class GroupWeight {
        volatile int defaultWeight = CostTunables.WEIGHT_DEFAULT;
    }

    @Override
    public Object newGroupData(PolicyGroup group) {
        return new GroupWeight();
    }

    @Override
    public DevicePolicy attach(PolicyDevice device) {
        return new CostDevice(this, index, debugStats);
    }

    int index() {
        return index;
    }

    GroupWeight groupWeight(PolicyGroup group) {
        return (GroupWeight) group.policyData(index);
    }

    /** io.weight's default for the group, 1..10000. */
    int defaultWeight(PolicyGroup group) {
        return groupWeight(group).defaultWeight;
    }

    /** The policy's instance on a device. */
    CostDevice device(PolicyDevice dc) {
        return (CostDevice) dc.policy(index);
    }
}
