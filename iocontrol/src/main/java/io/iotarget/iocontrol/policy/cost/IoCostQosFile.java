package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse;

import java.util.List;

import static io.iotarget.iocontrol.policy.cost.CostTunables.VRATE_MAX_PPM;
import static io.iotarget.iocontrol.policy.cost.CostTunables.VRATE_MIN_PPM;

/**
 * io.cost.qos (root only), as blk-iocost reads and writes it.
 * <pre>
 * read:  MAJ:MIN enable=0|1 ctrl=auto|user rpct=P rlat=µs wpct=P wlat=µs min=P max=P
 *        one line per device on which iocost was set up; P printed with two decimals
 * write: MAJ:MIN [enable=N] [ctrl=auto|user] [rpct=P] [rlat=µs] [wpct=P] [wlat=µs] [min=P] [max=P]
 * </pre>
 * Tokens ({@link IoCostFile}: split on space, tab and newline only) come in any order, later
 * ones win. enable: a base-0 number, non-zero turns iocost on. Any of rpct, rlat, wpct, wlat,
 * min, max switches to ctrl=user (a later ctrl=auto in the same write switches back to the
 * built-in values). rlat/wlat are base-0 numbers ({@code 010} is 8
 * µs); rpct/wpct must be within [0, 100]; min/max must be ≥ 0 and are clamped to [1, 10000];
 * percentages keep two places (rounded). EINVAL for an unknown token, a bad number, a value
 * of 32 characters or more, or min &gt; max. Refused on purpose where the kernel accepts
 * (docs/decisions.md): characters after a percentage ({@code rpct=95\r}), latencies of 2^32 µs
 * and more (the kernel truncates them to 32 bits), and an {@code enable} past 2^64.
 */
final class IoCostQosFile extends IoCostFile {
    /** match_strlcpy into char buf[32]. */
    private static final int MAX_VALUE_CHARS = 31;

    IoCostQosFile(PolicyHost host, CostPolicy policy) {
        super("io.cost.qos", "enable=N, ctrl=auto|user, rpct=P, rlat=µs, wpct=P, wlat=µs, min=P or max=P", host, policy);
    }

    @Override
    void appendValues(StringBuilder sb, CostConfig c) {
        QosParams q = c.qos();
        sb.append(" enable=").append(c.enabled() ? 1 : 0).append(" ctrl=").append(c.userQos() ? "user" : "auto");
        appendPct(sb.append(" rpct="), q.readPpm());
        sb.append(" rlat=").append(q.readLatUs());
        appendPct(sb.append(" wpct="), q.writePpm());
        sb.append(" wlat=").append(q.writeLatUs());
        appendPct(sb.append(" min="), q.minPpm());
        appendPct(sb.append(" max="), q.maxPpm());
    }

    /** ppm as the kernel prints it: %u.%02u of ppm/10000 and ppm%10000/100. */
    private static void appendPct(StringBuilder sb, long ppm) {
        sb.append(ppm / 10_000).append('.');
        CostDevice.appendTwoDigits(sb, ppm % 10_000 / 100);
    }

    @Override
    Update parse(CostConfig current, List<String> tokens) throws ControlException {
        QosParams q = current.qos();
        boolean enable = current.enabled();
        boolean user = current.userQos();
        long readPpm = q.readPpm(), readLat = q.readLatUs(), writePpm = q.writePpm(), writeLat = q.writeLatUs();
        long min = q.minPpm(), max = q.maxPpm();
        for (String token : tokens) {
            String[] kv = keyValue(token);
            String key = kv[0];
            String value = kv[1];
            switch (key) {
                case "enable" -> {
                    enable = number(key, value) != 0;
                    continue;
                }
                case "ctrl" -> {
                    user = userCtrl(key, value);
                    continue;
                }
                case "rpct" -> readPpm = percentPpm(key, value);
                case "wpct" -> writePpm = percentPpm(key, value);
                case "rlat" -> readLat = latencyUs(key, value);
                case "wlat" -> writeLat = latencyUs(key, value);
                case "min" -> min = vratePpm(key, value);
                case "max" -> max = vratePpm(key, value);
                default -> throw unknown(token);
            }
            user = true;
        }
        if (min > max) {
            throw new ControlException(Errno.EINVAL, "min=" + pct(min) + " is above max=" + pct(max) + " (expected: min <= max)");
        }
        QosParams qos = new QosParams(readPpm, readLat, writePpm, writeLat, min, max);
        boolean enableFinal = enable;
        boolean userFinal = user;
        return (device, nowNs) -> device.writeQos(enableFinal, userFinal, qos, nowNs);
    }

    /** rpct/wpct: a percentage in [0, 100] with two decimals, kept in ppm. */
    private static long percentPpm(String key, String value) throws ControlException {
        long v = decimal(key, value);
        if (v < 0 || v > 10_000) throw KernelParse.invalid(key, value, "a percentage from 0 to 100");
        return v * 100;
    }

    /** rlat/wlat: µs, an unsigned 32-bit value in the kernel (larger values are refused rather than truncated). */
    private static long latencyUs(String key, String value) throws ControlException {
        long v = number(key, value);
        if (Long.compareUnsigned(v, KernelParse.U32_MAX) > 0) throw KernelParse.invalid(key, value, "microseconds below 2^32");
        return v;
    }

    /** min/max: a percentage ≥ 0, clamped to [1, 10000]. */
    private static long vratePpm(String key, String value) throws ControlException {
        long v = decimal(key, value);
        if (v < 0) throw KernelParse.invalid(key, value, "a percentage >= 0");
        return Math.clamp(Math.min(v, VRATE_MAX_PPM) * 100, VRATE_MIN_PPM, VRATE_MAX_PPM);
    }

    private static long decimal(String key, String value) throws ControlException {
        if (value.length() > MAX_VALUE_CHARS) throw KernelParse.invalid(key, value, "at most " + MAX_VALUE_CHARS + " characters");
        return KernelParse.parseDecimal(key, value, 2);
    }

    private static String pct(long ppm) {
        StringBuilder sb = new StringBuilder();
        appendPct(sb, ppm);
        return sb.toString();
    }
}
