/**
 * The policies, modelled on the kernel's rq_qos and blkcg_policy. An {@link
 * io.iotarget.iocontrol.policy.IoPolicy} contributes interface files and, per device, a {@link
 * io.iotarget.iocontrol.policy.DevicePolicy} with hooks (new group state, admit, release,
 * issue, complete, cancel, group offline). The chain ({@code iocontrol.chain}) walks them in
 * the order of {@code Engine.STANDARD_POLICIES} — throttle (io.max), latency (io.latency),
 * cost (io.weight) — and counts io.stat after the throttle, where the kernel's
 * {@code blk_cgroup_bio_start} sits. A new policy is one entry in that list. Policies reach
 * the controller through {@link io.iotarget.iocontrol.policy.host.PolicyHost} (devices, a device
 * by key, the root, a walk of the groups, a configuration change), never the controller
 * itself, and no policy knows another. They see groups, devices and pairs through the
 * interfaces of {@code policy.host} too, which the controller's {@code Group},
 * {@code DeviceGroup} and {@code chain.DeviceControl} implement: the packages are layers,
 * controller and chain → policies → interface files ({@code file}) → {@code policy.host}.
 */
package io.iotarget.iocontrol.policy;
