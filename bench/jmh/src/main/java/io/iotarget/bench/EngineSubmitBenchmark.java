package io.iotarget.bench;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.pressure.TenantQueue;
import io.iotarget.model.Device;
import io.iotarget.model.IoCallback;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * The whole in-process request path for one 4 KiB read: check, controller, dispatch queue,
 * backend, completion, callback — what every front end pays on top of its protocol work.
 * {@code pressure}: {@code none} submits without a tenant queue; {@code idle} with one (io.pressure's
 * two atomic steps, at depth 1 the queue goes busy and idle every request); {@code armed} with one
 * while another group's queue is held, so every busy/idle change also takes the tracker's lock.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class EngineSubmitBenchmark {
    @Param({"null", "memory"})
    public String backend;
    @Param({"none", "idle", "armed"})
    public String pressure;

    private Engine engine;
    private Device device;
    private Group group;
    private TenantQueue queue;

    @State(Scope.Thread)
    public static class PerThread {
        final IoRequest io = new IoRequest();
        final ByteBuffer buffer = ByteBuffer.allocateDirect(4096);
        long completed;
        final IoCallback done = r -> completed++;
    }

    @Setup
    public void setUp() throws Exception {
        engine = new Engine();
        long size = 1L << 30;
        device = engine.addDevice("bench", backend.equals("null") ? new NullBackend(size, 512, false) : new MemoryBackend(size, 512, false), null, 256);
        group = engine.controller().mkdir("a");
        if (!pressure.equals("none")) queue = engine.newQueue(group);
        if (pressure.equals("armed")) {
            Group held = engine.controller().mkdir("held");
            engine.controller().tree().pressure().parked(new IoRequest().queue(engine.newQueue(held)), engine.clock().nanoTime());
        }
        if (backend.equals("memory")) {
            ByteBuffer b = ByteBuffer.allocateDirect(1 << 20);
            for (long off = 0; off < (64 << 20); off += b.capacity()) engine.open("bench", group).write(off, b.clear(), 0).get();
        }
    }

    @TearDown
    public void tearDown() {
        engine.close();
    }

    @Benchmark
    public long read4k(PerThread t) {
        IoRequest io = t.io;
        io.reset();
        long offset = (t.completed * 4096) & ((64 << 20) - 1);
        io.set(IoOp.READ, 0, offset, 4096, t.buffer.clear()).target(device, group).queue(queue).callback(t.done, null, 0);
        engine.submit(io);
        return t.completed;
    }
}
