package io.iotarget.iocontrol.policy;

import io.iotarget.iocontrol.DeviceControl;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.file.InterfaceFile;

import java.util.List;

/**
 * One IO control policy, the pairing of the kernel's {@code blkcg_policy} (per-group state and
 * interface files) and {@code rq_qos} (hooks on the IO path). The controller creates one
 * {@link DevicePolicy} per device and chains them: throttle (io.max) → latency → cost.
 */
public interface IoPolicy {
    /** "throttle", "latency", "cost". */
    String name();

    /** The interface files this policy owns (its cftypes). */
    List<InterfaceFile> files();

    /** The policy's instance on one device; called once when the device is registered. */
    DevicePolicy attach(DeviceControl device);

    /** Per-group, device-independent state (io.weight's default, say); null when the policy has none. */
    default Object newGroupData(Group group) {
        return null;
    }
}
