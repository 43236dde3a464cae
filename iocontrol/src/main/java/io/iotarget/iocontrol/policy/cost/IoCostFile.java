package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.host.PolicyDevice;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse;

import java.util.ArrayList;
import java.util.List;

/**
 * What io.cost.qos and io.cost.model have in common, as the kernel's ioc_qos_write and
 * ioc_cost_model_write do: root only; one line per device iocost is set up on; a write is
 * {@code MAJ:MIN} then {@code key=value} tokens split on space, tab and newline only (strsep:
 * a \r, \v or \f stays in its token), merged over the device's current values; and, as in
 * the kernel, a write naming a device sets iocost up there (disabled) before its tokens are
 * read, so a write that fails afterwards still leaves the device's line in place. A file
 * says how it prints a device's values ({@link #appendValues}) and what its tokens mean
 * ({@link #parse}).
 */
abstract sealed class IoCostFile extends InterfaceFile permits IoCostQosFile, IoCostModelFile {
    /** What strsep splits the tokens on: not \r, \v or \f, which stay in the token. */
    private static final String SEPARATORS = " \t\n";

    /** A parsed write, applied to the device under its lock. */
    @FunctionalInterface
    interface Update {
        void apply(CostDevice device, long nowNs);
    }

    private final PolicyHost host;
    private final CostPolicy policy;
    /** The tokens the file takes, for error messages: "enable=N, ctrl=auto|user, ...". */
    private final String expected;

    IoCostFile(String name, String expected, PolicyHost host, CostPolicy policy) {
        super(name, Placement.ONLY_ON_ROOT, true);
        this.expected = expected;
        this.host = host;
        this.policy = policy;
    }

    /** Appends a device's values after its {@code MAJ:MIN}, each with a leading space. */
    abstract void appendValues(StringBuilder sb, CostConfig config);

    /**
     * Reads the tokens of a write over {@code current} (what is shown now).
     *
     * @throws ControlException EINVAL for an unknown token or a bad value; nothing applied then
     */
    abstract Update parse(CostConfig current, List<String> tokens) throws ControlException;

    @Override
    public final String read(PolicyGroup group) {
        StringBuilder sb = new StringBuilder();
        for (PolicyDevice dc : host.devices()) {
            CostConfig c = policy.device(dc).config();
            if (c == null) continue;
            sb.append(dc.device().number());
            appendValues(sb, c);
            sb.append('\n');
        }
        return sb.toString();
    }

    @Override
    public final boolean writable() {
        return true;
    }

    /**
     * What a save replays: each line as read, except that under {@code ctrl=auto} the
     * parameters that follow are the built-in ones and are left out — the kernel's write takes
     * any parameter as {@code ctrl=user}.
     */
    @Override
    public final List<String> replay(PolicyGroup group) {
        List<String> writes = new ArrayList<>();
        for (String line : read(group).lines().toList()) {
            int auto = line.indexOf(" ctrl=auto");
            writes.add(auto < 0 ? line : line.substring(0, auto + " ctrl=auto".length()));
        }
        return writes;
    }

    @Override
    public final void write(PolicyGroup group, String text) throws ControlException {
        DeviceLine line = DeviceLine.parse(host, text);
        CostDevice device = policy.device(line.device());
        host.configure(host.root(), line.device(), (dg, nowNs) -> device.setUp(nowNs));
        // The controller holds the tree lock, which serializes configuration writes: the merge
        // starts from what is current.
        Update update = parse(device.config(), KernelParse.tokens(line.body(), SEPARATORS));
        host.configure(host.root(), line.device(), (dg, nowNs) -> update.apply(device, nowNs));
    }

    /**
     * A {@code key=value} token as the kernel's match_token takes it: one without '=' or with
     * an empty value matches no pattern, which is EINVAL.
     *
     * @return {key, value}
     */
    final String[] keyValue(String token) throws ControlException {
        int eq = token.indexOf('=');
        if (eq <= 0 || eq == token.length() - 1) throw unknown(token);
        return new String[]{token.substring(0, eq), token.substring(eq + 1)};
    }

    final ControlException unknown(String token) {
        return new ControlException(Errno.EINVAL, "'" + token + "' (expected: " + expected + ")");
    }

    /**
     * match_token's {@code %u} then match_u64: the whole value is one base-0 number
     * ({@code 010} is 8, {@code 0x10} is 16). A number past 2^64 is EINVAL too, as the kernel's
     * match_u64 failure is (for {@code enable} the kernel ignores that failure and reads whatever
     * its variable held; iotarget refuses it).
     */
    static long number(String key, String value) throws ControlException {
        try {
            return KernelParse.parseU64(key, value);
        } catch (ControlException e) {
            throw KernelParse.invalid(key, value, "an unsigned number below 2^64 (0x.. hex, 0.. octal)");
        }
    }

    /** {@code ctrl=auto|user}: whether the parameters are the user's. */
    static boolean userCtrl(String key, String value) throws ControlException {
        return switch (value) {
            case "auto" -> false;
            case "user" -> true;
            default -> throw KernelParse.invalid(key, value, "auto or user");
        };
    }
}
