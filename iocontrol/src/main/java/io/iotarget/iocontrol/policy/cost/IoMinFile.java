package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.file.RateLimits;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

/**
 * io.min: guaranteed minimums (package documentation, section 12). Not a Linux file: the
 * kernel's only floor for block IO was blk-throttle's best-effort io.low, removed with
 * CONFIG_BLK_DEV_THROTTLING_LOW (docs/decisions.md).
 * <pre>
 * read:  MAJ:MIN rbps=N wbps=N riops=N wiops=N     (devices with some minimum; 0 = none)
 * write: MAJ:MIN [rbps=N] [wbps=N] [riops=N] [wiops=N]
 * </pre>
 * io.max's syntax and errors ({@link RateLimits}), as a floor: {@code max} is EINVAL, 0 removes
 * a minimum, a value of 2^63 or more is ERANGE. Keys not named keep their value. Like a
 * per-device io.weight, a line needs iocost set up on the device (io.cost.qos or
 * io.cost.model written for it first), else EOPNOTSUPP: the device model is the capacity
 * minimums are measured against.
 */
final class IoMinFile extends InterfaceFile {
    private final PolicyHost host;
    private final CostPolicy policy;

    IoMinFile(PolicyHost host, CostPolicy policy) {
        super("io.min", Placement.NOT_ON_ROOT, true);
        this.host = host;
        this.policy = policy;
    }

    /** Minimums change only under the tree lock, which the controller holds around reads too. */
    @Override
    public String read(PolicyGroup group) {
        return deviceLines(group, dg -> {
            long[] min = policy.device(dg.device()).state(dg).minimum;
            if ((min[0] | min[1] | min[2] | min[3]) == 0) return null;
            StringBuilder sb = new StringBuilder();
            for (int k = 0; k < RateLimits.KEYS.length; k++) sb.append(' ').append(RateLimits.KEYS[k]).append('=').append(min[k]);
            return sb.toString();
        });
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public void write(PolicyGroup group, String text) throws ControlException {
        DeviceLine line = DeviceLine.parse(host, text);
        Long[] given = RateLimits.parse(line.body(), RateLimits.Kind.FLOOR);
        for (int k = 0; k < given.length; k++) {
            if (given[k] != null && given[k] < 0) {
                throw new ControlException(Errno.ERANGE, RateLimits.KEYS[k] + "=" + Long.toUnsignedString(given[k]) + " (expected: below 2^63)");
            }
        }
        CostDevice device = policy.device(line.device());
        if (device.config() == null) {
            throw new ControlException(Errno.EOPNOTSUPP, "iocost is not set up on " + line.device().device().number()
                    + " (write io.cost.qos or io.cost.model for it first)");
        }
        host.configure(group, line.device(), (dg, nowNs) -> {
            CostGroup g = device.state(dg);
            boolean had = (g.minimum[0] | g.minimum[1] | g.minimum[2] | g.minimum[3]) != 0;
            for (int k = 0; k < given.length; k++) if (given[k] != null) g.minimum[k] = given[k];
            device.minimums.updated(g, had);
        });
    }
}
