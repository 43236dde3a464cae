package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.IoPolicy;

import java.util.List;

/** io.max (see the package documentation). */
public final class ThrottlePolicy implements IoPolicy {
    private final IoController controller;
    private final int index;

    public ThrottlePolicy(IoController controller, int index) {
        this.controller = controller;
        this.index = index;
    }

    @Override
    public String name() {
        return "throttle";
    }

    /** blk-throttle acts on the bio, before io.stat counts it: a parked request is counted when it leaves. */
    @Override
    public boolean precedesStat() {
        return true;
    }

    @Override
    public List<InterfaceFile> files() {
        return List.of(new IoMaxFile(controller, this));
    }

    @Override
    public DevicePolicy attach(DeviceControl device) {
        return new ThrottleDevice(index);
    }

    int index() {
        return index;
    }
}
