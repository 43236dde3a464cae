package io.iotarget.iocontrol.policy.host;

/** A policy's change to one (group, device) pair ({@link PolicyHost#configure}); runs under the tree and device locks. */
@FunctionalInterface
public interface ConfigChange {
    void apply(PolicyDeviceGroup group, long nowNs);
}
