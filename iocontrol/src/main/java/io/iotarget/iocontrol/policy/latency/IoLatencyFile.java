package io.iotarget.iocontrol.policy.latency;

import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse;

import static io.iotarget.iocontrol.policy.latency.LatencyTunables.NS_PER_US;

/**
 * io.latency, as blk-iolatency reads and writes it (iolatency_set_limit, Linux 6.1).
 * <pre>
 * read:  MAJ:MIN target=US                 (devices where the group has a target)
 * write: MAJ:MIN target=US|max             0 and max remove the target
 * </pre>
 * After the device key the body is split on single spaces (strsep), and every piece must be
 * {@code key=value} with a key of 1 to 15 characters, the key {@code target} and the value
 * {@code max} or a decimal number of microseconds; anything else is EINVAL, an empty piece
 * (two spaces, a trailing space, an empty body) included. The last {@code target} wins; nothing
 * changes unless the whole line is good. Refused on purpose where the kernel accepts
 * (docs/decisions.md): characters after the value ({@code target=10k}, {@code target=10\tfoo},
 * a second line), a value longer than the 20 characters the kernel reads (it drops the rest),
 * and a number whose nanoseconds do not fit 63 bits (the kernel's u64 wraps past 2^64 µs/1000).
 */
final class IoLatencyFile extends InterfaceFile {
    /** The kernel reads a piece with "%15[^=]=%20s". */
    private static final int MAX_KEY = 15;
    private static final int MAX_VALUE = 20;

    private final PolicyHost host;
    private final LatencyPolicy policy;

    IoLatencyFile(PolicyHost host, LatencyPolicy policy) {
        super("io.latency", Placement.NOT_ON_ROOT, true);
        this.host = host;
        this.policy = policy;
    }

    @Override
    public String read(PolicyGroup group) {
        return deviceLines(group, dg -> {
            long targetNs = ((LatencyGroup) dg.policyState(policy.index())).targetNs;
            return targetNs != 0 ? " target=" + targetNs / NS_PER_US : null;
        });
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public void write(PolicyGroup group, String text) throws ControlException {
        DeviceLine line = DeviceLine.parse(host, text);
        long targetNs = 0;
        for (String piece : line.body().split(" ", -1)) targetNs = parsePiece(piece);
        long newTargetNs = targetNs;
        host.configure(group, line.device(), (dg, nowNs) -> {
            LatencyDevice device = (LatencyDevice) dg.device().policy(policy.index());
            device.setTarget(device.state(dg), newTargetNs, nowNs);
        });
    }

    /** One {@code target=VALUE} piece: the target in ns, 0 for none. */
    private static long parsePiece(String piece) throws ControlException {
        int eq = piece.indexOf('=');
        if (eq <= 0 || eq > MAX_KEY || eq == piece.length() - 1) {
            throw new ControlException(Errno.EINVAL, "'" + piece.strip() + "' (expected: target=<µs> or target=max)");
        }
        String key = piece.substring(0, eq);
        // %20s: whitespace skipped, then the value up to the next whitespace.
        int start = KernelParse.skipSpaces(piece, eq + 1);
        int end = start;
        while (end < piece.length() && !KernelParse.isSpace(piece.charAt(end))) end++;
        String value = piece.substring(start, end);
        if (!key.equals("target")) throw new ControlException(Errno.EINVAL, "unknown key '" + key + "' (expected: target)");
        if (value.equals("max")) return checkRest(piece, end, 0);
        KernelParse.Scanned n = value.isEmpty() ? null : KernelParse.scanDecimal(value, 0);
        if (n == null) throw KernelParse.invalid(key, value, "a decimal number of µs or max");
        if (n.end() != value.length() || value.length() > MAX_VALUE) throw KernelParse.invalid(key, value, "only digits, at most " + MAX_VALUE);
        if (n.overflow() || n.value() < 0 || n.value() > Long.MAX_VALUE / NS_PER_US) {
            throw KernelParse.invalid(key, value, "at most " + Long.MAX_VALUE / NS_PER_US + " µs");
        }
        return checkRest(piece, end, n.value() * NS_PER_US);
    }

    /** Only whitespace may follow the value (the kernel ignores whatever does). */
    private static long checkRest(String piece, int end, long targetNs) throws ControlException {
        if (KernelParse.skipSpaces(piece, end) != piece.length()) {
            throw new ControlException(Errno.EINVAL, "'" + piece.strip() + "': characters after the value");
        }
        return targetNs;
    }
}
