package io.iotarget.bench;

import io.iotarget.backend.file.FileBackend;
import io.iotarget.engine.Engine;
import io.iotarget.iocontrol.Group;
import io.iotarget.model.Clock;
import io.iotarget.model.Device;
import io.iotarget.model.IoCallback;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;

/**
 * Random IO on a file device through the embedded API (Engine.submit, no network), fio-like:
 * a fixed number of requests in flight, one line of results.
 *
 * <pre>
 *   java -cp iotarget-benchmarks.jar io.iotarget.bench.BackendIoLoad --file=F [--direct=1] [--rw=randread|randwrite]
 *        [--bs=4096] [--qd=32] [--seconds=10] [--warmup=3] [--io-engine=default|auto|io_uring|threads]
 *        [--lanes=callback|threads] [--sync=none|fua|flush]
 * </pre>
 *
 * {@code lanes=callback}: one thread keeps {@code qd} requests in flight and resubmits each
 * as it completes — what a front end's event loop does; on a synchronous engine (git main)
 * each submit runs its IO before returning, so this is QD1 whatever {@code qd} says.
 * {@code lanes=threads}: {@code qd} platform threads, each submitting and waiting for one
 * request — a thread per outstanding request, how the synchronous path reached depth.
 * {@code sync=fua} writes with FUA; {@code sync=flush} follows each write with a flush before
 * the lane's next write. CPU time is the whole process's (every thread, the kernel's io_uring
 * workers included), measured over the timed part only. Compiles against git main too (the
 * IO engine is chosen by reflection), so the synchronous path runs the same driver.
 */
public final class BackendIoLoad {
    private final Engine engine;
    private final Device device;
    private final Group group;
    private final IoOp op;
    private final int bs;
    private final long blocks;
    private final int flags;
    private final boolean flushAfterWrite;

    private BackendIoLoad(Engine engine, Device device, IoOp op, int bs, int flags, boolean flushAfterWrite) {
        this.engine = engine;
        this.device = device;
        this.group = engine.controller().root();
        this.op = op;
        this.bs = bs;
        this.blocks = device.sizeBytes() / bs;
        this.flags = flags;
        this.flushAfterWrite = flushAfterWrite;
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (String a : args) {
            if (!a.startsWith("--") || !a.contains("=")) throw new IllegalArgumentException(a + " (expected: --key=value)");
            o.put(a.substring(2, a.indexOf('=')), a.substring(a.indexOf('=') + 1));
        }
        Path file = Path.of(required(o, "file"));
        boolean direct = !o.getOrDefault("direct", "1").equals("0");
        String rw = o.getOrDefault("rw", "randread");
        IoOp op = switch (rw) {
            case "randread" -> IoOp.READ;
            case "randwrite" -> IoOp.WRITE;
            default -> throw new IllegalArgumentException("rw=" + rw + " (expected: randread or randwrite)");
        };
        int bs = Integer.parseInt(o.getOrDefault("bs", "4096"));
        int qd = Integer.parseInt(o.getOrDefault("qd", "32"));
        double seconds = Double.parseDouble(o.getOrDefault("seconds", "10"));
        double warmup = Double.parseDouble(o.getOrDefault("warmup", "3"));
        String ioEngine = o.getOrDefault("io-engine", "default");
        String lanes = o.getOrDefault("lanes", "callback");
        String sync = o.getOrDefault("sync", "none");
        int flags = sync.equals("fua") ? IoFlags.FUA : 0;

        try (Engine engine = newEngine(ioEngine)) {
            Device device = engine.addDevice("bench", FileBackend.open(file, 4096, false, direct), null, Math.max(qd, 1));
            BackendIoLoad load = new BackendIoLoad(engine, device, op, bs, flags, sync.equals("flush"));
            Result r = lanes.equals("threads") ? load.threads(qd, warmup, seconds) : load.callback(qd, warmup, seconds);
            System.out.printf(Locale.ROOT, "%s bs=%d qd=%d direct=%d io_engine=%s lanes=%s sync=%s: %.0f IOPS, %.2f us CPU/IO, %.2f cores%n",
                    rw, bs, qd, direct ? 1 : 0, engineName(engine, ioEngine), lanes, sync, r.iops(), r.cpuUsPerIo(), r.cores());
        }
    }

    private static String required(Map<String, String> o, String key) {
        String v = o.get(key);
        if (v == null) throw new IllegalArgumentException("--" + key + "=... is required");
        return v;
    }

    /** An engine on the named IO engine; "default" is whatever Engine() does (on git main: synchronous). */
    private static Engine newEngine(String kind) throws ReflectiveOperationException {
        if (kind.equals("default")) return new Engine();
        Class<?> kinds = Class.forName("io.iotarget.backend.file.IoEngine$Kind");
        for (Object k : kinds.getEnumConstants()) {
            if (((Enum<?>) k).name().equalsIgnoreCase(kind)) {
                return Engine.class.getConstructor(Clock.class, boolean.class, kinds).newInstance(Clock.SYSTEM, true, k);
            }
        }
        throw new IllegalArgumentException("io-engine=" + kind);
    }

