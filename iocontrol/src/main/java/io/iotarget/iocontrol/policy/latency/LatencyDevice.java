package io.iotarget.iocontrol.policy.latency;

import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.Resumer;
import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.util.ArrayList;
import java.util.List;

import static io.iotarget.iocontrol.policy.latency.LatencyGroup.NEVER;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.DEFAULT_SCALE_COOKIE;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.DELAY_DECAY_PERIOD_NS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.EXP_BUCKET_NS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.EXP_FACTORS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.FEW_SAMPLES_PCT;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.FIXED_1;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.MAX_ISSUER_DELAY_NS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.MAX_WINDOW_NS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.MIN_ADJUST_NS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.MIN_GOOD_SAMPLES;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.MIN_WINDOW_NS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.MISSED_SHARE_PCT;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.NS_PER_MS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.NS_PER_US;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.SCALE_DOWN_SHIFT;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.SCALE_UP_SHIFT;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.TIMER_PERIOD_NS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.UNLIMITED_DEPTH;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.VICTIM_TIMEOUT_NS;
import static io.iotarget.iocontrol.policy.latency.LatencyTunables.WINDOW_TARGETS_SHIFT;

/**
 * io.latency on one device (the kernel's {@code blk_iolatency}): the depth limits, the
 * windows, the scale cookies and the periodic timer (see the package documentation).
 * Every hook runs under the device lock; {@link #applies} and {@link #appendStat} only read.
 */
final class LatencyDevice implements DevicePolicy {
    private final int policyIndex;
    /** The device's queue depth, which the steps are fractions of (the kernel's {@code nr_requests}). */
    private final int queueDepth;
    private final boolean rotational;
    private final boolean debugStats;
    /** Groups with a target on this device (the kernel's {@code enable_cnt}); 0 lets every request skip the policy. */
    private volatile int targets;
    /** When the periodic timer fires; {@link Long#MAX_VALUE} while it is not armed. */
    private long timerNs = Long.MAX_VALUE;
    /** Every pair on the device, parents before children, for the timer's walk. */
    private final List<LatencyGroup> groups = new ArrayList<>();
    /** Scratch for the window being closed, so that closing one allocates nothing. */
    private final LatencyStat closing = new LatencyStat();

    LatencyDevice(int policyIndex, int queueDepth, boolean rotational, boolean debugStats) {
        this.policyIndex = policyIndex;
        this.queueDepth = queueDepth;
        this.rotational = rotational;
        this.debugStats = debugStats;
    }

    LatencyGroup state(PolicyDeviceGroup dg) {
        return (LatencyGroup) dg.policyState(policyIndex);
    }

    @Override
    public Object newGroupState(PolicyDeviceGroup dg) {
        LatencyGroup lg = new LatencyGroup(dg, dg.parent() == null ? null : state(dg.parent()));
        groups.add(lg);
        return lg;
    }

    /** While some group has a target, every request is counted at every level: a depth limit needs the in-flight counts. */
    @Override
    public boolean applies(IoRequest io, PolicyDeviceGroup group) {
        return targets > 0;
    }

    @Override
    public boolean tracksCompletions() {
        return true;
    }

    // ================================================================ submission

    /** blkcg_iolatency_throttle: stamps the start, then takes a slot at every level up to the root's children. */
    @Override
    public boolean admit(IoRequest io, PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        io.policyStartNs(nowNs);
        if (timerNs == Long.MAX_VALUE) timerNs = nowNs + TIMER_PERIOD_NS;
        return climb(io, state(dg), nowNs, resumer);
    }

    /** Takes a slot at {@code from} and each level above it; false when the request had to wait at one. */
    private boolean climb(IoRequest io, LatencyGroup from, long nowNs, Resumer resumer) {
        for (LatencyGroup g = from; !g.isRoot(); g = g.parent) {
            followParentCookie(g, nowNs, resumer);
            if (!takeSlot(io, g)) {
                g.waiters.add(io);
                return false;
            }
        }
        return true;
    }

    /**
     * Metadata never waits (the kernel's issue-as-root: queued behind its group's data it would
     * invert priorities); other requests wait in arrival order once one waits.
     */
    private static boolean takeSlot(IoRequest io, LatencyGroup g) {
        if (io.hasFlag(IoFlags.META) || (g.waiters.isEmpty() && g.inflight < g.maxDepth)) {
            g.inflight++;
            return true;
        }
        return false;
    }

