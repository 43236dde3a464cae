package io.iotarget.iocontrol.policy.cost;

import io.iotarget.iocontrol.DeviceControl;
import io.iotarget.iocontrol.DeviceGroup;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.Resumer;
import io.iotarget.model.IoRequest;

import java.util.List;

/** io.weight: configuration only for now (see the package documentation). */
public final class CostPolicy implements IoPolicy {
    /** CGROUP_WEIGHT_MIN / _DFL / _MAX. */
    static final int WEIGHT_MIN = 1;
    static final int WEIGHT_DEFAULT = 100;
    static final int WEIGHT_MAX = 10000;

    private final IoController controller;
    private final int index;

    public CostPolicy(IoController controller, int index) {
        this.controller = controller;
        this.index = index;
    }

    @Override
    public String name() {
        return "cost";
    }

    @Override
    public List<InterfaceFile> files() {
        return List.of(new IoWeightFile(controller, this));
    }

    /** The group's default weight (io.weight's "default" line); tree lock. */
    static final class GroupWeight {
        int defaultWeight = WEIGHT_DEFAULT;
    }

    /** Per (group, device): the configured override, 0 when the default applies. */
    static final class CostGroupState {
        int weightConfigured;
    }

    @Override
    public Object newGroupData(Group group) {
        return new GroupWeight();
    }

    @Override
    public DevicePolicy attach(DeviceControl device) {
        return new DevicePolicy() {
            @Override
            public Object newGroupState(DeviceGroup group) {
                return new CostGroupState();
            }

            @Override
            public boolean applies(IoRequest io, DeviceGroup group) {
                return false;
            }

            @Override
            public boolean admit(IoRequest io, DeviceGroup group, long nowNs, Resumer resumer) {
                return true;
            }

            @Override
            public void releaseDue(long nowNs, Resumer resumer) {
            }

            @Override
            public long nextWakeNs() {
                return Long.MAX_VALUE;
            }

            @Override
            public void onGroupOffline(DeviceGroup group, long nowNs, Resumer resumer) {
            }
        };
    }

    int index() {
        return index;
    }
}
