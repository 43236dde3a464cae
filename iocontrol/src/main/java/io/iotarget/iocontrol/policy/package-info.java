/**
 * The policy chain, modelled on the kernel's rq_qos and blkcg_policy. An {@link
 * io.iotarget.iocontrol.policy.IoPolicy} contributes interface files and, per device, a {@link
 * io.iotarget.iocontrol.policy.DevicePolicy} with hooks (new group state, admit, release,
 * issue, complete, group offline). The controller walks the chain in a fixed order —
 * throttle (io.max) → latency (io.latency) → cost (io.weight) — and counts io.stat between
 * the throttle and the rest, where the kernel's {@code blk_cgroup_bio_start} sits.
 */
package io.iotarget.iocontrol.policy;
