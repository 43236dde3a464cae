package io.iotarget.control.calibrate;

import io.iotarget.engine.Engine;
import io.iotarget.model.ControlException;
import io.iotarget.model.Device;
import io.iotarget.model.Errno;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import org.HdrHistogram.Histogram;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * One calibration of one device (package doc): {@link #prepare} checks that the device may be
 * measured, {@link #run} measures it and returns the io.cost.model and io.cost.qos lines. The
 * thread that calls {@link #run} drives every request; completions only hand the request back
 * to it. Not reusable; {@link #close} lets another calibration of the device start.
 */
public final class Calibration implements AutoCloseable {
    /** Seconds each of the six runs lasts unless asked otherwise: 18 s in all. */
    public static final int DEFAULT_SECONDS = 3;
    /** iocost_coef_gen.py's default run is 120 s; longer than that measures nothing new. */
    static final int MAX_SECONDS = 120;
    /** A device a tenant sent IO to within this long is in use. */
    static final long IN_USE_WINDOW_NS = TimeUnit.SECONDS.toNanos(10);
    /** The small IO of the IOPS runs: iocost's page. */
    static final int SMALL_BYTES = 4096;
    /**
     * Requests a 4 KiB run keeps outstanding beyond the device's queue depth, at most (a 1 MiB run
     * keeps twice its depth too): the extra
     * ones wait in the device's queue and start the moment a slot frees, on the thread that
     * completed it, so the device never runs dry while this calibration's thread is late (as
     * iocost_coef_gen.py's fio keeps 64 outstanding whatever the device takes).
     */
    static final int EXTRA_DEPTH = 1024;
    /** The large IO of the bandwidth runs, at most {@link #LARGE_DEPTH} at once, as many more waiting (32 MiB of buffers). */
    static final int LARGE_BYTES = 1 << 20;
    static final int LARGE_DEPTH = 16;
    /** The first fifth of each run brings the device to its steady state and is not counted. */
    static final int WARMUP_DIVISOR = 5;
    /** Reads and writes are this many percent over their target latency before iocost calls the device busy. */
    static final int QOS_PCT = 95;
    /** How often a run reports its progress (and the endpoint's stream proves the client is there). */
    static final long PROGRESS_NS = TimeUnit.SECONDS.toNanos(1);
    /** Devices being calibrated now: one calibration per device at a time. */
    private static final Set<Device> RUNNING = ConcurrentHashMap.newKeySet();

    /** Hears a calibration's progress, a line at a time; false stops it (the listener went away). */
    @FunctionalInterface
    public interface Progress {
        boolean report(String line) throws InterruptedException;
    }

    /** {@code seconds=N force=1}, the CLI's {@code --seconds} and {@code --force}. */
    public record Options(int seconds, boolean force) {
        public static Options parse(String text) throws ControlException {
            int seconds = DEFAULT_SECONDS;
            boolean force = false;
            for (String token : text.strip().split("\\s+")) {
                if (token.isEmpty()) continue;
                String[] kv = token.split("=", 2);
                String value = kv.length == 2 ? kv[1] : "";
                switch (kv[0]) {
                    case "seconds" -> {
                        try {
                            seconds = Integer.parseInt(value);
                        } catch (NumberFormatException e) {
                            seconds = -1;
                        }
                        if (seconds < 1 || seconds > MAX_SECONDS) {
                            throw new ControlException(Errno.EINVAL, "seconds=" + value + " (expected: 1.." + MAX_SECONDS + ")");
                        }
                    }
                    case "force" -> {
                        if (!value.equals("0") && !value.equals("1")) throw new ControlException(Errno.EINVAL, "force=" + value + " (expected: 0 or 1)");
                        force = value.equals("1");
                    }
                    default -> throw new ControlException(Errno.EINVAL, "unknown option '" + token + "' (expected: seconds=N, force=0|1)");
                }
            }
            return new Options(seconds, force);
        }
    }

    /**
     * What a calibration found: io.cost.model's six coefficients and the p99 latencies of
     * random 4 KiB reads and writes on the saturated device (from its start of each request to
     * its completion), in µs.
     */
    public record Result(Device device, long rbps, long rseqiops, long rrandiops, long wbps, long wseqiops, long wrandiops,
                         long rlatUs, long wlatUs) {
        /** The line to write to io.cost.model. */
        public String modelLine() {
            return device.number() + " ctrl=user model=linear rbps=" + rbps + " rseqiops=" + rseqiops + " rrandiops=" + rrandiops
                   + " wbps=" + wbps + " wseqiops=" + wseqiops + " wrandiops=" + wrandiops;
        }

        /** The line to write to io.cost.qos: enable, with latency targets a device at its own depth meets. */
        public String qosLine() {
            return device.number() + " enable=1 ctrl=user rpct=" + QOS_PCT + ".00 rlat=" + rlatUs + " wpct=" + QOS_PCT + ".00 wlat=" + wlatUs;
        }
    }

    /** One of the six runs, in iocost_coef_gen.py's order. */
    private record Run(String key, boolean write, boolean random, int bytes, String what) {
    }

    private static final List<Run> RUNS = List.of(
            new Run("rbps", false, false, LARGE_BYTES, "sequential 1 MiB reads"),
            new Run("rseqiops", false, false, SMALL_BYTES, "sequential 4 KiB reads"),
            new Run("rrandiops", false, true, SMALL_BYTES, "random 4 KiB reads"),
            new Run("wbps", true, false, LARGE_BYTES, "sequential 1 MiB writes"),
            new Run("wseqiops", true, false, SMALL_BYTES, "sequential 4 KiB writes"),
            new Run("wrandiops", true, true, SMALL_BYTES, "random 4 KiB writes"));

    private final Engine engine;
    private final Device device;
    private final Options options;
    private final int depth;
    private final long startNs;

    private Calibration(Engine engine, Device device, Options options) {
        this.engine = engine;
        this.device = device;
        this.options = options;
        this.depth = engine.queueDepth(device);
        this.startNs = engine.clock().nanoTime();
    }

    /**
     * Checks that {@code deviceKey} (a name or MAJ:MIN) can be measured now.
     *
     * @throws ControlException ENODEV: no such device; EINVAL: bad options or a device under
     *                          1 MiB; EROFS: read-only (the write runs write); EBUSY: a tenant sent it
     *                          IO within the last 10 s and {@code force=1} was not given, or it
     *                          is being calibrated
     */
    public static Calibration prepare(Engine engine, String deviceKey, String optionsText) throws ControlException {
        Options options = Options.parse(optionsText);
        Device device = find(engine, deviceKey.strip());
        if (device.readOnly()) throw new ControlException(Errno.EROFS, device.name() + " is read-only: calibrate writes (back what it read)");
        if (device.sizeBytes() < LARGE_BYTES) throw new ControlException(Errno.EINVAL, device.name() + " is smaller than 1 MiB");
        long last = engine.lastTenantSubmitNs(device);
        long agoNs = engine.clock().nanoTime() - last;
        if (!options.force() && last != Long.MIN_VALUE && agoNs < IN_USE_WINDOW_NS) {
            throw new ControlException(Errno.EBUSY, device.name() + " is in use: a tenant sent it IO " + String.format(Locale.ROOT, "%.1f", agoNs / 1e9)
                                                     + " s ago (within 10 s). Calibrating would slow the tenants and their IO would spoil"
                                                     + " the measurement; stop them first, or pass --force");
        }
        if (!RUNNING.add(device)) throw new ControlException(Errno.EBUSY, device.name() + " is being calibrated already");
        return new Calibration(engine, device, options);
    }

    private static Device find(Engine engine, String key) throws ControlException {
        for (Device d : engine.devices()) {
            if (d.name().equals(key) || d.number().toString().equals(key)) return d;
        }
        throw new ControlException(Errno.ENODEV, "no device " + key + " (bin/iotarget devices lists them)");
    }

    /** What will happen and how long it takes: the first line a calibration reports. */
    public String plan() {
        return "calibrating " + device.name() + " (" + device.number() + "): 6 runs of " + options.seconds() + " s at the device's depth " + depth
               + " (1 MiB runs at " + largeDepth() + "), about " + 6 * options.seconds() + " s;"
               + " writes put back the bytes just read, so the contents do not change";
    }

    private int largeDepth() {
        return Math.min(depth, LARGE_DEPTH);
    }

    /**
     * Measures the device; reports each run's start, a line a second and its result.
     *
     * @throws ControlException EBUSY when a tenant sent IO meanwhile (unless forced), EIO when a
     *                          request failed or the writes could not be told from the reads,
     *                          EINTR when {@code progress} stopped it
     */
    public Result run(Progress progress) throws ControlException, InterruptedException {
        if (!progress.report(plan())) throw stopped();
        long[] found = new long[RUNS.size()];
        long[] p99Us = new long[2];
        for (int i = 0; i < RUNS.size(); i++) {
            Run run = RUNS.get(i);
            if (!progress.report("[" + (i + 1) + "/6] " + run.key() + ": " + run.what() + "...")) throw stopped();
            // A write run reads each block and writes it back: the reads' share of the time comes off with the read run's rate.
            long readRate = run.write() ? found[i - 3] : 0;
            Histogram latencies = new Histogram(3);
            found[i] = measure(run, readRate, latencies, progress);
            if (run.random()) p99Us[run.write() ? 1 : 0] = Math.max(1, (latencies.getValueAtPercentile(99) + 999) / 1000);
            if (!progress.report("      " + run.key() + "=" + found[i] + (run.random() ? "  (p99 latency " + p99Us[run.write() ? 1 : 0] + " µs)" : ""))) {
                throw stopped();
            }
        }
        return new Result(device, found[0], found[1], found[2], found[3], found[4], found[5], p99Us[0], p99Us[1]);
    }

    /** The device may be calibrated again (requests of a run stopped half-way may still complete). */
    @Override
    public void close() {
        RUNNING.remove(device);
    }

    private static ControlException stopped() {
        return new ControlException(Errno.EINTR, "calibration stopped: the client went away");
    }

    /** A request slot: its request, its buffer, and whether its read is to be written back next. */
    private static final class Slot {
        final IoRequest io = new IoRequest();
        final ByteBuffer buffer;
        boolean writeBackNext;

        Slot(int bytes) {
            buffer = ByteBuffer.allocateDirect(bytes + 4096).alignedSlice(4096).limit(bytes).slice();
        }
    }

    /**
     * One run: {@code depth} requests kept on the device for the run's seconds, counting what
     * completes after the warm-up. Returns bytes per second for a 1 MiB run, IOPS otherwise.
     */
    private long measure(Run run, long readRate, Histogram latencies, Progress progress) throws ControlException, InterruptedException {
        int slots = run.bytes() == LARGE_BYTES ? 2 * largeDepth() : depth + Math.min(depth, EXTRA_DEPTH);
        ArrayBlockingQueue<Slot> completed = new ArrayBlockingQueue<>(slots);
        long blocks = device.sizeBytes() / run.bytes();
        long runNs = TimeUnit.SECONDS.toNanos(options.seconds());
        long begin = engine.clock().nanoTime();
        long countFrom = begin + runNs / WARMUP_DIVISOR;
        long end = begin + runNs;
        long nextBlock = 0;
        long reads = 0;
        long writes = 0;
        int outstanding = 0;
        for (int i = 0; i < slots; i++) {
            Slot s = new Slot(run.bytes());
            issue(s, IoOp.READ, (run.random() ? ThreadLocalRandom.current().nextLong(blocks) : nextBlock++ % blocks) * run.bytes(), completed);
            s.writeBackNext = run.write();
            outstanding++;
        }
        long nextReportNs = begin + PROGRESS_NS;
        long reportedReads = 0;
        long reportedWrites = 0;
        while (outstanding > 0) {
            Slot s = completed.poll(100, TimeUnit.MILLISECONDS);
            long now = engine.clock().nanoTime();
            if (s != null) {
                IoRequest io = s.io;
                if (io.status() != IoStatus.OK) {
                    throw new ControlException(Errno.EIO, run.key() + ": a " + io.op() + " at " + io.offset() + " ended " + io.status());
                }
                boolean wrote = io.op() == IoOp.WRITE;
                if (io.completeNs() - countFrom >= 0 && io.completeNs() - end <= 0) {
                    if (wrote) writes++;
                    else reads++;
                    // The device's own latency, from its start: not the wait for a slot that the extra requests add.
                    if (run.random() && wrote == run.write()) latencies.recordValue(Math.max(0, io.completeNs() - io.issueNs()));
                }
                if (now - end < 0) {
                    long offset = io.offset();
                    if (s.writeBackNext) {
                        issue(s, IoOp.WRITE, offset, completed);
                        s.writeBackNext = false;
                    } else {
                        issue(s, IoOp.READ, (run.random() ? ThreadLocalRandom.current().nextLong(blocks) : nextBlock++ % blocks) * run.bytes(), completed);
                        s.writeBackNext = run.write();
                    }
                } else {
                    outstanding--;
                }
            }
            if (now - nextReportNs >= 0) {
                nextReportNs += PROGRESS_NS;
                checkAlone();
                long done = run.write() ? writes - reportedWrites : reads - reportedReads;
                reportedReads = reads;
                reportedWrites = writes;
                String rate = now - countFrom < PROGRESS_NS ? "warming up" : run.bytes() == LARGE_BYTES
                        ? String.format(Locale.ROOT, "%.1f MB/s", done * (double) run.bytes() / 1e6) : done + " IOPS";
                if (!progress.report("      " + (now - begin) / 1_000_000_000L + " s: " + rate)) throw stopped();
            }
        }
        checkAlone();
        double windowSeconds = (end - countFrom) / 1e9;
        double writeSeconds = windowSeconds;
        if (run.write()) {
            double readSeconds = run.bytes() == LARGE_BYTES ? reads * (double) run.bytes() / readRate : reads / (double) readRate;
            writeSeconds = windowSeconds - readSeconds;
            if (writeSeconds < windowSeconds / 20) {
                // The reads ran (nearly) as fast as the whole run: the device is faster now than in
                // the read run (a CPU-bound memory backend warming up, a cache). Nothing to take
                // off then: reads and writes are counted alike.
                writeSeconds = windowSeconds * writes / (double) (reads + writes);
                if (!progress.report("      (reads ran faster than in the read run: reads and writes counted alike)")) throw stopped();
            }
        }
        long count = run.write() ? writes : reads;
        if (count == 0) throw new ControlException(Errno.EIO, run.key() + ": nothing completed in " + windowSeconds + " s");
        double perSecond = count / writeSeconds;
        return Math.round(run.bytes() == LARGE_BYTES ? perSecond * run.bytes() : perSecond);
    }

    private void issue(Slot s, IoOp op, long offset, ArrayBlockingQueue<Slot> completed) {
        s.io.reset();
        s.io.set(op, 0, offset, s.buffer.capacity(), s.buffer.clear())
                .target(device, engine.controller().root())
                .callback(io -> completed.add(s), null, 0);
        engine.submitUncharged(s.io);
    }

    /** A tenant's IO during the calibration spoils it (unless forced). */
    private void checkAlone() throws ControlException {
        long last = engine.lastTenantSubmitNs(device);
        if (!options.force() && last != Long.MIN_VALUE && last - startNs > 0) {
            throw new ControlException(Errno.EBUSY, "a tenant sent IO to " + device.name() + " during the calibration: its numbers"
                                                    + " would be wrong; stop the tenants and run it again, or pass --force");
        }
    }
}
