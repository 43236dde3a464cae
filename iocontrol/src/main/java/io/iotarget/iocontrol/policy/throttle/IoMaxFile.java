package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.DeviceGroup;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.PolicyHost;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse;

/**
 * io.max, as blk-throttle reads and writes it (tg_set_limit), and io.max.global in the same
 * syntax (section 8 of the package documentation).
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
 * next token. io.max.global reads each device by its backend's name rather than MAJ:MIN,
 * since the name is what every node of a cluster shares; it takes either on write.
 */
final class IoMaxFile extends InterfaceFile {
    /** The kernel reads each token with "%26s". */
    private static final int MAX_TOKEN = 26;
    private static final String[] KEYS = {"rbps", "wbps", "riops", "wiops"};
    /** io.max.burst's extra key: how long a full credit lasts at the burst rate, seconds. */
    static final String LEN_KEY = "len";

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
    public String read(Group group) {
        StringBuilder sb = new StringBuilder();
        for (DeviceGroup dg : group.deviceGroups()) {
            // Limits change only under the tree lock, which the caller holds: the four are consistent.
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            if (scope == Scope.LOCAL ? !tg.limited() : !tg.globallyLimited()) continue;
            long[] bps = scope == Scope.LOCAL ? tg.bps : tg.globalBps;
            long[] iops = scope == Scope.LOCAL ? tg.iops : tg.globalIops;
            sb.append(scope == Scope.LOCAL ? dg.device().device().number().toString() : dg.device().device().name());
            appendLimits(sb, bps, iops).append('\n');
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
        DeviceLine line = DeviceLine.parse(host, text);
        Long[] given = parse(line.body(), false);
        host.configure(group, line.device(), (dg, nowNs) -> {
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            long[] bps = (scope == Scope.LOCAL ? tg.bps : tg.globalBps).clone();
            long[] iops = (scope == Scope.LOCAL ? tg.iops : tg.globalIops).clone();
            for (int k = 0; k < 4; k++) {
                if (given[k] == null) continue;
                if (k < 2) bps[k] = given[k];
                else iops[k - 2] = given[k];
            }
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
     * The values a line's body gives, in {@link #KEYS} order (then {@code len} when
     * {@code withLen}: io.max.burst), null for a key it leaves out; errors as the class
     * documentation says. {@code len} is whole seconds, 1 to
     * {@link ThrottleGroup#MAX_BURST_LEN_SEC} (ERANGE beyond; "max" is EINVAL).
     */
    static Long[] parse(String body, boolean withLen) throws ControlException {
        Long[] given = new Long[withLen ? KEYS.length + 1 : KEYS.length];
        for (String token : KernelParse.tokens(body)) {
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
            int k = withLen && key.equals(LEN_KEY) ? KEYS.length : indexOf(key);
            if (k < 0) throw new ControlException(Errno.EINVAL, "unknown key '" + key + "' (expected: rbps, wbps, riops or wiops" + (withLen ? ", len)" : ")"));
            if (v == 1 && k < KEYS.length) throw new ControlException(Errno.EINVAL, key + "=1 (expected: > 1 or max, as Linux 6.1)");
            if (n != null && (n.end() != value.length() || n.overflow())) throw KernelParse.invalid(key, value, "a decimal number below 2^64 or max");
            if (split) throw new ControlException(Errno.EINVAL, "'" + token + "' is longer than " + MAX_TOKEN + " characters");
            if (k == KEYS.length) {
                if (n == null) throw KernelParse.invalid(key, value, "seconds, 1 to " + ThrottleGroup.MAX_BURST_LEN_SEC);
                if (Long.compareUnsigned(v, ThrottleGroup.MAX_BURST_LEN_SEC) > 0) {
                    throw new ControlException(Errno.ERANGE, key + "=" + value + " (expected: seconds, 1 to " + ThrottleGroup.MAX_BURST_LEN_SEC + ")");
                }
            }
            if ((k == 2 || k == 3) && Long.compareUnsigned(v, ThrottleGroup.IOPS_MAX) > 0) v = ThrottleGroup.IOPS_MAX;
            given[k] = v;
        }
        return given;
    }

    /** rbps=... wbps=... riops=... wiops=... of one pair, as io.max and io.max.burst read them. */
    static StringBuilder appendLimits(StringBuilder sb, long[] bps, long[] iops) {
        return sb.append(" rbps=").append(bps(bps[ThrottleGroup.READ])).append(" wbps=").append(bps(bps[ThrottleGroup.WRITE]))
                 .append(" riops=").append(iops(iops[ThrottleGroup.READ])).append(" wiops=").append(iops(iops[ThrottleGroup.WRITE]));
    }

    private static int indexOf(String key) {
        for (int i = 0; i < KEYS.length; i++) if (KEYS[i].equals(key)) return i;
        return -1;
    }
}
