package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.DeviceGroup;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.file.KernelParse;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

/**
 * io.weight, as blk-iocost reads and writes it.
 * <pre>
 * read:  default W            then   MAJ:MIN W   for each device override
 * write: W | default W        sets the group's default
 *        MAJ:MIN W            sets an override for one device
 *        MAJ:MIN default      removes that override
 * </pre>
 * W must be an integer in [1, 10000] (EINVAL otherwise).
 */
final class IoWeightFile implements InterfaceFile {
    private final IoController controller;
    private final CostPolicy policy;

    IoWeightFile(IoController controller, CostPolicy policy) {
        this.controller = controller;
        this.policy = policy;
    }

    @Override
    public String name() {
        return "io.weight";
    }

    @Override
    public Placement placement() {
        return Placement.NOT_ON_ROOT;
    }

    @Override
    public boolean controllerFile() {
        return true;
    }

    @Override
    public String read(Group group) {
        controller.treeLock().lock();
        try {
            StringBuilder sb = new StringBuilder();
            sb.append("default ").append(((CostPolicy.GroupWeight) group.policyData(policy.index())).defaultWeight).append('\n');
            for (DeviceGroup dg : group.deviceGroups()) {
                int w = ((CostPolicy.CostGroupState) dg.policyState(policy.index())).weightConfigured;
                if (w != 0) sb.append(dg.device().device().number()).append(' ').append(w).append('\n');
            }
            return sb.toString();
        } finally {
            controller.treeLock().unlock();
        }
    }

    @Override
    public boolean writable() {
        return true;
    }

    @Override
    public void write(Group group, String text) throws ControlException {
        if (text.indexOf(':') < 0) {
            String v = text.strip();
            if (v.startsWith("default")) {
                String rest = v.substring("default".length());
                if (rest.isEmpty() || !Character.isWhitespace(rest.charAt(0))) throw KernelParse.invalid("weight", v, "W or default W, W in 1..10000");
                v = rest.strip();
            }
            int w = weight(v);
            controller.treeLock().lock();
            try {
                if (!group.online()) throw new ControlException(Errno.ENODEV, group.path() + " was removed");
                ((CostPolicy.GroupWeight) group.policyData(policy.index())).defaultWeight = w;
            } finally {
                controller.treeLock().unlock();
            }
            return;
        }
        KernelParse.DeviceLine line = KernelParse.deviceLine(controller, text);
        String body = line.body().strip();
        int w = body.equals("default") ? 0 : weight(body);
        controller.configure(group, line.device(),
                (dg, nowNs) -> ((CostPolicy.CostGroupState) dg.policyState(policy.index())).weightConfigured = w);
    }

    private static int weight(String v) throws ControlException {
        long w;
        try {
            w = KernelParse.parseU64("weight", v);
        } catch (ControlException e) {
            throw KernelParse.invalid("weight", v, "an integer in " + CostPolicy.WEIGHT_MIN + ".." + CostPolicy.WEIGHT_MAX);
        }
        if (w < CostPolicy.WEIGHT_MIN || w > CostPolicy.WEIGHT_MAX) {
            throw KernelParse.invalid("weight", v, "an integer in " + CostPolicy.WEIGHT_MIN + ".." + CostPolicy.WEIGHT_MAX);
        }
        return (int) w;
    }
}
