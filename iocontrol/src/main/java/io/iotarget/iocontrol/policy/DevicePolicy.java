package io.iotarget.iocontrol.policy;

import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.model.Counters;
import io.iotarget.model.IoRequest;

/**
 * A policy on one device: its hooks on the IO path and its per-(group, device) state.
 *
 * <p>Threads: {@link #applies}, {@link #appendStat} and {@link #counters} are called without the
 * device lock and must only read; every other hook runs under the device's lock, so a policy's device and group
 * state needs no locking of its own. Hooks must not block; a policy that wants a request to
 * wait parks it in its own queue and later hands it to the {@link Resumer}. Any hook may resume
 * requests, {@link #admit} included (a request arriving may pay a debt that frees others): the
 * controller hands whatever was resumed to dispatch.
 */
public interface DevicePolicy {
    /** State for a new (group, device) pair; pairs are created parents first. Under the tree lock. */
    Object newGroupState(PolicyDeviceGroup group);

    /**
     * Lock-free hint: could this policy act on this request? False lets the request skip the
     * policy (and, when no policy applies, the device lock). A stale answer is harmless: it is
     * the same as the request arriving just before or after a configuration change.
     */
    boolean applies(IoRequest io, PolicyDeviceGroup group);

    /**
     * Decides now: true passes the request on; false means the policy has parked it and will
     * give it to {@code resumer} when its time comes (from {@link #releaseDue},
     * {@link #onComplete} or a configuration change).
     */
    boolean admit(IoRequest io, PolicyDeviceGroup group, long nowNs, Resumer resumer);

    /** Resumes every parked request whose time has come. */
    void releaseDue(long nowNs, Resumer resumer);

    /** When {@link #releaseDue} next has work; {@link Long#MAX_VALUE} when nothing is parked. */
    long nextWakeNs();

    /**
     * True when {@link #onIssue} and {@link #onComplete} do something; a policy that only
     * admits (io.max) returns false and its requests complete without the device lock.
     */
    default boolean tracksCompletions() {
        return false;
    }

    /** The request left the policies for the backend. Called for requests this policy admitted. */
    default void onIssue(IoRequest io, PolicyDeviceGroup group, long nowNs) {
    }

    /**
     * The backend finished the request. Called for requests this policy admitted.
     *
     * @return how long the issuer must wait before hearing of the completion, in ns (the
     *         kernel's blkcg delay, slept by the issuing task on its way back to user space);
     *         0 for no delay
     */
    default long onComplete(IoRequest io, PolicyDeviceGroup group, long nowNs, Resumer resumer) {
        return 0;
    }

    /**
     * The request's issuer has gone away (its connection closed) and nobody will take the
     * reply: if this policy has it parked, it forgets it (and may resume others it held up).
     *
     * @return true when the request was parked here and is now out of the policy
     */
    default boolean cancel(IoRequest io, PolicyDeviceGroup group, long nowNs, Resumer resumer) {
        return false;
    }

    /**
     * A request this policy passed on was cancelled at a later stage: it will never be issued
     * nor complete, and whatever this policy holds for it must be given back (the kernel's
     * {@code rq_qos_cleanup}). Called only when {@link #tracksCompletions} is true.
     */
    default void cleanup(IoRequest io, PolicyDeviceGroup group, long nowNs, Resumer resumer) {
    }

    /** The group was removed: nothing it parked may wait any longer. */
    void onGroupOffline(PolicyDeviceGroup group, long nowNs, Resumer resumer);

    /** This policy's counters on the device (a catalogue enum of its own), or null when it keeps none. Any thread. */
    default Counters<?> counters() {
        return null;
    }

    /**
     * Appends this policy's iotarget.io.stat fields for the pair (" min_pct=100.00"), the ones
     * Linux's io.stat has no place for; every key on every line, whatever the configuration.
     * Flusher lock held.
     */
    default void appendIotargetStat(PolicyDeviceGroup group, StringBuilder line) {
    }

    /** Appends this policy's io.stat fields for the pair (" cost.usage=12"), if any. Flusher lock held. */
    default void appendStat(PolicyDeviceGroup group, StringBuilder line) {
    }
}
