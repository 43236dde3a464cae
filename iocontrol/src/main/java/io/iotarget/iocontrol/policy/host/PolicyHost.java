package io.iotarget.iocontrol.policy.host;

import io.iotarget.model.ControlException;

import java.util.List;
import java.util.function.Consumer;

/**
 * What a policy and its interface files may ask of the controller that runs them: the devices,
 * a device by its key, the root group, a walk of the groups, and a configuration change. The
 * controller implements it; a policy never sees the rest of it (the IO path, mkdir, other
 * policies), so a policy depends on this and not on the controller that is built from policies.
 * The groups and devices it hands out are the controller's own, and the ones it is given back
 * must be too. Any thread.
 */
public interface PolicyHost {
    /** Registered devices in index order. */
    List<? extends PolicyDevice> devices();

    /**
     * The device named by {@code MAJ:MIN} or by its name, as io.* files write it.
     *
     * @throws ControlException ENODEV when no such device exists
     */
    PolicyDevice findDevice(String key) throws ControlException;

    PolicyGroup root();

    /** Visits every group, parents before children, under the tree lock. */
    void walk(Consumer<PolicyGroup> action);

    /**
     * Applies {@code change} to the (group, device) pair, made if needed, under the tree lock
     * and the device's lock, at a time that never goes back.
     *
     * @throws ControlException ENODEV when the group was removed
     */
    void configure(PolicyGroup group, PolicyDevice device, ConfigChange change) throws ControlException;
}
