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

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The cost of reading io.stat with 1000 groups in the tree (seed 004): an empty group (no
 * per-device state: returns without flushing), a populated one with nothing pending, and a
 * populated one after each of the 1000 groups did one IO (the read pays for folding all of
 * them; compare with {@code chargeThousandGroups} alone).
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class IoStatReadBenchmark {
    private IoController controller;
    private Device device;
    private final List<Group> groups = new ArrayList<>();
    private final IoRequest io = new IoRequest();

    @Setup
    public void setUp() throws Exception {
        controller = new IoController(new ManualClock(0), Engine.STANDARD_POLICIES);
        device = new Device(0, new DeviceNumber(259, 0), "bench", 1L << 40, 512, false, 1);
        controller.registerDevice(device);
        controller.registerDevice(new Device(1, new DeviceNumber(259, 1), "bench1", 1L << 40, 512, false, 1));
        for (int t = 0; t < 10; t++) {
            controller.mkdir("t" + t);
            controller.write("t" + t + "/cgroup.subtree_control", "+io");
            for (int g = 0; g < 99; g++) groups.add(controller.mkdir("t" + t + "/g" + g));
        }
        controller.mkdir("empty");
        for (Group g : groups) charge(g);
        controller.read("io.stat");
    }

    private void charge(Group g) {
        io.reset();
        io.set(IoOp.WRITE, 0, 0, 4096, null).target(device, g);
        controller.admit(io, 0);
    }

    @Benchmark
    public String readEmptyGroup() throws Exception {
        return controller.read("empty/io.stat");
    }

    @Benchmark
    public String readPopulatedGroup() throws Exception {
        return controller.read("t3/g42/io.stat");
    }

    @Benchmark
    public void chargeThousandGroups() {
        for (Group g : groups) charge(g);
    }

    @Benchmark
    public String chargeThousandGroupsThenRead() throws Exception {
        for (Group g : groups) charge(g);
        return controller.read("t3/g42/io.stat");
    }
}
