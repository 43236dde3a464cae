package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.DeviceGroup;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse;

/**
 * io.max, as blk-throttle reads and writes it (tg_set_limit).
 * <pre>
 * read:  MAJ:MIN rbps=N|max wbps=N|max riops=N|max wiops=N|max    (devices with some limit)
 * write: MAJ:MIN [rbps=V] [wbps=V] [riops=V] [wiops=V]             V = decimal or max
 * </pre>
 * Tokens are split on whitespace and read 26 characters at a time. Per token, in the kernel's
 * order: no '=' or no decimal digit after it (and not "max"): EINVAL; a value of 0: ERANGE
 * (before the key is looked at, so {@code foo=0} and {@code rbps=0x10} are ERANGE); an unknown
 * key or a value of 1: EINVAL. iops above 2^32 - 1 read back as max. The line is parsed whole
 * before anything changes. Refused on purpose where the kernel accepts (docs/decisions.md):
 * characters after the number ({@code rbps=10k}), a number past 2^64 that wraps to one the
 * kernel takes, and a token longer than 26 characters, whose rest the kernel reads as the
 * next token.
 */
final class IoMaxFile extends InterfaceFile {
    /** The kernel reads each token with "%26s". */
    private static final int MAX_TOKEN = 26;
    private static final String[] KEYS = {"rbps", "wbps", "riops", "wiops"};

    private final IoController controller;
    private final ThrottlePolicy policy;

    IoMaxFile(IoController controller, ThrottlePolicy policy) {
        super("io.max", Placement.NOT_ON_ROOT, true);
        this.controller = controller;
        this.policy = policy;
    }

    @Override
    public String read(Group group) {
        StringBuilder sb = new StringBuilder();
        for (DeviceGroup dg : group.deviceGroups()) {
            // Limits change only under the tree lock, which the caller holds: the four are consistent.
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            if (!tg.limited()) continue;
            sb.append(dg.device().device().number())
              .append(" rbps=").append(bps(tg.bps[ThrottleGroup.READ])).append(" wbps=").append(bps(tg.bps[ThrottleGroup.WRITE]))
              .append(" riops=").append(iops(tg.iops[ThrottleGroup.READ])).append(" wiops=").append(iops(tg.iops[ThrottleGroup.WRITE]))
              .append('\n');
        }
        return sb.toString();
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
    public void write(Group group, String text) throws ControlException {
        DeviceLine line = DeviceLine.parse(controller, text);
        Long[] given = new Long[4];
        for (String token : KernelParse.tokens(line.body())) {
            boolean split = token.length() > MAX_TOKEN;
            String piece = split ? token.substring(0, MAX_TOKEN) : token;
            int eq = piece.indexOf('=');
            if (eq < 0) throw new ControlException(Errno.EINVAL, "'" + token + "' (expected: key=value)");
            String key = piece.substring(0, eq);
            String value = piece.substring(eq + 1);
            KernelParse.Scanned n = value.equals("max") ? null : KernelParse.scanDecimal(value, 0);
            if (n == null && !value.equals("max")) throw KernelParse.invalid(key, value, "a decimal number or max");
            long v = n == null ? KernelParse.U64_MAX : n.value();
            if (v == 0) throw new ControlException(Errno.ERANGE, key + "=" + value + " (expected: > 0 or max)");
            int k = indexOf(key);
            if (k < 0) throw new ControlException(Errno.EINVAL, "unknown key '" + key + "' (expected: rbps, wbps, riops or wiops)");
            if (v == 1) throw new ControlException(Errno.EINVAL, key + "=1 (expected: > 1 or max, as Linux 6.1)");
            if (n != null && (n.end() != value.length() || n.overflow())) throw KernelParse.invalid(key, value, "a decimal number below 2^64 or max");
            if (split) throw new ControlException(Errno.EINVAL, "'" + token + "' is longer than " + MAX_TOKEN + " characters");
            if (k >= 2 && Long.compareUnsigned(v, ThrottleGroup.IOPS_MAX) > 0) v = ThrottleGroup.IOPS_MAX;
            given[k] = v;
        }
        controller.configure(group, line.device(), (dg, nowNs) -> {
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            long[] bps = tg.bps.clone();
            long[] iops = tg.iops.clone();
            for (int k = 0; k < 4; k++) {
                if (given[k] == null) continue;
                if (k < 2) bps[k] = given[k];
                else iops[k - 2] = given[k];
            }
            ThrottleDevice device = (ThrottleDevice) dg.device().policy(policy.index());
            device.setLimits(dg, bps, iops, nowNs);
            updateRules(dg.group(), dg.device());
        });
    }

    /** Recomputes has-rules for the group and every descendant on the device (parents first). */
    private void updateRules(Group group, DeviceControl dc) {
        DeviceGroup dg = group.deviceGroup(dc.device().index());
        if (dg != null) ((ThrottleGroup) dg.policyState(policy.index())).updateHasRules();
        for (Group child : group.children()) updateRules(child, dc);
    }

    private static int indexOf(String key) {
        for (int i = 0; i < KEYS.length; i++) if (KEYS[i].equals(key)) return i;
        return -1;
    }
}
