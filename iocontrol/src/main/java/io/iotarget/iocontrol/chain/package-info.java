/**
 * The policy chain: the way every request takes through the IO control policies, and the
 * devices it takes it on.
 *
 * <h2>1. Stages</h2> {@link io.iotarget.iocontrol.chain.PolicyChain} runs a request through
 * the policies in list order (throttle, latency, then cost; the list is {@code
 * Engine.STANDARD_POLICIES}). Each stage that takes the request sets its bit in
 * {@code IoRequest.policyFlags}, so issue and completion reach exactly the policies that
 * admitted it, and a cancel reaches the one that has it parked (the highest bit). io.stat
 * counts the request after the policies that {@code precedesStat()} (io.max).
 * <h2>2. Parking and resuming</h2> A stage that parks a request later hands it to its
 * {@code Resumer}, which runs the remaining stages; a request that passes them all lands on
 * the device's ready list, which the locked section that resumed it drains to the caller's
 * sink or, with no sink at hand (admission, configuration), leaves for {@code releaseDue}
 * and tells the owner through the {@link io.iotarget.iocontrol.chain.ReleaseSignal}. A request
 * that parks, and one that leaves its last policy (passed, cancelled, let go), is reported to
 * io.pressure ({@code pressure.Pressure}) in the same locked section.
 * <h2>3. One locked section</h2> Every hook runs between {@code enter} (device lock, a time
 * that never goes back) and {@code leave} (next wake-up, ready-list drain, unlock). A request
 * no policy applies to takes no lock at all.
 * <h2>4. Devices</h2> {@link io.iotarget.iocontrol.chain.DeviceRegistry} is the one table of
 * devices, by dense index, lock-free to read: each device's chain state ({@link
 * io.iotarget.iocontrol.chain.DeviceControl}) and, in the engine, its dispatch queue and users.
 * <h2>5. Pairs</h2> The chain names a (group, device) pair only as a {@link
 * io.iotarget.iocontrol.chain.ChargedPair} (what the policies see of it, plus io.stat, latency
 * and held time), which the group tree's {@code DeviceGroup} implements: the chain depends on
 * the policies, the tree on the chain, and not back.
 */
package io.iotarget.iocontrol.chain;
