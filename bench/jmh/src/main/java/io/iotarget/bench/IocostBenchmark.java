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
import java.util.function.Consumer;

/**
 * Per-request cost of iocost in the controller: admit, issue and complete, as the engine calls
 * them, with the period timer run whenever it is due. iocost is enabled but not binding: the
 * model makes a 4 KiB read cost 138 vtime while the clock advances 10 ns (1374 vtime at 100%)
 * per request, so every request takes the fast path.
 * <ul>
 *   <li>{@code off}: iocost not set up on the device (the baseline: no lock, no policy);</li>
 *   <li>{@code root}: enabled, IO from the root group (not costed, but it takes the device lock
 *       and is a QoS latency sample);</li>
 *   <li>{@code group}: enabled, IO from tenants/a (costed: hweight, vtime, completion);</li>
 *   <li>{@code siblings}: as group, alternating between tenants/a and tenants/b (weights 100
 *       and 300), so that both are active and share the device.</li>
 * </ul>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class IocostBenchmark {
    private static final String FAST_MODEL = " ctrl=user model=linear rbps=1000000000000000 rseqiops=1000000000 rrandiops=1000000000"
                                             + " wbps=1000000000000000 wseqiops=1000000000 wrandiops=1000000000";

    @Param({"off", "root", "group", "siblings"})
    public String setup;

    private final ManualClock clock = new ManualClock(0);
    private final Consumer<IoRequest> nowhere = io -> { };
    private IoController controller;
    private Device device;
    private Group first;
    private Group second;
    private long offset;
    private boolean alternate;

    @State(Scope.Thread)
    public static class PerThread {
        final IoRequest io = new IoRequest();
    }

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        controller = new IoController(clock, Engine.STANDARD_POLICIES);
        device = new Device(0, new DeviceNumber(259, 0), "bench", 1L << 40, 512, false, 1);
        controller.registerDevice(device);
        controller.write("cgroup.subtree_control", "+io");
        controller.mkdir("tenants");
        controller.write("tenants/cgroup.subtree_control", "+io");
        Group a = controller.mkdir("tenants/a");
        Group b = controller.mkdir("tenants/b");
        if (!setup.equals("off")) {
            controller.write("io.cost.model", device.number() + FAST_MODEL);
            controller.write("io.cost.qos", device.number() + " enable=1");
            controller.write("tenants/b/io.weight", "300");
        }
        first = setup.equals("off") || setup.equals("group") || setup.equals("siblings") ? a : controller.root();
        second = setup.equals("siblings") ? b : first;
    }

    @Benchmark
    public boolean admitIssueComplete(PerThread t) {
        IoRequest io = t.io;
        io.reset();
        offset += 4096;
        alternate = !alternate;
        io.set(IoOp.READ, 0, offset, 4096, null).target(device, alternate ? first : second);
        long now = clock.advance(10);
        boolean admitted = controller.admit(io, now);
        io.issueNs(now);
        controller.issue(io, now);
        controller.complete(io, now, nowhere);
        if (controller.nextReleaseNs() <= now) controller.releaseDue(now, nowhere);
        return admitted;
    }
}
