package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.file.DeviceLine;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.host.PolicyDeviceGroup;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.policy.host.PolicyHost;
import io.iotarget.model.ControlException;

import java.util.Arrays;

/**
 * io.max.per_host (not Linux's; section 9 of the package documentation): the io.max that each
 * child made here for a host ({@code cgroup_per_host}) starts with. io.max's syntax, read
 * format and errors ({@link IoMaxFile#parseLimits}); it limits nothing itself. A write also sets
 * io.max of every child whose io.max on that device still equals the value before the write,
 * so children nobody changed by hand follow it and those that were changed keep theirs.
 * Present where io.* files are, the root included (a member bound to no group charges its
 * hosts' children under the root).
 */
final class IoMaxPerHostFile extends InterfaceFile {
    private final PolicyHost host;
    private final ThrottlePolicy policy;

    IoMaxPerHostFile(PolicyHost host, ThrottlePolicy policy) {
        super("io.max.per_host", Placement.EVERYWHERE, true);
        this.host = host;
        this.policy = policy;
    }

    @Override
    public String read(PolicyGroup group) {
        return deviceLines(group, dg -> {
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            return tg.perHostLimited() ? IoMaxFile.limits(tg.perHostBps, tg.perHostIops) : null;
        });
    }

    @Override
    public boolean writable() {
        return true;
    }

    /** Tree lock held (the controller's file write): no child changes between the two steps. */
    @Override
    public void write(PolicyGroup group, String text) throws ControlException {
        DeviceLine line = DeviceLine.parse(host, text);
        Long[] given = IoMaxFile.parseLimits(line.body());
        long[][] before = new long[2][];
        long[][] after = new long[2][];
        host.configure(group, line.device(), (dg, nowNs) -> {
            ThrottleGroup tg = (ThrottleGroup) dg.policyState(policy.index());
            before[0] = tg.perHostBps.clone();
            before[1] = tg.perHostIops.clone();
            IoMaxFile.merge(given, tg.perHostBps, tg.perHostIops);
            after[0] = tg.perHostBps.clone();
            after[1] = tg.perHostIops.clone();
        });
        if (Arrays.equals(before[0], after[0]) && Arrays.equals(before[1], after[1])) return;
        if (!group.ioInSubtree()) return;               // children without io.* files have no io.max to follow
        int index = line.device().device().index();
        for (PolicyGroup child : group.children()) {
            PolicyDeviceGroup dg = child.deviceGroup(index);
            ThrottleGroup tg = dg == null ? null : (ThrottleGroup) dg.policyState(policy.index());
            long[] bps = tg == null ? new long[] {ThrottleGroup.BPS_MAX, ThrottleGroup.BPS_MAX} : tg.bps;
            long[] iops = tg == null ? new long[] {ThrottleGroup.IOPS_MAX, ThrottleGroup.IOPS_MAX} : tg.iops;
            if (Arrays.equals(bps, before[0]) && Arrays.equals(iops, before[1])) {
                policy.setLocalLimits(child, line.device(), after[0].clone(), after[1].clone());
            }
        }
    }
}
