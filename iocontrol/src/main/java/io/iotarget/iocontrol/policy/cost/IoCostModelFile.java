package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;
import io.iotarget.model.tree.KernelParse;

import java.util.List;

/**
 * io.cost.model (root only), as blk-iocost reads and writes it.
 * <pre>
 * read:  MAJ:MIN ctrl=auto|user model=linear rbps=N rseqiops=N rrandiops=N wbps=N wseqiops=N wrandiops=N
 * write: MAJ:MIN [ctrl=auto|user] [model=linear] [rbps=N] [rseqiops=N] [rrandiops=N] [wbps=N] [wseqiops=N] [wrandiops=N]
 * </pre>
 * N is an unsigned 64-bit base-0 number ({@code 0x100} is 256, {@code 0100} is 64); tokens as
 * {@link IoCostFile} splits them. Any coefficient switches to ctrl=user; ctrl=auto goes back to
 * the built-in model. EINVAL for an unknown token, a model other than linear, or a bad number.
 */
final class IoCostModelFile extends IoCostFile {
    private static final List<String> KEYS = List.of("rbps", "rseqiops", "rrandiops", "wbps", "wseqiops", "wrandiops");

    IoCostModelFile(PolicyHost host, CostPolicy policy) {
        super("io.cost.model", "ctrl=auto|user, model=linear, rbps=, rseqiops=, rrandiops=, wbps=, wseqiops= or wrandiops=N", host, policy);
    }

    @Override
    void appendValues(StringBuilder sb, CostConfig c) {
        sb.append(" ctrl=").append(c.userModel() ? "user" : "auto").append(" model=linear");
        for (int i = 0; i < KEYS.size(); i++) {
            sb.append(' ').append(KEYS.get(i)).append('=').append(Long.toUnsignedString(c.model().parameter(i / 3, i % 3)));
        }
    }

    @Override
    Update parse(CostConfig current, List<String> tokens) throws ControlException {
        boolean user = current.userModel();
        Long[] given = new Long[KEYS.size()];
        for (String token : tokens) {
            String[] kv = keyValue(token);
            String key = kv[0];
            String value = kv[1];
            switch (key) {
                case "ctrl" -> user = userCtrl(key, value);
                case "model" -> {
                    if (!value.equals("linear")) throw KernelParse.invalid(key, value, "linear");
                }
                default -> {
                    int k = KEYS.indexOf(key);
                    if (k < 0) throw unknown(token);
                    given[k] = number(key, value);
                    user = true;
                }
            }
        }
        LinearModel model = current.model().with(given);
        boolean userFinal = user;
        return (device, nowNs) -> device.writeModel(userFinal, model, nowNs);
    }
}
