package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.PolicyHost;
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
 * Tokens are split on space, tab and newline only (ioc_qos_write's strsep; a \r stays in its
 * token), in any order, later ones win. enable: a base-0 number, non-zero turns iocost on. Any
 * of rpct, rlat, wpct, wlat, min, max switches to ctrl=user (a later ctrl=auto in the same
 * write switches back to the built-in values). rlat/wlat are base-0 numbers ({@code 010} is 8
 * µs); rpct/wpct must be within [0, 100]; min/max must be ≥ 0 and are clamped to [1, 10000];
 * percentages keep two places (rounded). EINVAL for an unknown token, a bad number, a value
 * of 32 characters or more, or min &gt; max. As in the kernel, a write naming a device sets
 * iocost up there (disabled) before its tokens are read, so even a write that fails then
 * leaves the device's line in place. Refused on purpose where the kernel accepts
 * (docs/decisions.md): characters after a percentage ({@code rpct=95\r}), latencies of 2^32 µs
 * and more (the kernel truncates them to 32 bits), and an {@code enable} past 2^64.
 */
final class IoCostQosFile extends InterfaceFile {
    /** match_strlcpy into char buf[32]. */
    private static final int MAX_VALUE_CHARS = 31;

    private final PolicyHost host;
    private final CostPolicy policy;

    IoCostQosFile(PolicyHost host, CostPolicy policy) {
        super("io.cost.qos", Placement.ONLY_ON_ROOT, true);
        this.host = host;
        this.policy = policy;
    }

    @Override
    public String read(Group group) {
        StringBuilder sb = new StringBuilder();
        for (DeviceControl dc : host.devices()) {
            CostConfig c = policy.device(dc).config();
            if (c == null) continue;
            QosParams q = c.qos();
            sb.append(dc.device().number()).append(" enable=").append(c.enabled() ? 1 : 0)
              .append(" ctrl=").append(c.userQos() ? "user" : "auto");
            appendPct(sb.append(" rpct="), q.readPpm());
            sb.append(" rlat=").append(q.readLatUs());
            appendPct(sb.append(" wpct="), q.writePpm());
            sb.append(" wlat=").append(q.writeLatUs());
            appendPct(sb.append(" min="), q.minPpm());
            appendPct(sb.append(" max="), q.maxPpm());
            sb.append('\n');
        }
        return sb.toString();
    }

    /** ppm as the kernel prints it: %u.%02u of ppm/10000 and ppm%10000/100. */
    private static void appendPct(StringBuilder sb, long ppm) {
        sb.append(ppm / 10_000).append('.');
        CostDevice.appendTwoDigits(sb, ppm % 10_000 / 100);
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public List<String> replay(Group group) {
        return CostConfig.replay(read(group));
    }

    @Override
    public void write(Group group, String text) throws ControlException {
        DeviceLine line = DeviceLine.parse(host, text);
        CostDevice device = policy.device(line.device());
        host.configure(host.root(), line.device(), (dg, nowNs) -> device.setUp(nowNs));
        // The controller holds the tree lock, which serializes configuration writes: the merge
        // below starts from what is current.
        CostConfig current = device.config();
        QosParams q = current.qos();
        boolean enable = current.enabled();
        boolean user = current.userQos();
        long readPpm = q.readPpm(), readLat = q.readLatUs(), writePpm = q.writePpm(), writeLat = q.writeLatUs();
        long min = q.minPpm(), max = q.maxPpm();
        for (String token : KernelParse.tokens(line.body(), CostConfig.SEPARATORS)) {
            String[] kv = CostConfig.keyValue(token);
            if (kv == null) throw unknown(token);
            String key = kv[0];
            String value = kv[1];
            switch (key) {
                case "enable" -> {
                    enable = CostConfig.number(key, value) != 0;
                    continue;
                }
                case "ctrl" -> {
                    user = CostConfig.userCtrl(key, value);
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
        host.configure(host.root(), line.device(), (dg, nowNs) -> device.writeQos(enableFinal, userFinal, qos, nowNs));
    }

    private static ControlException unknown(String token) {
        return new ControlException(Errno.EINVAL, "'" + token + "' (expected: enable=N, ctrl=auto|user, rpct=P, rlat=µs, wpct=P, wlat=µs, min=P or max=P)");
    }

    /** rpct/wpct: a percentage in [0, 100] with two decimals, kept in ppm. */
    private static long percentPpm(String key, String value) throws ControlException {
        long v = decimal(key, value);
        if (v < 0 || v > 10_000) throw KernelParse.invalid(key, value, "a percentage from 0 to 100");
        return v * 100;
    }

    /** rlat/wlat: µs, an unsigned 32-bit value in the kernel (larger values are refused rather than truncated). */
    private static long latencyUs(String key, String value) throws ControlException {
        long v = CostConfig.number(key, value);
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
