/**
 * The IO controller: cgroup v2's io controller for a storage target.
 *
 * <h2>1. The problem</h2>
 * Tenants share devices. Each tenant's IO must be counted exactly (io.stat), held to hard
 * limits (io.max), share contended devices by weight (io.weight) — and no request may reach a
 * backend without passing through here, whatever front end or command kind it came from.
 *
 * <h2>2. Mechanisms</h2>
 * <ol>
 *   <li>A tree of {@link io.iotarget.iocontrol.Group}s, addressed like /sys/fs/cgroup, whose
 *       interface files have the kernel's names, formats, write syntax and errnos.</li>
 *   <li>Per (group, device) state, a {@link io.iotarget.iocontrol.DeviceGroup} (the kernel's
 *       blkg), created lazily on first IO or first configuration, ancestors first.</li>
 *   <li>One entry point, {@link io.iotarget.iocontrol.IoController#admit}: resolve who pays,
 *       run the policy chain (throttle → [io.stat] → cost), park or pass.</li>
 *   <li>Striped counters and a lazy hierarchical flush for io.stat ({@code stat}).</li>
 * </ol>
 *
 * <h2>3. Threads and time</h2>
 * No threads and no clock of its own: time comes in as {@code nowNs}; parked requests come
 * out of {@code releaseDue(nowNs)}, which the engine calls when
 * {@link io.iotarget.iocontrol.IoController#nextReleaseNs} says. Lock order: tree lock, then a
 * device lock, then the stats flusher's lock.
 */
package io.iotarget.iocontrol;
