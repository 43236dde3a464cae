package io.iotarget.bench;

import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.IoController;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.ManualClock;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.util.concurrent.TimeUnit;

/**
 * Accounting throughput as threads are added, all charging the same group on the same device
 * (the worst case for shared counters). Run with {@code -t 1}, {@code -t 2}, {@code -t 4}:
 * with striping, per-thread cost should stay flat instead of growing with contention.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class StatsScalingBenchmark {
    private IoController controller;
    private Device device;
    private Group group;

    @State(Scope.Thread)
    public static class PerThread {
        final IoRequest io = new IoRequest();
    }

    @Setup
    public void setUp() throws Exception {
        controller = new IoController(new ManualClock(0), Engine.STANDARD_POLICIES);
        device = new Device(0, new DeviceNumber(259, 0), "bench", 1L << 40, 512, false, 1);
        controller.registerDevice(device);
        group = controller.mkdir("a");
    }

    @Benchmark
    public boolean admitSameGroup(PerThread t) {
        IoRequest io = t.io;
        io.reset();
        io.set(IoOp.READ, 0, 0, 4096, null).target(device, group);
        return controller.admit(io, 0);
    }
}
