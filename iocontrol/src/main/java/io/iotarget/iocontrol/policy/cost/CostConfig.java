package io.iotarget.iocontrol.policy.cost;

import io.iotarget.model.ControlException;
import io.iotarget.model.tree.KernelParse;

import java.util.ArrayList;
import java.util.List;

/**
 * What io.cost.qos and io.cost.model show for one device: published as a whole by the device's
 * policy under its lock, read by the files and the IO path's hint without it. Immutable.
 *
 * @param enabled   io.cost.qos enable=1: IO on the device is costed and paced
 * @param userQos   io.cost.qos ctrl=user: {@link #qos} was written, not taken from {@link #autop}
 * @param qos       the QoS parameters in effect
 * @param userModel io.cost.model ctrl=user
 * @param model     the cost model in effect
 * @param autop     the built-in set that fills in what the user did not set
 */
record CostConfig(boolean enabled, boolean userQos, QosParams qos, boolean userModel, LinearModel model, AutoParams autop) {
    /**
     * {@code key=value} tokens of io.cost.qos and io.cost.model, as the kernel's match_token
     * takes them: a token without '=' or with an empty value matches no pattern.
     *
     * @return the token as {key, value}, or null when it matches no pattern
     */
    static String[] keyValue(String token) {
        int eq = token.indexOf('=');
        return eq <= 0 || eq == token.length() - 1 ? null : new String[]{token.substring(0, eq), token.substring(eq + 1)};
    }

    /** What strsep splits the io.cost files' tokens on: not \r, \v or \f, which stay in the token. */
    static final String SEPARATORS = " \t\n";

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

    /**
     * What a save replays of io.cost.qos or io.cost.model: each line as read, except that under
     * {@code ctrl=auto} the parameters that follow are the built-in ones and are left out — the
     * kernel's write takes any parameter as {@code ctrl=user}.
     */
    static List<String> replay(String read) {
        List<String> writes = new ArrayList<>();
        for (String line : read.lines().toList()) {
            int auto = line.indexOf(" ctrl=auto");
            writes.add(auto < 0 ? line : line.substring(0, auto + " ctrl=auto".length()));
        }
        return writes;
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
