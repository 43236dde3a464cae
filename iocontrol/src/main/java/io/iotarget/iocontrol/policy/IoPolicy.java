package io.iotarget.iocontrol.policy;

import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.iocontrol.policy.host.PolicyGroup;

import java.util.List;

/**
 * One IO control policy, the pairing of the kernel's {@code blkcg_policy} (per-group state and
 * interface files) and {@code rq_qos} (hooks on the IO path). The controller creates one
 * {@link DevicePolicy} per device and chains them in the order of
 * {@code Engine.STANDARD_POLICIES}: throttle (io.max), latency (io.latency), then cost
 * (io.weight). A policy reaches the controller only through its {@link io.iotarget.iocontrol.policy.host.PolicyHost}.
 */
public interface IoPolicy {
    /**
     * System property that adds the policies' debug fields to io.stat (iocost's cost.wait,
     * cost.indebt, cost.indelay; io.latency's), like the kernel's blkcg_debug_stats.
     */
    String DEBUG_STATS_PROPERTY = "iotarget.blkcg_debug_stats";

    /** "throttle", "latency", "cost". */
    String name();

    /** The interface files this policy owns (its cftypes). */
    List<InterfaceFile> files();

    /** The policy's instance on one device; called once when the device is registered. */
    DevicePolicy attach(PolicyDevice device);

    /**
     * True for a policy that acts before io.stat counts a request, as blk-throttle acts on the
     * bio before {@code blk_cgroup_bio_start}; the chain runs such policies first. False for the
     * request-level policies (rq_qos: io.latency, iocost), which see requests already counted.
     */
    default boolean precedesStat() {
        return false;
    }

    /** Per-group, device-independent state (io.weight's default, say); null when the policy has none. */
    default Object newGroupData(PolicyGroup group) {
        return null;
    }

    /**
     * {@code child} was just made under {@code parent} for a host ({@code cgroup_per_host}):
     * the policy gives it what {@code parent} holds for new hosts' children (io.max.per_host).
     * Tree lock held.
     */
    default void hostChildMade(PolicyGroup parent, PolicyGroup child) {
    }
}
