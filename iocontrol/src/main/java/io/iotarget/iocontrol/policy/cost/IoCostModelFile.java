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

/**
 * io.cost.model (root only), as blk-iocost reads and writes it.
 * <pre>
 * read:  MAJ:MIN ctrl=auto|user model=linear rbps=N rseqiops=N rrandiops=N wbps=N wseqiops=N wrandiops=N
 * write: MAJ:MIN [ctrl=auto|user] [model=linear] [rbps=N] [rseqiops=N] [rrandiops=N] [wbps=N] [wseqiops=N] [wrandiops=N]
 * </pre>
 N is an unsigned 64-bit base-0 number ({@code 0x100} is 256, {@code 0100} is 64). Tokens are
 * split on space, tab and newline only, as ioc_cost_model_write's strsep. Any coefficient
 * switches to ctrl=user; ctrl=auto goes back to the built-in model. EINVAL for an unknown
 * token, a model other than linear, or a bad number. As in the kernel, a write naming a
 * device sets iocost up there (disabled until io.cost.qos says enable=1) before its tokens
 * are read.
 */
final class IoCostModelFile extends InterfaceFile {
    private static final List<String> KEYS = List.of("rbps", "rseqiops", "rrandiops", "wbps", "wseqiops", "wrandiops");

    private final PolicyHost host;
    private final CostPolicy policy;

    IoCostModelFile(PolicyHost host, CostPolicy policy) {
        super("io.cost.model", Placement.ONLY_ON_ROOT, true);
        this.host = host;
        this.policy = policy;
    }

    @Override
    public String read(Group group) {
        StringBuilder sb = new StringBuilder();
        for (DeviceControl dc : host.devices()) {
            CostConfig c = policy.device(dc).config();
            if (c == null) continue;
            sb.append(dc.device().number()).append(" ctrl=").append(c.userModel() ? "user" : "auto").append(" model=linear");
            for (int i = 0; i < KEYS.size(); i++) {
                sb.append(' ').append(KEYS.get(i)).append('=').append(Long.toUnsignedString(c.model().parameter(i / 3, i % 3)));
            }
            sb.append('\n');
        }
        return sb.toString();
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
        boolean user = current.userModel();
        Long[] given = new Long[KEYS.size()];
        for (String token : KernelParse.tokens(line.body(), CostConfig.SEPARATORS)) {
            String[] kv = CostConfig.keyValue(token);
            if (kv == null) throw unknown(token);
            String key = kv[0];
            String value = kv[1];
            switch (key) {
                case "ctrl" -> user = CostConfig.userCtrl(key, value);
                case "model" -> {
                    if (!value.equals("linear")) throw KernelParse.invalid(key, value, "linear");
                }
                default -> {
                    int k = KEYS.indexOf(key);
                    if (k < 0) throw unknown(token);
                    given[k] = CostConfig.number(key, value);
                    user = true;
                }
            }
        }
        LinearModel model = current.model().with(given);
        boolean userFinal = user;
        host.configure(host.root(), line.device(), (dg, nowNs) -> device.writeModel(userFinal, model, nowNs));
    }

    private static ControlException unknown(String token) {
        return new ControlException(Errno.EINVAL, "'" + token + "' (expected: ctrl=auto|user, model=linear, rbps=, rseqiops=, rrandiops=, wbps=, wseqiops= or wrandiops=N)");
    }
}