    /** Lets waiters at {@code g} take the slots that are free and climb on. */
    private void wake(LatencyGroup g, long nowNs, Resumer resumer) {
        while (!g.waiters.isEmpty() && g.inflight < g.maxDepth) {
            IoRequest io = g.waiters.poll();
            g.inflight++;
            if (climb(io, g.parent, nowNs, resumer)) resumer.resume(io);
        }
    }

    /** check_scale_change: a group follows its parent's cookie one step at a time, up or down. */
    private void followParentCookie(LatencyGroup g, long nowNs, Resumer resumer) {
        LatencyGroup parent = g.parent;
        int cookie = parent.childCookie;
        if (cookie == g.scaleCookie) return;
        boolean down = cookie < g.scaleCookie;
        g.scaleCookie = cookie;
        if (down && g.targetNs != 0) {
            // At least as important as the victim: never throttled for it.
            if (parent.scaleLatNs == 0 || g.targetNs <= parent.scaleLatNs) return;
            // Did hardly any of the IO: throttling it would not help the victim.
            long fewSamples = Math.max(1, parent.childSamples * FEW_SAMPLES_PCT / 100);
            if (g.samples <= fewSamples) return;
        }
        if (down && g.maxDepth == 1) {
            g.useDelay++;
            return;
        }
        if (cookie == DEFAULT_SCALE_COOKIE) {
            g.useDelay = 0;
            g.maxDepth = UNLIMITED_DEPTH;
            wake(g, nowNs, resumer);
            return;
        }
        changeDepth(g, !down, nowNs, resumer);
    }

    /** scale_change: halve the depth, or raise it by qd/16 up to qd; at depth 1 a raise first drops a delay level. */
    private void changeDepth(LatencyGroup g, boolean up, long nowNs, Resumer resumer) {
        int depth = Math.min(g.maxDepth, queueDepth);
        if (!up) {
            g.maxDepth = Math.max(depth >> 1, 1);
            return;
        }
        if (depth == 1 && g.useDelay > 0) {
            g.useDelay--;
            return;
        }
        if (depth < queueDepth) {
            g.maxDepth = Math.min(depth + step(true), queueDepth);
            wake(g, nowNs, resumer);
        }
    }

    private int step(boolean up) {
        return Math.max(queueDepth >> (up ? SCALE_UP_SHIFT : SCALE_DOWN_SHIFT), 1);
    }

    // ================================================================ completion

    /** blkcg_iolatency_done_bio: gives the slots back, records the latency, closes windows. */
    @Override
    public long onComplete(IoRequest io, PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        LatencyGroup leaf = state(dg);
        // An abandoned request never reached the device (the kernel's BLK_STS_AGAIN): no sample.
        boolean sample = io.status() != IoStatus.ABORTED;
        for (LatencyGroup g = leaf; !g.isRoot(); g = g.parent) {
            g.inflight--;
            if (g.targetNs != 0 && sample) {
                record(g, io, nowNs);
                if (nowNs > g.windowStartNs && nowNs - g.windowStartNs >= g.windowNs) {
                    g.windowStartNs = nowNs;
                    closeWindow(g, nowNs);
                }
            }
            wake(g, nowNs, resumer);
        }
        return issuerDelayNs(leaf, nowNs);
    }

    /**
     * iolatency_record_time. Metadata of a throttled group is not a sample (it skipped the
     * depth, so it would flatter the group); it is owed as delay instead, as much as it came in
     * under the target.
     */
    private void record(LatencyGroup g, IoRequest io, long nowNs) {
        long start = io.policyStartNs();
        if (nowNs <= start) return;
        long latencyNs = nowNs - start;
        if (io.hasFlag(IoFlags.META) && g.maxDepth != UNLIMITED_DEPTH) {
            if (latencyNs < g.targetNs) addDelay(g, nowNs, g.targetNs - latencyNs);
            return;
        }
        if (rotational) {
            g.window.sumNs += latencyNs;
        } else if (latencyNs >= g.targetNs) {
            g.window.missed++;
        }
        g.window.total++;
    }

    /** The p90 rule on a non-rotational device (fewer than 10% of the IOs reached the target), the mean on a rotational one. */
    private boolean met(LatencyGroup g, LatencyStat stat) {
        if (rotational) return stat.meanNs() <= g.targetNs;
        return stat.missed < Math.max(stat.total * MISSED_SHARE_PCT / 100, 1);
    }

