package io.iotarget.iocontrol.policy.latency;

import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.model.IoRequest;

import java.util.ArrayDeque;

import static io.iotarget.iocontrol.policy.latency.LatencyTunables.DEFAULT_SCALE_COOKIE;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.MIN_WINDOW_NS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.UNLIMITED_DEPTH;

/**
 * io.latency's state for one (group, device) pair: the kernel's {@code iolatency_grp}, its
 * {@code child_latency_info} (this group as a parent of throttled children) and the blkg's
 * delay fields. Device lock; the fields io.file and io.stat read are volatile.
 */
final class LatencyGroup {
    /** A time that never happened: no scale event yet, no delay window yet. */
    static final long NEVER = Long.MIN_VALUE;

    final PolicyDeviceGroup deviceGroup;
    /** Null for the root group, which has no target and is never throttled. */
    final LatencyGroup parent;

    // ---- this group's target and its windows
    /** The target, ns; 0 when none (the kernel's {@code min_lat_nsec}). Tree and device lock to write. */
    volatile long targetNs;
    /** Window length: 16 targets within 100 ms..1 s. */
    volatile long windowNs = MIN_WINDOW_NS;
    long windowStartNs;
    /** The window running now. */
    final LatencyStat window = new LatencyStat();
    /** Windows summed since the parent last took a decision on them ({@code cur_stat}). */
    final LatencyStat pending = new LatencyStat();
    /** Rotational only: the EWMA of window means, ns, for io.stat. */
    volatile long averageLatencyNs;
    /** Samples in {@link #pending}, as last reported to the parent's {@link #childSamples}. */
    long samples;

    // ---- this group's depth
    /** Requests this group (and its subtree) may have past this level; {@link LatencyTunables#UNLIMITED_DEPTH} when not throttled. */
    volatile int maxDepth = UNLIMITED_DEPTH;
    int inflight;
    /** Requests waiting for a slot at this level, oldest first. */
    final ArrayDeque<IoRequest> waiters = new ArrayDeque<>();
    /** The parent's {@link #childCookie} when this group last followed it. */
    int scaleCookie;

    // ---- this group as a parent
    /** Moved down when a child misses its target and up when it is fine again; siblings follow its moves. */
    int childCookie = DEFAULT_SCALE_COOKIE;
    /** The tightest target that missed (0: none), and the child that owns it: the only one that may scale back up. */
    long scaleLatNs;
    LatencyGroup scaleGroup;
    long lastScaleEventNs = NEVER;
    /** Children's {@link #samples}, summed. */
    long childSamples;

    // ---- the blkg's issuer delay
    /** How many scale-downs found the depth at 1 already: while non-zero, issuers pay {@link #delayNs}. */
    volatile int useDelay;
    /** Delay owed, ns, built from metadata that went past a throttled depth. */
    volatile long delayNs;
    long delayStartNs = NEVER;
    long lastDelayNs;
    int lastUseDelay;

    LatencyGroup(PolicyDeviceGroup deviceGroup, LatencyGroup parent) {
        this.deviceGroup = deviceGroup;
        this.parent = parent;
        this.scaleCookie = parent == null ? DEFAULT_SCALE_COOKIE : parent.childCookie;
    }

    boolean isRoot() {
        return parent == null;
    }

    @Override
    public String toString() {
        return deviceGroup.toString();
    }
}
