package io.iotarget.bench;

import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.chain.DeviceControl;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * Per-request cost of the controller alone (admit + complete), without a backend:
 * {@code none} = no limits anywhere; {@code slack} = io.max set on the group and its parent
 * but far above the load, so every request takes the locked path and is never parked.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ControllerBenchmark {
    @Param({"none", "slack"})
    public String limits;

    private IoController controller;
    private final ManualClock clock = new ManualClock(0);
    private Device device;
    private Group group;

    @State(Scope.Thread)
    public static class PerThread {
        final IoRequest io = new IoRequest();
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        controller = new IoController(clock, Engine.STANDARD_POLICIES);
        device = new Device(0, new DeviceNumber(259, 0), "bench", 1L << 40, 512, false, 1);
        DeviceControl dc = controller.registerDevice(device);
        controller.mkdir("tenants");
        controller.write("tenants/cgroup.subtree_control", "+io");
        group = controller.mkdir("tenants/a");
        if (limits.equals("slack")) {
            controller.write("tenants/io.max", dc.device().number() + " riops=4000000000 rbps=1000000000000000");
            controller.write("tenants/a/io.max", dc.device().number() + " riops=4000000000 rbps=1000000000000000");
        }
    }

    @Benchmark
    public boolean admitAndComplete(PerThread t) {
        IoRequest io = t.io;
        io.reset();
        io.set(IoOp.READ, 0, 4096, 4096, null).target(device, group);
        long now = clock.advance(1);
        boolean admitted = controller.admit(io, now);
        controller.complete(io, now, r -> { });
        return admitted;
    }
}
