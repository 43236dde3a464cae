/**
 * The IO controller: cgroup v2's io controller for a storage target. This package is its front
 * door ({@link io.iotarget.iocontrol.IoController}) and its group tree; the request's way
 * through the policies is in {@code chain}, the policies in {@code policy.*}, the interface-file
 * parsing in {@code file}, io.stat's counters in {@code stat}. The packages are layers, each
 * naming only those after it: this one → {@code chain} → {@code policy} and its policies →
 * {@code file} → {@code policy.host} (what the policies see of groups and devices, which the
 * classes here and in {@code chain} implement); {@code stat} and {@code pressure} are leaves.
 *
 * <h2>1. The problem</h2>
 * Tenants share devices. Each tenant's IO must be counted exactly (io.stat), held to hard
 * limits (io.max), keep a latency target (io.latency), share contended devices by weight
 * (io.weight) — and no request may reach a backend without passing through here, whatever
 * front end or command kind it came from.
 *
 * <h2>2. Mechanisms</h2>
 * <ol>
 *   <li>The group tree ({@link io.iotarget.iocontrol.GroupTree}): {@link
 *       io.iotarget.iocontrol.Group}s addressed like /sys/fs/cgroup, whose interface files
 *       have the kernel's names, formats, write syntax and errnos.</li>
 *   <li>Per (group, device) state, a {@link io.iotarget.iocontrol.DeviceGroup} (the kernel's
 *       blkg), created lazily on first IO or first configuration, ancestors first.</li>
 *   <li>One entry point, {@link io.iotarget.iocontrol.IoController#admit}: resolve who pays
 *       (the tree), then run the policy chain ({@code chain.PolicyChain}: throttle → [io.stat]
 *       → latency → cost, in the order of {@code Engine.STANDARD_POLICIES}), park or pass.</li>
 *   <li>One device registry ({@code chain.DeviceRegistry}), shared with the engine.</li>
 *   <li>Striped counters and a lazy hierarchical flush for io.stat ({@code stat}).</li>
 *   <li>io.pressure ({@code pressure}): tenant queues as PSI's tasks, stalled while a policy
 *       holds one of their commands; told by the chain where requests park and resume.</li>
 * </ol>
 *
 * <h2>3. Threads and time</h2>
 * No threads and no clock of its own: time comes in as {@code nowNs}; parked requests come
 * out of {@code releaseDue(nowNs)}, which the engine calls when
 * {@link io.iotarget.iocontrol.IoController#nextReleaseNs} says. Lock order: tree lock, then a
 * device lock, then the stats flusher's lock or io.pressure's tracker (which takes no other lock); the registry's monitor is taken last and alone.
 */
package io.iotarget.iocontrol;