    /**
     * iolatency_check_latencies: the window's verdict goes to the parent, which moves its
     * cookie at most once per 500 ms: down when a child misses (and records the tightest such
     * child as the victim), up when the victim has been fine over at least 5 samples.
     */
    private void closeWindow(LatencyGroup g, long nowNs) {
        LatencyStat stat = closing;
        stat.reset();
        stat.add(g.window);
        g.window.reset();
        LatencyGroup parent = g.parent;
        if (rotational) {
            int bucket = (int) Math.min(EXP_FACTORS.length - 1, g.windowNs / EXP_BUCKET_NS);
            g.averageLatencyNs = calcLoad(g.averageLatencyNs, EXP_FACTORS[bucket], stat.meanNs());
        }
        if (met(g, stat) && parent.childCookie == DEFAULT_SCALE_COOKIE) return;

        g.pending.add(stat);
        parent.childSamples += g.pending.total - g.samples;
        g.samples = g.pending.total;
        long last = parent.lastScaleEventNs;
        if (last != NEVER && (last >= nowNs || nowNs - last < MIN_ADJUST_NS)) return;

        if (met(g, g.pending) && met(g, stat)) {
            if (g.pending.total < MIN_GOOD_SAMPLES) return;
            if (parent.scaleGroup == g) {
                parent.lastScaleEventNs = nowNs;
                moveCookie(parent, true);
            }
        } else if (parent.scaleLatNs == 0 || parent.scaleLatNs >= g.targetNs) {
            parent.lastScaleEventNs = nowNs;
            if (parent.scaleGroup == null || parent.scaleLatNs > g.targetNs) {
                parent.scaleLatNs = g.targetNs;
                parent.scaleGroup = g;
            }
            moveCookie(parent, false);
        }
        g.pending.reset();
    }

    /** calc_load: the kernel's fixed-point EWMA, {@code exp}/2048 of the old value. */
    static long calcLoad(long load, long exp, long active) {
        long next = load * exp + active * (FIXED_1 - exp);
        if (active >= load) next += FIXED_1 - 1;
        return next / FIXED_1;
    }

    /**
     * scale_cookie_change: down by qd/4, up by qd/16; once the cookie is more than qd below its
     * default it moves by 1, and it never goes more than 2 qd below, so that a long hole is
     * climbed out of slowly but not forever.
     */
    private void moveCookie(LatencyGroup parent, boolean up) {
        long qd = queueDepth;
        long old = parent.childCookie;
        long diff = old < DEFAULT_SCALE_COOKIE ? DEFAULT_SCALE_COOKIE - old : 0;
        long next;
        if (up) {
            long scale = step(true);
            if (old + scale > DEFAULT_SCALE_COOKIE) next = DEFAULT_SCALE_COOKIE;
            else if (diff > qd) next = old + 1;
            else next = old + scale;
        } else if (diff > qd) {
            next = diff < 2 * qd ? old - 1 : old;
        } else {
            next = old - step(false);
        }
        parent.childCookie = (int) next;
    }

    // ================================================================ issuer delay (blk-cgroup)

    private static void addDelay(LatencyGroup g, long nowNs, long deltaNs) {
        decayDelay(g, nowNs);
        g.delayNs += deltaNs;
    }

    /**
     * blkcg_scale_delay: at most once a second, what was owed at the previous such point is
     * forgiven (at least half of it when the group was unthrottled meanwhile).
     */
    private static void decayDelay(LatencyGroup g, long nowNs) {
        if (g.delayStartNs != NEVER && nowNs - g.delayStartNs <= DELAY_DECAY_PERIOD_NS) return;
        long elapsed = g.delayStartNs == NEVER ? Long.MAX_VALUE : nowNs - g.delayStartNs;
        long forgive = Math.min(g.lastDelayNs, elapsed);
        if (g.useDelay < g.lastUseDelay) forgive = Math.max(forgive, g.lastDelayNs >> 1);
        if (g.delayNs < forgive) {
            g.delayNs = 0;
            g.lastDelayNs = 0;
        } else {
            g.delayNs -= forgive;
            g.lastDelayNs = g.delayNs;
        }
        g.lastUseDelay = g.useDelay;
        g.delayStartNs = nowNs;
    }

    /** blkcg_maybe_throttle_blkg: the largest delay owed on the way to the root, at most 250 ms. */
    private static long issuerDelayNs(LatencyGroup leaf, long nowNs) {
        long delay = 0;
        for (LatencyGroup g = leaf; !g.isRoot(); g = g.parent) {
            if (g.useDelay == 0) continue;
            decayDelay(g, nowNs);
            delay = Math.max(delay, g.delayNs);
        }
        return Math.min(delay, MAX_ISSUER_DELAY_NS);
    }

    // ================================================================ the periodic timer