    private static String engineName(Engine engine, String asked) {
        try {
            return Engine.class.getMethod("ioEngine").invoke(engine).toString().toLowerCase(Locale.ROOT);
        } catch (ReflectiveOperationException e) {
            return asked.equals("default") ? "sync" : asked;
        }
    }

    record Result(double iops, double cpuUsPerIo, double cores) {
    }

    private static long cpuNs() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime();
    }

    private ByteBuffer buffer() {
        ByteBuffer b = ByteBuffer.allocateDirect(bs + 4096).alignedSlice(4096).limit(bs);
        for (int i = 0; i < bs; i++) b.put(i, (byte) (i * 31));
        return b;
    }

    /** Fills {@code io} with the lane's next request: a random block, or the flush after a write. */
    private IoRequest next(IoRequest io, ByteBuffer data, SplittableRandom random, boolean flush, IoCallback callback) {
        io.reset();
        if (flush) {
            io.set(IoOp.FLUSH, 0, 0, 0, null);
        } else {
            io.set(op, flags, random.nextLong(blocks) * bs, bs, data.clear().limit(bs));
        }
        return io.target(device, group).callback(callback, data, 0);
    }

    /** One thread keeps {@code qd} requests in flight; completions come back through a queue. */
    private Result callback(int qd, double warmupS, double seconds) throws InterruptedException {
        ArrayBlockingQueue<IoRequest> completed = new ArrayBlockingQueue<>(qd);
        IoCallback callback = io -> {
            if (io.status() != IoStatus.OK) throw new IllegalStateException(io + " failed");
            completed.add(io);
        };
        SplittableRandom random = new SplittableRandom(42);
        for (int i = 0; i < qd; i++) engine.submit(next(new IoRequest(), buffer(), random, false, callback));
        long start = System.nanoTime();
        long measureFrom = start + (long) (warmupS * 1e9);
        long end = measureFrom + (long) (seconds * 1e9);
        long ios = 0;
        long cpuStart = 0;
        boolean measuring = false;
        while (true) {
            IoRequest io = completed.take();
            boolean wasWrite = io.op() == IoOp.WRITE;
            if (!(flushAfterWrite && wasWrite)) ios++;
            long now = System.nanoTime();
            if (!measuring && now >= measureFrom) {
                measuring = true;
                ios = 0;
                cpuStart = cpuNs();
                start = now;
            }
            if (now >= end) {
                long cpu = cpuNs() - cpuStart;
                for (int outstanding = qd - 1; outstanding > 0; outstanding--) completed.take();
                return result(ios, now - start, cpu);
            }
            engine.submit(next(io, (ByteBuffer) io.attachment(), random, flushAfterWrite && wasWrite, callback));
        }
    }

    /** {@code qd} threads, each with one request in flight that it waits for. */
    private Result threads(int qd, double warmupS, double seconds) throws InterruptedException {
        LongAdder ios = new LongAdder();
        long start = System.nanoTime();
        long measureFrom = start + (long) (warmupS * 1e9);
        long end = measureFrom + (long) (seconds * 1e9);
        List<Thread> lanes = new ArrayList<>();
        for (int lane = 0; lane < qd; lane++) {
            SplittableRandom random = new SplittableRandom(42 + lane);
            lanes.add(Thread.ofPlatform().start(() -> {
                Thread me = Thread.currentThread();
                ByteBuffer data = buffer();
                IoRequest io = new IoRequest();
                boolean[] done = new boolean[1];
                IoCallback wake = r -> {
                    synchronized (done) {
                        done[0] = true;
                    }
                    LockSupport.unpark(me);
                };
                boolean flush = false;
                while (System.nanoTime() < end) {
                    synchronized (done) {
                        done[0] = false;
                    }
                    engine.submit(next(io, data, random, flush, wake));
                    while (true) {
                        synchronized (done) {
                            if (done[0]) break;
                        }
                        LockSupport.park();
                    }
                    if (io.status() != IoStatus.OK) throw new IllegalStateException(io + " failed");
                    boolean wasWrite = io.op() == IoOp.WRITE;
                    flush = flushAfterWrite && wasWrite;
                    long now = System.nanoTime();
                    if (!flush && now >= measureFrom && now < end) ios.increment();
                }
            }));
        }
        long sleepNs = measureFrom - System.nanoTime();
        if (sleepNs > 0) Thread.sleep(sleepNs / 1_000_000, (int) (sleepNs % 1_000_000));
        long cpuStart = cpuNs();
        long measuredStart = System.nanoTime();
        long left = end - measuredStart;
        if (left > 0) Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
        long cpu = cpuNs() - cpuStart;
        long elapsed = System.nanoTime() - measuredStart;
        for (Thread t : lanes) t.join();
        return result(ios.sum(), elapsed, cpu);
    }

    private static Result result(long ios, long elapsedNs, long cpuNs) {
        double iops = ios * 1e9 / elapsedNs;
        return new Result(iops, cpuNs / 1e3 / Math.max(ios, 1), (double) cpuNs / elapsedNs);
    }
}
