package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.file.RateLimits;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;

/**
 * io.max.burst (section 10 of the package documentation): the rate R each io.max limit may run
 * at while the group has credit, and len, how long a full credit lasts at R.
 * <pre>
 * read:  MAJ:MIN rbps=N|max wbps=N|max riops=N|max wiops=N|max len=S   (devices with some rate)
 * write: MAJ:MIN [rbps=V] [wbps=V] [riops=V] [wiops=V] [len=S]          V = decimal or max
 * </pre>
 * io.max's syntax and errors, plus {@code len} ({@link RateLimits.Kind#BURST}): whole seconds, 1 to
 * 86400, 1 when never given (QEMU's default burst length); 0 is ERANGE, as any 0, and so is more
 * than a day. Unspecified keys keep their value; a line whose four rates are all max disappears
 * and its len goes back to 1. A rate for a limit io.max does not set, or not above io.max's, is
 * kept but has no effect until io.max is below it (a dormant burst, not an error: the two files
 * are written in any order, and io.max may change later).
 */
final class IoMaxBurstFile extends InterfaceFile {
    private final PolicyHost host;
    private final ThrottlePolicy policy;

    IoMaxBurstFile(PolicyHost host, ThrottlePolicy policy) {
        super("io.max.burst", Placement.NOT_ON_ROOT, true);
        this.host = host;
        this.policy = policy;
    }

    @Override
    public String read(PolicyGroup group) {
        return deviceLines(group, dg -> {
            // Set only under the tree lock, which the caller holds.
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            return tg.bursting() ? IoMaxFile.limits(tg.burstBps, tg.burstIops) + " " + RateLimits.LEN_KEY + "=" + tg.burstLenSec : null;
        });
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public void write(PolicyGroup group, String text) throws ControlException {
        DeviceLine line = DeviceLine.parse(host, text);
        Long[] given = IoMaxFile.clampIops(RateLimits.parse(line.body(), RateLimits.Kind.BURST));
        host.configure(group, line.device(), (dg, nowNs) -> {
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            for (int k = 0; k < 4; k++) {
                if (given[k] == null) continue;
                if (k < 2) tg.burstBps[k] = given[k];
                else tg.burstIops[k - 2] = given[k];
            }
            if (given[RateLimits.LEN] != null) tg.burstLenSec = given[RateLimits.LEN];
            if (!tg.bursting()) tg.burstLenSec = ThrottleGroup.DEFAULT_BURST_LEN_SEC;
            ((ThrottleDevice) dg.device().policy(policy.index())).apply(dg, nowNs);
        });
    }
}
