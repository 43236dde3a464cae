package io.iotarget.iocontrol.policy.host;

/**
 * One group's state on one device as a policy sees it (the kernel's blkg as a blkcg_policy sees
 * it through its blkg_policy_data): the group, the device, the parent group's pair on the same
 * device, and the state each policy made for the pair. The controller's pairs are the only
 * implementation. Any thread; the policies' states are theirs to guard (the device lock).
 */
public interface PolicyDeviceGroup {
    PolicyGroup group();

    PolicyDevice device();

    /** The parent group's state on the same device; null for the root group. */
    PolicyDeviceGroup parent();

    /** The state the policy at {@code policyIndex} made for this pair ({@code DevicePolicy.newGroupState}). */
    Object policyState(int policyIndex);
}
