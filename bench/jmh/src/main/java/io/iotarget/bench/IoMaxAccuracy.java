package io.iotarget.bench;

import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * io.max accuracy on the real clock, through the whole engine (releaser thread included):
 * closed-loop clients at queue depth 32 against a null device, each limit alone for 10 s.
 * Prints the achieved rate over the whole run and over the steady part (after a 1 s ramp,
 * which leaves out the burst an idle group may send at the start).
 *
 * <pre>java -cp bench/jmh/target/iotarget-benchmarks.jar io.iotarget.bench.IoMaxAccuracy [seconds]</pre>
 */
public final class IoMaxAccuracy {
    private static final long SEC = 1_000_000_000L;
    private static final int DEPTH = 32;

    private record Phase(String name, String group, String limit, IoOp op, int size, double target, boolean bytes, String[] loaded) {
    }

    public static void main(String[] args) throws Exception {
        int seconds = args.length > 0 ? Integer.parseInt(args[0]) : 10;
        List<Phase> phases = List.of(
                new Phase("riops=20000", "tenants/a", "riops=20000", IoOp.READ, 4096, 20000, false, new String[]{"tenants/a"}),
                new Phase("rbps=100MiB/s", "tenants/a", "rbps=104857600", IoOp.READ, 131072, 104857600, true, new String[]{"tenants/a"}),
                new Phase("wiops=20000", "tenants/a", "wiops=20000", IoOp.WRITE, 4096, 20000, false, new String[]{"tenants/a"}),
                new Phase("wbps=100MiB/s", "tenants/a", "wbps=104857600", IoOp.WRITE, 131072, 104857600, true, new String[]{"tenants/a"}),
                new Phase("parent wiops=20000, 2 children", "tenants", "wiops=20000", IoOp.WRITE, 4096, 20000, false,
                        new String[]{"tenants/a", "tenants/b"}));
        System.out.printf("%-32s %12s %14s %8s %14s %8s%n", "limit", "target", "whole run", "error", "steady", "error");
        for (Phase p : phases) run(p, seconds);
    }

    private static void run(Phase p, int seconds) throws Exception {
        try (Engine engine = new Engine()) {
            Device dev = engine.addDevice("null0", new NullBackend(1L << 40, 512, false), null, 1024);
            engine.controller().mkdir("tenants");
            engine.controller().write("tenants/cgroup.subtree_control", "+io");
            List<Group> groups = new ArrayList<>();
            for (String g : p.loaded) groups.add(engine.controller().mkdir(g));
            engine.controller().write(p.group + "/io.max", dev.number() + " " + p.limit);

            LinkedBlockingQueue<IoRequest> done = new LinkedBlockingQueue<>();
            ByteBuffer buffer = ByteBuffer.allocateDirect(p.size);
            for (Group g : groups) {
                for (int i = 0; i < DEPTH; i++) {
                    IoRequest io = new IoRequest();
                    io.set(p.op, 0, (long) i * p.size, p.size, buffer.duplicate()).target(dev, g).callback(done::add, null, 0);
                    engine.submit(io);
                }
            }
            long start = System.nanoTime();
            long rampEnd = start + SEC;
            long end = start + (long) seconds * SEC;
            long all = 0;
            long steady = 0;
            while (true) {
                IoRequest io = done.poll(10, TimeUnit.MILLISECONDS);
                if (io == null) {
                    if (System.nanoTime() >= end) break;
                    continue;
                }
                long t = io.completeNs();
                if (t >= end) break;
                long unit = p.bytes ? p.size : 1;
                all += unit;
                if (t >= rampEnd) steady += unit;
                io.data().clear();
                engine.submit(io);
            }
            double wholeRate = all / (double) seconds;
            double steadyRate = steady / (double) (seconds - 1);
            System.out.printf("%-32s %12.0f %14.0f %+7.2f%% %14.0f %+7.2f%%%n", p.name, p.target,
                    wholeRate, 100 * (wholeRate / p.target - 1), steadyRate, 100 * (steadyRate / p.target - 1));
        }
    }
}
