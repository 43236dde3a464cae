package io.iotarget.frontend.nvmetcp.load;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.backend.nullblk.NullBackend;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.frontend.nvmetcp.TlsPskClient;
import io.iotarget.frontend.nvmetcp.auth.TlsKey;
import io.iotarget.model.ConfigTree;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * iotarget's NVMe/TCP load generator: N IO queues of one controller, each kept at a fixed
 * queue depth by its own thread (closed loop: every completion sends the next command), with
 * 4 KiB..1 MiB reads and writes, in-capsule or through R2T/H2CData, optionally with header and
 * data digests. It speaks to any NVMe/TCP target; without {@code --target} it starts iotarget's
 * target in the same JVM on a null, memory or file ({@code --backend file:PATH}, O_DIRECT)
 * backend, optionally charged to a group with io.max ({@code --io-max 'riops=20000'}), and also
 * reports the whole process's heap allocation per IO. The steady state allocates nothing on the generator's side.
 * With {@code --tls-key} (a host key in interchange format, {@code hosts/NQN/tls_key} of the
 * generator's host NQN, {@code --hostnqn}) every queue runs over TLS 1.3 with the identity and PSK derived from it
 * (Bouncy Castle's blocking client, one more copy per read and write on this side); with
 * {@code --server-pid} it reports that process's CPU (utime+stime) per IO over the measured window.
 *
 * <pre>
 *   bench/nvme-load.sh --backend null --queues 2 --depth 32 --bs 4096 --rw randread --seconds 10
 *   bench/nvme-load.sh --target 127.0.0.1:4420 --nqn nqn.2026-11.io.iotarget:default --rw randwrite
 * </pre>
 */
public final class NvmeLoadGenerator {
    private static final int PDU_CAPSULE_CMD = 0x04, PDU_CAPSULE_RESP = 0x05, PDU_H2C_DATA = 0x06, PDU_C2H_DATA = 0x07, PDU_R2T = 0x09;
    private static final int F_HDGST = 1, F_DDGST = 2, F_LAST = 4, F_SUCCESS = 8;
    private static final String HOST_NQN = "nqn.2014-08.org.nvmexpress:uuid:10ad0000-0000-0000-0000-000000000001";
    private static final String DEFAULT_NQN = "nqn.2026-11.io.iotarget:bench";

    record Options(String target, String nqn, String backend, long sizeBytes, int queues, int depth, int blockSize,
                   String rw, int readPercent, double seconds, double warmup, boolean digests, int inlineLimit, String ioMax,
                   String tlsKey, long serverPid, String hostNqn) {
        static Options parse(String[] args) {
            String target = null, nqn = DEFAULT_NQN, backend = "null", rw = "randread";
            long size = 1L << 30;
            int queues = 2, depth = 32, bs = 4096, readPercent = 70, inline = 16384;
            double seconds = 10, warmup = 2;
            boolean digests = false;
            String ioMax = null, tlsKey = null, hostNqn = HOST_NQN;
            long serverPid = 0;
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--target" -> target = args[++i];
                    case "--nqn" -> nqn = args[++i];
                    case "--backend" -> backend = args[++i];
                    case "--size" -> size = Long.parseLong(args[++i]);
                    case "--queues" -> queues = Integer.parseInt(args[++i]);
                    case "--depth" -> depth = Integer.parseInt(args[++i]);
                    case "--bs" -> bs = Integer.parseInt(args[++i]);
                    case "--rw" -> rw = args[++i];
                    case "--read-percent" -> readPercent = Integer.parseInt(args[++i]);
                    case "--seconds" -> seconds = Double.parseDouble(args[++i]);
                    case "--warmup" -> warmup = Double.parseDouble(args[++i]);
                    case "--digests" -> digests = true;
                    case "--inline" -> inline = Integer.parseInt(args[++i]);
                    case "--io-max" -> ioMax = args[++i];
                    case "--tls-key" -> tlsKey = args[++i];
                    case "--server-pid" -> serverPid = Long.parseLong(args[++i]);
                    case "--hostnqn" -> hostNqn = args[++i];
                    default -> throw new IllegalArgumentException("unknown option " + a + " (expected: --target HOST:PORT --nqn NQN "
                            + "--backend null|memory|file:PATH --size BYTES --queues N --depth N --bs BYTES "
                            + "--rw read|write|randread|randwrite|randrw --read-percent P --seconds S --warmup S --digests --inline BYTES "
                            + "--io-max 'riops=N wbps=N ...' --tls-key NVMeTLSkey-1:.. --server-pid PID --hostnqn NQN)");
                }
            }
            if (!List.of("read", "write", "randread", "randwrite", "randrw").contains(rw)) throw new IllegalArgumentException("--rw " + rw);
            if (ioMax != null && target != null) throw new IllegalArgumentException("--io-max needs the in-process target");
            return new Options(target, nqn, backend, size, queues, depth, bs, rw, readPercent, seconds, warmup, digests, inline, ioMax,
                    tlsKey, serverPid, hostNqn);
        }
    }

    public static void main(String[] args) throws Exception {
        Options o = Options.parse(args);
        Engine engine = null;
        NvmeTarget target = null;
        String host = "127.0.0.1";
        int port;
        if (o.target() == null) {
            engine = new Engine();
            String devicePath = "bench";
            switch (o.backend()) {
                case "memory" -> engine.addDevice("bench", new MemoryBackend(o.sizeBytes(), 512, false), null, Engine.DEFAULT_QUEUE_DEPTH);
                case "null" -> engine.addDevice("bench", new NullBackend(o.sizeBytes(), 512, false), null, Engine.DEFAULT_QUEUE_DEPTH);
                default -> {
                    if (!o.backend().startsWith("file:")) throw new IllegalArgumentException("--backend null|memory|file:PATH");
                    devicePath = o.backend().substring("file:".length());      // the namespace opens it (O_DIRECT)
                    try (java.io.RandomAccessFile f = new java.io.RandomAccessFile(devicePath, "rw")) {
                        if (f.length() < o.sizeBytes()) f.setLength(o.sizeBytes());
                    }
                }
            }
            target = new NvmeTarget(engine);
            port = inProcessTarget(target.tree(), o.nqn(), devicePath);
            if (o.ioMax() != null) {
                // The namespace's IO is charged to group "bench", limited by io.max (seed 001's case at full speed).
                String ns = "subsystems/" + o.nqn() + "/namespaces/1";
                engine.controller().write("cgroup.subtree_control", "+io");
                engine.controller().mkdir("bench");
                engine.controller().write("bench/io.max", engine.device(devicePath).number() + " " + o.ioMax());
                target.tree().write(ns + "/enable", "0");
                target.tree().write(ns + "/cgroup", "bench");
                target.tree().write(ns + "/enable", "1");
            }
        } else {
            host = o.target().substring(0, o.target().lastIndexOf(':'));
            port = Integer.parseInt(o.target().substring(o.target().lastIndexOf(':') + 1));
        }
        try {
            run(o, host, port);
        } finally {
            if (target != null) target.close();
            if (engine != null) engine.close();
        }
    }

    private static int inProcessTarget(ConfigTree tree, String nqn, String devicePath) throws Exception {
        int port;
        try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
            port = probe.getLocalPort();
        }
        String s = "subsystems/" + nqn;
        tree.mkdir(s);
        tree.write(s + "/attr_allow_any_host", "1");
        tree.mkdir(s + "/namespaces/1");
        tree.write(s + "/namespaces/1/device_path", devicePath);
        tree.write(s + "/namespaces/1/enable", "1");
        tree.mkdir("ports/1");
        tree.write("ports/1/addr_trtype", "tcp");
        tree.write("ports/1/addr_adrfam", "ipv4");
        tree.write("ports/1/addr_traddr", "127.0.0.1");
        tree.write("ports/1/addr_trsvcid", Integer.toString(port));
        tree.link(s, "ports/1/subsystems/" + nqn);
        return port;
    }

    private static void run(Options o, String host, int port) throws Exception {
        Queue admin = new Queue(o, host, port, 0, 32);
        int cntlid = admin.connect(o.nqn(), 0xFFFF, 0);
        admin.command(fabrics(0x00, 0x14, 0x460001, false), 0);           // CC.EN
        long csts = 0;
        for (int i = 0; i < 100 && (csts & 1) == 0; i++) csts = admin.command(fabrics(0x04, 0x1C, 0, false), 0);
        if ((csts & 1) == 0) throw new IOException("controller never became ready");
        ByteBuffer idns = admin.identifyNamespace();
        long blocks = idns.getLong(0);
        int lbaShift = (idns.getInt(128) >>> 16) & 0xFF;
        List<Queue> queues = new ArrayList<>();
        for (int q = 1; q <= o.queues(); q++) {
            Queue queue = new Queue(o, host, port, q, Math.max(o.depth() + 1, 2));
            queue.connect(o.nqn(), cntlid, q);
            queue.prepare(blocks, lbaShift, q);
            queues.add(queue);
        }
        var memory = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        List<Thread> threads = new ArrayList<>();
        for (Queue q : queues) threads.add(Thread.ofPlatform().name("load-q" + q.qid).start(q::loop));
        Thread.sleep((long) (o.warmup() * 1000));
        long allocated0 = memory.getTotalThreadAllocatedBytes(), cpu0 = os.getProcessCpuTime(), t0 = System.nanoTime();
        long server0 = serverCpuTicks(o.serverPid());
        for (Queue q : queues) q.startMeasuring();
        Thread.sleep((long) (o.seconds() * 1000));
        for (Queue q : queues) q.stopMeasuring();
        long elapsedNs = System.nanoTime() - t0, cpuNs = os.getProcessCpuTime() - cpu0, allocated = memory.getTotalThreadAllocatedBytes() - allocated0;
        long serverTicks = serverCpuTicks(o.serverPid()) - server0;
        for (Queue q : queues) q.stop();
        for (Thread t : threads) t.join(10_000);
        Histogram all = new Histogram();
        long ios = 0, bytes = 0;
        for (Queue q : queues) {
            all.add(q.latency);
            ios += q.measuredIos;
            bytes += q.measuredBytes;
            if (q.failure != null) throw q.failure;
        }
        double s = elapsedNs / 1e9;
        System.out.printf(Locale.ROOT, "RESULT rw=%s bs=%d queues=%d depth=%d digests=%s backend=%s%s iops=%.0f MiBps=%.1f "
                        + "lat_us_p50=%.1f p99=%.1f p99.9=%.1f cpu_us_per_io=%.2f alloc_bytes_per_io=%s server_cpu_us_per_io=%s tls=%s seconds=%.1f%n",
                o.rw(), o.blockSize(), o.queues(), o.depth(), o.digests(), o.target() == null ? o.backend() : "external",
                o.ioMax() == null ? "" : " io.max='" + o.ioMax() + "'",
                ios / s, bytes / s / (1 << 20), all.percentile(50) / 1e3, all.percentile(99) / 1e3, all.percentile(99.9) / 1e3,
                cpuNs / 1e3 / ios, o.target() == null ? String.format(Locale.ROOT, "%.1f", (double) allocated / ios) : "n/a",
                o.serverPid() == 0 ? "n/a" : String.format(Locale.ROOT, "%.2f", serverTicks * 1e6 / CLOCK_TICKS / ios), o.tlsKey() != null, s);
        admin.close();
        for (Queue q : queues) q.close();
    }

    /** USER_HZ, which /proc/PID/stat counts in on Linux. */
    private static final double CLOCK_TICKS = 100;

    /** utime + stime of {@code pid} in clock ticks (/proc/PID/stat fields 14 and 15), or 0 without a pid. */
    private static long serverCpuTicks(long pid) throws IOException {
        if (pid == 0) return 0;
        String stat = java.nio.file.Files.readString(java.nio.file.Path.of("/proc/" + pid + "/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    private static ByteBuffer fabrics(int type, int offset, long value, boolean eightBytes) {
        ByteBuffer sqe = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        sqe.put(0, (byte) 0x7F);
        sqe.put(4, (byte) type);
        sqe.put(40, (byte) (eightBytes ? 1 : 0));
        sqe.putInt(44, offset);
        sqe.putLong(48, value);
        return sqe;
    }

    /** Log-linear latency histogram (64 sub-buckets per power of two: ±1.6 %), allocation-free. */
    static final class Histogram {
        private final long[] counts = new long[64 * 64];
        private long total;

        void record(long ns) {
            int exp = 63 - Long.numberOfLeadingZeros(Math.max(ns, 1));
            int sub = exp < 6 ? (int) ns : (int) (ns >>> (exp - 6)) & 63;
            counts[Math.min(exp, 63) * 64 + sub]++;
            total++;
        }

        void add(Histogram other) {
            for (int i = 0; i < counts.length; i++) counts[i] += other.counts[i];
            total += other.total;
        }

        double percentile(double p) {
            long want = (long) Math.ceil(total * p / 100), seen = 0;
            for (int i = 0; i < counts.length; i++) {
                seen += counts[i];
                if (seen >= want && counts[i] > 0) {
                    int exp = i / 64, sub = i % 64;
                    return exp < 6 ? sub : (double) (64 + sub) * (1L << (exp - 6));
                }
            }
            return 0;
        }
    }

    /** One queue: its socket, its commands in flight, its share of the numbers. One thread. */
    static final class Queue {
        final Options o;
        final int qid;
        final int depth;
        private final SocketChannel channel;
        /** The TLS streams over the channel, or null: plaintext. */
        private java.io.InputStream tlsIn;
        private java.io.OutputStream tlsOut;
        private byte[] tlsScratch;
        private final ByteBuffer in = ByteBuffer.allocateDirect(1 << 21).order(ByteOrder.LITTLE_ENDIAN);
        private final ByteBuffer out = ByteBuffer.allocateDirect(1 << 21).order(ByteOrder.LITTLE_ENDIAN);
        private final ByteBuffer writeData;
        private final CRC32C crc = new CRC32C();
        private final long[] issuedAt;
        private int maxH2C;
        private long blocks;
        private int lbaShift;
        private SplittableRandom random;
        private long sequential;
        final Histogram latency = new Histogram();
        private volatile boolean measuring;
        private volatile boolean running = true;
        long measuredIos;
        long measuredBytes;
        volatile Exception failure;

        Queue(Options o, String host, int port, int qid, int depth) throws IOException {
            this.o = o;
            this.qid = qid;
            this.depth = depth;
            channel = SocketChannel.open(new InetSocketAddress(host, port));
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            if (o.tlsKey() != null) {
                TlsKey key = TlsKey.parse(o.tlsKey());
                String identity = key.identity(1, o.hostNqn(), o.nqn());
                var protocol = new TlsPskClient(identity, key.tlsPsk(identity, o.hostNqn()), key.sha384()).handshake(channel.socket());
                tlsIn = protocol.getInputStream();
                tlsOut = protocol.getOutputStream();
                tlsScratch = new byte[1 << 21];
            }
            byte[] data = new byte[Math.max(o.blockSize(), 4096)];
            new SplittableRandom(qid).nextBytes(data);
            writeData = ByteBuffer.allocateDirect(data.length).put(data).flip();
            issuedAt = new long[depth + 1];
            ByteBuffer ic = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
            ic.put(0, (byte) 0).put(2, (byte) 128).putInt(4, 128).put(11, (byte) (o.digests() ? 3 : 0));
            writeAll(ic);
            ByteBuffer resp = readExactly(128);
            if (resp.get(0) != 0x01) throw new IOException("no ICResp");
            maxH2C = resp.getInt(12);
        }

        int connect(String nqn, int cntlid, int qid) throws IOException {
            ByteBuffer sqe = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
            sqe.put(0, (byte) 0x7F).put(4, (byte) 0x01);
            sqe.putShort(42, (short) qid).putShort(44, (short) (depth - 1)).putInt(48, qid == 0 ? 30_000 : 0);
            ByteBuffer data = ByteBuffer.allocate(1024);
            data.put(16, (byte) cntlid).put(17, (byte) (cntlid >>> 8));
            data.put(256, nqn.getBytes(StandardCharsets.UTF_8)).put(512, o.hostNqn().getBytes(StandardCharsets.UTF_8));
            return (int) command(sqe, data, 0) & 0xFFFF;
        }

        ByteBuffer identifyNamespace() throws IOException {
            ByteBuffer sqe = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
            sqe.put(0, (byte) 0x06).putInt(4, 1).putInt(40, 0);
            ByteBuffer[] data = new ByteBuffer[1];
            command(sqe, null, 4096, data);
            return data[0];
        }

        long command(ByteBuffer sqe, int dataIn) throws IOException {
            return command(sqe, null, dataIn, new ByteBuffer[1]);
        }

        long command(ByteBuffer sqe, ByteBuffer dataOut, int dataIn) throws IOException {
            return command(sqe, dataOut, dataIn, new ByteBuffer[1]);
        }

        /** One command at a time (set-up only): in-capsule data out, C2HData in; returns DW0-1. */
        long command(ByteBuffer sqe, ByteBuffer dataOut, int dataIn, ByteBuffer[] received) throws IOException {
            sqe.put(1, (byte) 0x40).putShort(2, (short) 0);
            int len = dataOut == null ? dataIn : dataOut.capacity();
            sqe.putInt(32, len).put(39, (byte) (dataOut != null ? 0x01 : 0x5A));
            out.clear();
            capsule(sqe, dataOut);
            out.flip();
            writeAll(out);
            while (true) {
                int h = readPdu();
                int type = in.get(h);
                if (type == PDU_C2H_DATA) {
                    int n = in.getInt(h + 16);
                    received[0] = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
                    received[0].put(0, in, pduDataAt, n);
                } else if (type == PDU_CAPSULE_RESP) {
                    int status = (in.getShort(h + 8 + 14) & 0xFFFF) >>> 1;
                    if (status != 0) throw new IOException("command 0x" + Integer.toHexString(sqe.get(0)) + " failed: status 0x" + Integer.toHexString(status));
                    return in.getLong(h + 8);
                }
            }
        }

        void prepare(long blocks, int lbaShift, int seed) {
            this.blocks = blocks;
            this.lbaShift = lbaShift;
            this.random = new SplittableRandom(seed * 7919L);
        }

        void startMeasuring() {
            measuring = true;
        }

        void stopMeasuring() {
            measuring = false;
        }

        void stop() {
            running = false;
        }

        /** Fills the queue to its depth, then answers every completion with a new command. */
        void loop() {
            try {
                out.clear();
                for (int cid = 1; cid <= o.depth(); cid++) issue(cid);
                flushOut();
                while (running) {
                    int h = readPdu();
                    int type = in.get(h);
                    switch (type) {
                        case PDU_R2T -> {
                            out.clear();
                            h2cData(in.getShort(h + 8), in.getShort(h + 10), in.getInt(h + 12), in.getInt(h + 16));
                            flushOut();
                        }
                        case PDU_C2H_DATA -> {
                            if ((in.get(h + 1) & F_SUCCESS) != 0) complete(in.getShort(h + 8) & 0xFFFF, 0);
                        }
                        case PDU_CAPSULE_RESP -> complete(in.getShort(h + 8 + 12) & 0xFFFF, (in.getShort(h + 8 + 14) & 0xFFFF) >>> 1);
                        default -> throw new IOException("unexpected PDU " + type);
                    }
                }
            } catch (Exception e) {
                if (running) failure = e;
            }
        }

        private void complete(int cid, int status) throws IOException {
            if (status != 0) throw new IOException("IO failed with status 0x" + Integer.toHexString(status));
            if (measuring) {
                latency.record(System.nanoTime() - issuedAt[cid]);
                measuredIos++;
                measuredBytes += o.blockSize();
            }
            if (!running) return;
            out.clear();
            issue(cid);
            flushOut();
        }

        private void issue(int cid) {
            boolean read = switch (o.rw()) {
                case "read", "randread" -> true;
                case "randrw" -> random.nextInt(100) < o.readPercent();
                default -> false;
            };
            long lbas = o.blockSize() >>> lbaShift;
            long slba = o.rw().startsWith("rand") ? random.nextLong(blocks / lbas) * lbas : (sequential += lbas) % (blocks - lbas);
            int inlineWrite = !read && o.blockSize() <= o.inlineLimit() ? 1 : 0;
            int at = out.position();
            int hd = o.digests() ? 4 : 0;
            // CapsuleCmd header and SQE
            for (int i = 0; i < 72; i++) out.put(at + i, (byte) 0);
            out.put(at + 8, (byte) (read ? 0x02 : 0x01)).put(at + 9, (byte) 0x40).putShort(at + 10, (short) cid).putInt(at + 12, 1);
            out.putInt(at + 8 + 32, o.blockSize()).put(at + 8 + 39, (byte) (inlineWrite == 1 ? 0x01 : 0x5A));
            out.putLong(at + 8 + 40, slba).putInt(at + 8 + 48, (int) (lbas - 1));
            int data = inlineWrite == 1 ? o.blockSize() : 0;
            int dd = data > 0 && o.digests() ? 4 : 0;
            int flags = (o.digests() ? F_HDGST : 0) | (dd > 0 ? F_DDGST : 0);
            out.put(at, (byte) PDU_CAPSULE_CMD).put(at + 1, (byte) flags).put(at + 2, (byte) 72)
               .put(at + 3, (byte) (data > 0 ? 72 + hd : 0)).putInt(at + 4, 72 + hd + data + dd);
            out.position(at + 72);
            headerDigest(at, 72);
            if (data > 0) payload(0, data);
            issuedAt[cid] = System.nanoTime();
        }

        private void capsule(ByteBuffer sqe, ByteBuffer data) {
            int at = out.position();
            int hd = o.digests() ? 4 : 0;
            int n = data == null ? 0 : data.capacity();
            int dd = n > 0 && o.digests() ? 4 : 0;
            out.put(at, (byte) PDU_CAPSULE_CMD).put(at + 1, (byte) ((o.digests() ? F_HDGST : 0) | (dd > 0 ? F_DDGST : 0)))
               .put(at + 2, (byte) 72).put(at + 3, (byte) (n > 0 ? 72 + hd : 0)).putInt(at + 4, 72 + hd + n + dd);
            out.put(at + 8, sqe, 0, 64);
            out.position(at + 72);
            headerDigest(at, 72);
            if (n > 0) {
                int from = out.position();
                out.put(data.duplicate().clear());
                if (dd > 0) {
                    crc.reset();
                    crc.update(out.duplicate().limit(out.position()).position(from));
                    out.putInt((int) crc.getValue());
                }
            }
        }

        private void h2cData(short cid, short ttag, int offset, int length) {
            for (int done = 0; done < length; ) {
                int n = Math.min(maxH2C, length - done);
                int at = out.position();
                int hd = o.digests() ? 4 : 0, dd = o.digests() ? 4 : 0;
                boolean last = done + n == length;
                out.put(at, (byte) PDU_H2C_DATA).put(at + 1, (byte) ((o.digests() ? F_HDGST | F_DDGST : 0) | (last ? F_LAST : 0)))
                   .put(at + 2, (byte) 24).put(at + 3, (byte) (24 + hd)).putInt(at + 4, 24 + hd + n + dd);
                out.putShort(at + 8, cid).putShort(at + 10, ttag).putInt(at + 12, offset + done).putInt(at + 16, n).putInt(at + 20, 0);
                out.position(at + 24);
                headerDigest(at, 24);
                payload(offset + done, n);
                done += n;
            }
        }

        /** Appends [offset, offset + n) of the write pattern (wrapping) and its data digest. */
        private void payload(int offset, int n) {
            int from = out.position();
            for (int done = 0; done < n; ) {
                int k = Math.min(n - done, writeData.capacity() - ((offset + done) % writeData.capacity()));
                out.put(out.position(), writeData, (offset + done) % writeData.capacity(), k);
                out.position(out.position() + k);
                done += k;
            }
            if (o.digests()) {
                int limit = out.limit(), end = out.position();
                out.limit(end).position(from);
                crc.reset();
                crc.update(out);
                out.limit(limit);
                out.putInt((int) crc.getValue());
            }
        }

        private void headerDigest(int at, int hlen) {
            if (!o.digests()) return;
            int end = out.position(), limit = out.limit();
            out.limit(at + hlen).position(at);
            crc.reset();
            crc.update(out);
            out.limit(limit).position(end);
            out.putInt((int) crc.getValue());
        }

        private void flushOut() throws IOException {
            out.flip();
            writeAll(out);
            out.clear();
        }

        private void writeAll(ByteBuffer b) throws IOException {
            if (tlsOut != null) {
                int n = b.remaining();
                b.get(tlsScratch, 0, n);
                tlsOut.write(tlsScratch, 0, n);
                return;
            }
            while (b.hasRemaining()) channel.write(b);
        }

        private int pduDataAt;
        private int filled;                 // bytes of `in` holding stream data, from 0
        private int consumed;               // bytes of the current window already parsed

        /**
         * Reads the next whole PDU into `in` and returns the index of its first byte; its data
         * starts at {@link #pduDataAt}. Valid until the next call.
         */
        private int readPdu() throws IOException {
            ensure(8);
            int plen = in.getInt(consumed + 4);
            ensure(plen);
            int start = consumed;
            int hlen = in.get(start + 2) & 0xFF;
            pduDataAt = start + hlen + (o.digests() ? 4 : 0);
            consumed += plen;
            return start;
        }

        private void ensure(int n) throws IOException {
            if (filled - consumed >= n) return;
            if (consumed > 0) {
                in.limit(filled).position(consumed);
                in.compact();
                filled -= consumed;
                consumed = 0;
            }
            while (filled < n) {
                in.limit(in.capacity()).position(filled);
                int r = read(in);
                if (r < 0) throw new IOException("target closed the connection");
                filled += r;
            }
        }

        private int read(ByteBuffer into) throws IOException {
            if (tlsIn == null) return channel.read(into);
            int r = tlsIn.read(tlsScratch, 0, Math.min(into.remaining(), tlsScratch.length));
            if (r > 0) into.put(tlsScratch, 0, r);
            return r;
        }

        private ByteBuffer readExactly(int n) throws IOException {
            ensure(n);
            ByteBuffer b = ByteBuffer.allocate(n).order(ByteOrder.LITTLE_ENDIAN);
            b.put(0, in, consumed, n);
            consumed += n;
            return b;
        }

        void close() throws IOException {
            channel.close();
        }
    }
}
