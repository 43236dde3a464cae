package io.iotarget.bench;

import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.backend.PacedBackend;
import io.iotarget.engine.Engine;
import io.iotarget.engine.Volume;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Device;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoStatus;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Seed 000's experiment on the real clock, through the engine's embedded API: a device of
 * known capacity ({@link PacedBackend}: 1 GiB/s, one request at a time) and an io.cost.model
 * that describes it exactly. A group writes 128 MiB in 128 KiB requests from 8 virtual
 * threads, first with iocost off (after an untimed warm-up pass), then with vrate pinned to its 1% floor
 * ({@code enable=1 ctrl=user min=1.00 max=1.00}), once with WRITE and once with
 * PASSTHROUGH_OUT. Prints the times, the ratio and the groups' io.stat.
 *
 * <pre>java -cp bench/jmh/target/iotarget-benchmarks.jar io.iotarget.bench.IocostSeedExperiment</pre>
 */
public final class IocostSeedExperiment {
    private static final long BYTES_PER_SECOND = 1L << 30;
    private static final long TOTAL = 128L << 20;
    private static final int CHUNK = 128 * 1024;
    private static final int THREADS = 8;
    private static final String MODEL = " ctrl=user model=linear rbps=1073741824 rseqiops=262144 rrandiops=262144"
                                        + " wbps=1073741824 wseqiops=262144 wrandiops=262144";

    private IocostSeedExperiment() {
    }

    public static void main(String[] args) throws Exception {
        try (Engine engine = new Engine()) {
            Device device = engine.addDevice("paced0", new PacedBackend(new NullBackend(1L << 40, 512, false), 0, BYTES_PER_SECOND), null, 64);
            var c = engine.controller();
            c.write("cgroup.subtree_control", "+io");
            c.write("io.cost.model", device.number() + MODEL);
            Group off = c.mkdir("unthrottled");
            write(engine, off, IoOp.WRITE, TOTAL);               // JIT warm-up, not timed
            double writeOff = seconds(engine, off, IoOp.WRITE);
            double passthroughOff = seconds(engine, off, IoOp.PASSTHROUGH_OUT);
            System.out.printf("iocost off:  WRITE %.3f s, PASSTHROUGH_OUT %.3f s (device: %.3f s)%n",
                    writeOff, passthroughOff, (double) TOTAL / BYTES_PER_SECOND);

            c.write("io.cost.qos", device.number() + " enable=1 ctrl=user min=1.00 max=1.00");
            Group warm = c.mkdir("warm");
            long warmStart = System.nanoTime();
            while (!vrate(c.read("io.stat")).equals("1.00")) write(engine, warm, IoOp.WRITE, 4L << 20);
            System.out.printf("vrate walked from 100.00 to 1.00 in %.1f s%n", (System.nanoTime() - warmStart) / 1e9);
            Thread.sleep(200);                                   // warm goes idle
            Group writer = c.mkdir("writer");
            Group passthrough = c.mkdir("passthrough");
            double write = seconds(engine, writer, IoOp.WRITE);
            double pass = seconds(engine, passthrough, IoOp.PASSTHROUGH_OUT);
            double deviceSeconds = (double) TOTAL / BYTES_PER_SECOND;
            System.out.printf("vrate 1%%:    WRITE %.3f s (%.1fx measured, %.1fx device), PASSTHROUGH_OUT %.3f s (%.1fx measured, %.1fx device)%n",
                    write, write / writeOff, write / deviceSeconds, pass, pass / passthroughOff, pass / deviceSeconds);
            Thread.sleep(200);                                   // let cost.usage fold in at a period end
            System.out.print("writer/io.stat:      " + c.read("writer/io.stat"));
            System.out.print("passthrough/io.stat: " + c.read("passthrough/io.stat"));
            System.out.print("io.stat:             " + c.read("io.stat"));
        }
    }

    private static double seconds(Engine engine, Group group, IoOp op) throws Exception {
        long start = System.nanoTime();
        write(engine, group, op, TOTAL);
        return (System.nanoTime() - start) / 1e9;
    }

    /** {@code total} bytes in 128 KiB requests from 8 virtual threads, each waiting for its request. */
    private static void write(Engine engine, Group group, IoOp op, long total) throws Exception {
        Volume volume = engine.open("paced0", group);
        AtomicLong next = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            threads.add(Thread.ofVirtual().start(() -> {
                ByteBuffer data = ByteBuffer.allocateDirect(CHUNK);
                long offset;
                while ((offset = next.getAndAdd(CHUNK)) < total) {
                    IoStatus status = volume.submit(op, 0, offset, CHUNK, data.clear()).join();
                    if (status != IoStatus.OK) throw new IllegalStateException(op + " at " + offset + ": " + status);
                }
            }));
        }
        for (Thread t : threads) t.join();
    }

    private static String vrate(String stat) {
        Matcher m = Pattern.compile("cost\\.vrate=(\\d+\\.\\d\\d)").matcher(stat);
        return m.find() ? m.group(1) : "";
    }
}
