package io.iotarget.iocontrol.policy.host;

import io.iotarget.model.Device;

/**
 * A device under IO control as a policy sees it (the kernel's request_queue as an rq_qos sees
 * it): the device, its queue depth, the root group's state on it, and each policy's instance on
 * it. The controller's per-device chain state is the only implementation. Any thread.
 */
public interface PolicyDevice {
    Device device();

    /** Requests the device's dispatch queue runs at once: the kernel's {@code nr_requests}, which io.latency scales by. */
    int queueDepth();

    /** The root group's state on this device (whole-device io.stat). */
    PolicyDeviceGroup root();

    /**
     * The instance of the policy at {@code index} on this device (its {@code DevicePolicy}, which
     * the policy casts to its own class; typed as Object so this package names no policy type).
     */
    Object policy(int index);
}
