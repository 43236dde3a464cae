package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse;

import java.util.List;

import static io.iotarget.iocontrol.policy.cost.CostTunables.WEIGHT_MAX;
import static io.iotarget.iocontrol.policy.cost.CostTunables.WEIGHT_MIN;
import static io.iotarget.iocontrol.policy.cost.CostTunables.WEIGHT_ONE;

/**
 * io.weight, as blk-iocost reads and writes it (ioc_weight_write).
 * <pre>
 * read:  default W            then   MAJ:MIN W   for each device override
 * write: W | default W        sets the group's default (re-evaluated on every device at once)
 *        MAJ:MIN W            sets an override for one device
 *        MAJ:MIN default      removes that override
 * </pre>
 * As in the kernel, a write with a ':' anywhere is a per-device line; W is decimal (leading
 * whitespace skipped, {@code 0100} is 100) and must be in [1, 10000]; {@code default} must
 * start the text and may be followed directly by W ({@code default80}). Everything else is
 * EINVAL. A device's name works in place of MAJ:MIN (an iotarget extension), except that
 * {@code default W} always sets the default. A per-device line needs iocost to be set up on
 * the device first, by a write to io.cost.qos or io.cost.model (EOPNOTSUPP otherwise), as the
 * kernel's {@code blkg_conf_prep} refuses a policy not active on the queue.
 * Refused on purpose where the kernel accepts (docs/decisions.md): anything after the weight
 * or after {@code default} — the kernel ignores the rest of the write, further lines included —
 * and a number past 2^32 that wraps into the range.
 */
final class IoWeightFile extends InterfaceFile {
    private static final String EXPECTED = "an integer in " + WEIGHT_MIN + ".." + WEIGHT_MAX;

    private final PolicyHost host;
    private final CostPolicy policy;

    IoWeightFile(PolicyHost host, CostPolicy policy) {
        super("io.weight", Placement.NOT_ON_ROOT, true);
        this.host = host;
        this.policy = policy;
    }

    /** Weights change only under the tree lock, which the controller holds around reads too. */
    @Override
    public String read(PolicyGroup group) {
        return "default " + policy.defaultWeight(group) + "\n" + deviceLines(group, dg -> {
            long w = policy.device(dg.device()).state(dg).cfgWeight;
            return w != 0 ? " " + w / WEIGHT_ONE : null;
        });
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public void write(PolicyGroup group, String text) throws ControlException {
        if (!perDevice(text)) {
            writeDefault(group, text);
            return;
        }
        // The kernel's order: the device (blkg_conf_open_bdev), the policy on it (blkg_conf_prep), the value.
        DeviceLine line = DeviceLine.parse(host, text);
        CostDevice device = policy.device(line.device());
        if (device.config() == null) {
            throw new ControlException(Errno.EOPNOTSUPP, "iocost is not set up on " + line.device().device().number()
                    + " (write io.cost.qos or io.cost.model for it first)");
        }
        String body = line.body();
        long w = body.startsWith("default") ? 0 : weight(body, 0);
        if (w == 0) onlyWhitespaceAfter(body, "default".length());
        host.configure(group, line.device(), (dg, nowNs) -> {
            CostGroup g = device.state(dg);
            g.cfgWeight = w * WEIGHT_ONE;
            device.weightUpdated(g, nowNs);
        });
    }

    /**
     * The kernel's rule: a write with a ':' names a device. iotarget also takes a device's name
     * in place of MAJ:MIN ("scratch 300"), but "default W" and "W" keep their meaning even
     * for a device named "default" (use its MAJ:MIN).
     */
    private boolean perDevice(String text) {
        if (text.indexOf(':') >= 0) return true;
        List<String> tokens = KernelParse.tokens(text);
        if (tokens.size() < 2 || tokens.getFirst().equals("default")) return false;
        for (PolicyDevice dc : host.devices()) if (dc.device().name().equals(tokens.getFirst())) return true;
        return false;
    }

    /** sscanf "default %u", else "%u". */
    private void writeDefault(PolicyGroup group, String text) throws ControlException {
        int w = weight(text, text.startsWith("default") ? "default".length() : 0);
        if (!group.online()) throw new ControlException(Errno.ENODEV, group.path() + " was removed");
        policy.groupWeight(group).defaultWeight = w;
        for (PolicyDeviceGroup dg : group.deviceGroups()) {
            CostDevice device = policy.device(dg.device());
            host.configure(group, dg.device(), (pair, nowNs) -> device.weightUpdated(device.state(pair), nowNs));
        }
    }

    /** A weight read with "%u" from {@code from}, and nothing but whitespace after it. */
    private static int weight(String text, int from) throws ControlException {
        KernelParse.Scanned n = KernelParse.scanDecimal(text, from);
        String shown = KernelParse.strip(text);
        if (n == null || n.overflow() || Long.compareUnsigned(n.value(), WEIGHT_MAX) > 0 || n.value() < WEIGHT_MIN) {
            throw KernelParse.invalid("weight", shown, EXPECTED);
        }
        onlyWhitespaceAfter(text, n.end());
        return (int) n.value();
    }

    private static void onlyWhitespaceAfter(String text, int from) throws ControlException {
        if (KernelParse.skipSpaces(text, from) != text.length()) {
            throw new ControlException(Errno.EINVAL, "'" + KernelParse.strip(text) + "': one weight per write, and nothing after it");
        }
    }
}