    @Override
    public void releaseDue(long nowNs, Resumer resumer) {
        if (timerNs > nowNs) return;
        timerNs = Long.MAX_VALUE;
        for (LatencyGroup g : groups) tick(g, nowNs);
    }

    /**
     * blkiolatency_timer_fn for one parent whose children are throttled: with no victim the
     * cookie steps up; a victim that caused no scale event for 5 s is forgotten, so the next
     * tick starts the recovery.
     */
    private void tick(LatencyGroup parent, long nowNs) {
        if (parent.childCookie >= DEFAULT_SCALE_COOKIE) return;
        long last = parent.lastScaleEventNs;
        if (last != NEVER && last >= nowNs) return;
        if (parent.scaleGroup == null) {
            moveCookie(parent, true);
        } else if (last == NEVER || nowNs - last >= VICTIM_TIMEOUT_NS) {
            parent.scaleGroup = null;
        }
    }

    @Override
    public long nextWakeNs() {
        return timerNs;
    }

    // ================================================================ cancel, offline, configuration

    /** The request waits at some level: it leaves that queue and gives back the slots it took below. */
    @Override
    public boolean cancel(IoRequest io, PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        LatencyGroup leaf = state(dg);
        for (LatencyGroup g = leaf; !g.isRoot(); g = g.parent) {
            if (!g.waiters.remove(io)) continue;
            for (LatencyGroup below = leaf; below != g; below = below.parent) {
                below.inflight--;
                wake(below, nowNs, resumer);
            }
            return true;
        }
        return false;
    }

    /** A later stage dropped a request that holds a slot at every level: the slots come back. */
    @Override
    public void cleanup(IoRequest io, PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        for (LatencyGroup g = state(dg); !g.isRoot(); g = g.parent) {
            g.inflight--;
            wake(g, nowNs, resumer);
        }
    }

    /** pd_offline: as writing target=max; what waits here climbs on at once. */
    @Override
    public void onGroupOffline(PolicyDeviceGroup dg, long nowNs, Resumer resumer) {
        LatencyGroup g = state(dg);
        setTarget(g, 0, nowNs);
        g.maxDepth = UNLIMITED_DEPTH;
        wake(g, nowNs, resumer);
        groups.remove(g);
    }

    /**
     * iolatency_set_min_lat_nsec and iolatency_clear_scaling: sets the target (0 removes it) and
     * its window; a changed target restarts the parent's scaling (cookie back to default, no
     * victim). A first target starts its window now.
     */
    void setTarget(LatencyGroup g, long targetNs, long nowNs) {
        long old = g.targetNs;
        g.targetNs = targetNs;
        long window = targetNs > MAX_WINDOW_NS >> WINDOW_TARGETS_SHIFT ? MAX_WINDOW_NS : targetNs << WINDOW_TARGETS_SHIFT;
        g.windowNs = Math.clamp(window, MIN_WINDOW_NS, MAX_WINDOW_NS);
        if (old == 0 && targetNs != 0) {
            targets++;
            g.windowStartNs = nowNs;
        }
        if (old != 0 && targetNs == 0) {
            g.useDelay = 0;
            targets--;
        }
        if (old != targetNs && g.parent != null) {
            LatencyGroup parent = g.parent;
            parent.childCookie = DEFAULT_SCALE_COOKIE;
            parent.lastScaleEventNs = NEVER;
            parent.scaleGroup = null;
            parent.scaleLatNs = 0;
        }
    }

    /**
     * With the debug switch on (the kernel's {@code blkcg_debug_stats}): blk-cgroup's
     * {@code use_delay= delay_nsec=} while a delay is in use, then iolatency's fields,
     * {@code missed= total= depth=} (non-rotational) or {@code depth= avg_lat= win=}
     * (rotational; µs and ms).
     */
    @Override
    public void appendStat(PolicyDeviceGroup dg, StringBuilder line) {
        if (!debugStats) return;
        LatencyGroup g = state(dg);
        int useDelay = g.useDelay;
        if (useDelay != 0) line.append(" use_delay=").append(useDelay).append(" delay_nsec=").append(g.delayNs);
        int depth = g.maxDepth;
        String shownDepth = depth == UNLIMITED_DEPTH ? "max" : Integer.toString(depth);
        if (rotational) {
            line.append(" depth=").append(shownDepth)
                .append(" avg_lat=").append(g.averageLatencyNs / NS_PER_US)
                .append(" win=").append(g.windowNs / NS_PER_MS);
        } else {
            line.append(" missed=").append(g.window.missed).append(" total=").append(g.window.total)
                .append(" depth=").append(shownDepth);
        }
    }
}
