package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.file.RateLimits;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;

/**
 * io.max, as blk-throttle reads and writes it (tg_set_limit), and io.max.global in the same
 * syntax (section 8 of the package documentation).
 * <pre>
 * read:  MAJ:MIN rbps=N|max wbps=N|max riops=N|max wiops=N|max    (devices with some limit)
 * write: MAJ:MIN [rbps=V] [wbps=V] [riops=V] [wiops=V]             V = decimal or max
 * </pre>
 * The tokens and their errors are {@link RateLimits}' (a ceiling: {@code max} allowed, 0 is
 * ERANGE, 1 EINVAL); iops above 2^32 - 1 read back as max. io.max.global reads each device by
 * its backend's name rather than MAJ:MIN, since the name is what every node of a cluster
 * shares; it takes either on write.
 */
final class IoMaxFile extends InterfaceFile {
    /** Which limits a file shows and sets. */
    enum Scope { LOCAL, GLOBAL }

    private final PolicyHost host;
    private final ThrottlePolicy policy;
    private final Scope scope;

    IoMaxFile(PolicyHost host, ThrottlePolicy policy, Scope scope) {
        super(scope == Scope.LOCAL ? "io.max" : "io.max.global", Placement.NOT_ON_ROOT, true);
        this.host = host;
        this.policy = policy;
        this.scope = scope;
    }

    @Override
    public String read(PolicyGroup group) {
        if (scope == Scope.GLOBAL) {
            return deviceLines(group, dg -> dg.device().device().name(), dg -> {
                ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
                return tg.globallyLimited() ? limits(tg.globalBps, tg.globalIops) : null;
            });
        }
        return deviceLines(group, dg -> {
            // Limits change only under the tree lock, which the caller holds: the four are consistent.
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            return tg.limited() ? limits(tg.bps, tg.iops) : null;
        });
    }

    private static String bps(long v) {
        return v == ThrottleGroup.BPS_MAX ? "max" : Long.toUnsignedString(v);
    }

    private static String iops(long v) {
        return v == ThrottleGroup.IOPS_MAX ? "max" : Long.toString(v);
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public void write(PolicyGroup group, String text) throws ControlException {
        DeviceLine line = DeviceLine.parse(host, text);
        Long[] given = parseLimits(line.body());
        host.configure(group, line.device(), (dg, nowNs) -> {
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            long[] bps = (scope == Scope.LOCAL ? tg.bps : tg.globalBps).clone();
            long[] iops = (scope == Scope.LOCAL ? tg.iops : tg.globalIops).clone();
            merge(given, bps, iops);
            ThrottleDevice device = (ThrottleDevice) dg.device().policy(policy.index());
            if (scope == Scope.LOCAL) {
                device.setLimits(dg, tg.bps, tg.iops, bps, iops, nowNs);
            } else {
                System.arraycopy(bps, 0, tg.globalBps, 0, 2);
                System.arraycopy(iops, 0, tg.globalIops, 0, 2);
                device.setLimits(dg, tg.shareBps, tg.shareIops, policy.startingShare(bps, ThrottleGroup.BPS_MAX), policy.startingShare(iops, ThrottleGroup.IOPS_MAX), nowNs);
            }
            policy.updateRules(dg.group(), dg.device());
        });
    }

    /**
     * The limits a line's body (after the device key) gives, as io.max reads them: {@link
     * RateLimits}' ceiling syntax and errors, iops above 2^32 - 1 taken as max. By {@link
     * RateLimits#KEYS} index, null where the line leaves one as it is.
     */
    static Long[] parseLimits(String body) throws ControlException {
        return clampIops(RateLimits.parse(body, RateLimits.Kind.CEILING));
    }

    /** {@code given} with riops and wiops above 2^32 - 1 lowered to max, as io.max and io.max.burst keep them. */
    static Long[] clampIops(Long[] given) {
        for (int k = RateLimits.RIOPS; k <= RateLimits.WIOPS; k++) {
            if (given[k] != null && Long.compareUnsigned(given[k], ThrottleGroup.IOPS_MAX) > 0) given[k] = ThrottleGroup.IOPS_MAX;
        }
        return given;
    }

    /** Sets the limits {@link #parseLimits} gave in {@code bps} and {@code iops}. */
    static void merge(Long[] given, long[] bps, long[] iops) {
        for (int k = 0; k < RateLimits.KEYS.length; k++) {
            if (given[k] == null) continue;
            if (k < 2) bps[k] = given[k];
            else iops[k - 2] = given[k];
        }
    }

    /** " rbps=... wbps=... riops=... wiops=..." of one pair, as io.max, io.max.per_host and io.max.burst read them. */
    static String limits(long[] bps, long[] iops) {
        return " rbps=" + bps(bps[ThrottleGroup.READ]) + " wbps=" + bps(bps[ThrottleGroup.WRITE])
               + " riops=" + iops(iops[ThrottleGroup.READ]) + " wiops=" + iops(iops[ThrottleGroup.WRITE]);
    }
}
