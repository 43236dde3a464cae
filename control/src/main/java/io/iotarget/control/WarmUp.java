package io.iotarget.control;

import com.fasterxml.jackson.databind.JsonNode;
import io.iotarget.control.config.ConfigLoader;
import io.iotarget.control.config.ConfigLoader.ConfigException;
import io.iotarget.control.tree.BackendTree;
import io.iotarget.control.tree.CgroupTree;
import io.iotarget.control.tree.MountTable;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nbd.NbdServer;
import io.iotarget.transport.Transport;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Semaphore;

import static io.iotarget.frontend.nbd.NbdWire.CMD_DISC;
import static io.iotarget.frontend.nbd.NbdWire.CMD_READ;
import static io.iotarget.frontend.nbd.NbdWire.CMD_TRIM;
import static io.iotarget.frontend.nbd.NbdWire.CMD_WRITE;
import static io.iotarget.frontend.nbd.NbdWire.FLAG_C_FIXED_NEWSTYLE;
import static io.iotarget.frontend.nbd.NbdWire.FLAG_C_NO_ZEROES;
import static io.iotarget.frontend.nbd.NbdWire.IHAVEOPT;
import static io.iotarget.frontend.nbd.NbdWire.NBD_MAGIC;
import static io.iotarget.frontend.nbd.NbdWire.OPT_EXPORT_NAME;
import static io.iotarget.frontend.nbd.NbdWire.REQUEST_MAGIC;
import static io.iotarget.frontend.nbd.NbdWire.SIMPLE_REPLY_MAGIC;

/**
 * Runs the data path before the server listens ({@code server.warm_up_ms}), so that a fresh
 * server paces io.max from its first second: a fresh JVM interprets the path until the JIT
 * has compiled it, and the AOT cache (scripts/package) holds no compiled code in JDK 25.
 *
 * <p>It is a server of its own, made and closed here: an engine, a transport and the NBD front
 * end on the config's engine and transport settings, one memory volume whose groups are limited
 * by IOPS, by bandwidth and not at all (deploy/training.json's shape) and a null volume limited
 * by IOPS, served on an ephemeral
 * loopback port to a client of this class that keeps {@link #QUEUE_DEPTH} requests in flight,
 * 4 KiB reads and writes in turn and trims, each export for {@link #PHASE_MS} at a time.
 * Nothing of it is seen by the real server's trees, io.stat or metrics: it shares only the
 * code, which is the point.
 * Its client runs on a thread of its own, as a tenant's would on its own core; the time is
 * building the private server, then {@code server.warm_up_ms} of requests, plus the replies to
 * the requests then in flight and the close. The NVMe/TCP front end's own code is not run: its
 * requests go through the same engine, io controller and backends.
 */
final class WarmUp {
    private WarmUp() {
    }

    /** Requests in flight: fio's and the kernel's usual depth, enough to keep the limits binding. */
    static final int QUEUE_DEPTH = 32;
    /** Each export (iops, bps, free, null) in turn for this long, so each path gets compiled with all of them in its profile. */
    static final long PHASE_MS = 100;
    private static final int BLOCK_BYTES = 4096;
    private static final int TRIM_BYTES = io.iotarget.backend.memory.MemoryBackend.CHUNK_BYTES;
    private static final long VOLUME_BYTES = 16L << 20;
    private static final String[] EXPORTS = {"iops", "bps", "free", "null"};
    private static final String CONFIG = """
            {"backends": {"warm": {"type": "memory", "size": "16M", "enable": 1},
                          "nothing": {"type": "null", "size": "16M", "enable": 1}},
             "cgroup": {"cgroup.subtree_control": "+io",
                        "iops": {"io.max": ["warm riops=20000 wiops=20000", "nothing riops=20000 wiops=20000"]},
                        "bps": {"io.max": "warm rbps=41943040 wbps=41943040"},
                        "free": {}},
             "nbd": {"exports": {"iops": {"backend": "warm", "cgroup": "iops", "enable": 1},
                                 "bps": {"backend": "warm", "cgroup": "bps", "enable": 1},
                                 "free": {"backend": "warm", "cgroup": "free", "enable": 1},
                                 "null": {"backend": "nothing", "cgroup": "iops", "enable": 1}}}}
            """;

    /** Runs the warm-up for {@code ms} milliseconds (0: not at all); returns the requests it completed. */
    static long run(long ms, Engine.Settings engineSettings, Transport.Settings transportSettings) throws IOException {
        if (ms == 0) return 0;
        JsonNode config;
        try {
            config = ConfigLoader.parse(new java.io.ByteArrayInputStream(CONFIG.getBytes(StandardCharsets.UTF_8)), "the warm-up's config");
        } catch (ConfigException e) {
            throw new IllegalStateException(e);
        }
        long requests = 0;
        try (Engine engine = new Engine(io.iotarget.model.Clock.SYSTEM, true, engineSettings);
             Transport transport = new Transport(transportSettings);
             NbdServer nbd = new NbdServer(engine, transport)) {
            MountTable mounts = new MountTable()
                    .mount(MountTable.CGROUP, new CgroupTree(engine.controller()))
                    .mount("backends", new BackendTree(engine))
                    .mount("nbd", nbd.tree());
            try {
                ConfigLoader.apply(config, section -> Server.mounted(mounts, section));
            } catch (ConfigException e) {
                throw new IllegalStateException("the warm-up's own config: " + e.getMessage(), e);
            }
            nbd.listen(new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 0));
            int port = nbd.localAddresses().getFirst().getPort();
            // From here, not from the start: a JVM on one core took longer than the whole
            // warm-up to build this private server (1.1-1.4 s), and then ran no request at all.
            long deadline = System.nanoTime() + ms * 1_000_000;
            for (int phase = 0; System.nanoTime() < deadline; phase++) {
                long end = Math.min(deadline, System.nanoTime() + PHASE_MS * 1_000_000);
                requests += drive(port, EXPORTS[phase % EXPORTS.length], end);
            }
        }
        return requests;
    }

    /**
     * One connection to {@code export} (NBD_OPT_EXPORT_NAME): a sender thread keeps
     * {@link #QUEUE_DEPTH} 4 KiB reads and writes in flight until {@code endNs}, then sends
     * NBD_CMD_DISC; this thread takes the replies until the server, done with the last, closes.
     * Returns the requests completed.
     */
    private static long drive(int port, String export, long endNs) throws IOException {
        try (Socket socket = new Socket(java.net.InetAddress.getLoopbackAddress(), port)) {
            socket.setTcpNoDelay(true);
            socket.setSoTimeout(10_000);
            DataInputStream in = new DataInputStream(new java.io.BufferedInputStream(socket.getInputStream()));
            DataOutputStream out = new DataOutputStream(new java.io.BufferedOutputStream(socket.getOutputStream()));
            if (in.readLong() != NBD_MAGIC || in.readLong() != IHAVEOPT) throw new IOException("warm-up: not an NBD server");
            in.readUnsignedShort();
            out.writeInt(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES);
            byte[] name = export.getBytes(StandardCharsets.UTF_8);
            out.writeLong(IHAVEOPT);
            out.writeInt(OPT_EXPORT_NAME);
            out.writeInt(name.length);
            out.write(name);
            out.flush();
            long size = in.readLong();
            in.readUnsignedShort();
            if (size != VOLUME_BYTES) throw new IOException("warm-up: export " + export + " is " + size + " bytes");
            Semaphore slots = new Semaphore(QUEUE_DEPTH);
            Thread sender = Thread.ofPlatform().name("iotarget-warm-up").start(() -> send(out, slots, endNs));
            long done = 0;
            byte[] data = new byte[BLOCK_BYTES];
            try {
                while (true) {
                    int magic;
                    try {
                        magic = in.readInt();
                    } catch (java.io.EOFException e) {
                        break;
                    }
                    if (magic != SIMPLE_REPLY_MAGIC) throw new IOException("warm-up: bad reply magic");
                    int error = in.readInt();
                    long cookie = in.readLong();
                    if (error != 0) throw new IOException("warm-up: request " + cookie + " failed with NBD error " + error);
                    if ((cookie & 1) == 0) in.readFully(data);
                    done++;
                    slots.release();
                }
            } finally {
                sender.interrupt();
                try {
                    sender.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            return done;
        }
    }

    /**
     * The sender: reads (even cookies) and writes (odd) at random 4 KiB-aligned offsets until
     * {@code endNs}, then NBD_CMD_DISC. Every eighth request (odd) trims a whole memory chunk
     * instead, so that writes keep finding fresh chunks: a tenant's first writes to a new memory
     * volume allocate one each, and that path is compiled too.
     */
    private static void send(DataOutputStream out, Semaphore slots, long endNs) {
        byte[] data = new byte[BLOCK_BYTES];
        java.util.SplittableRandom random = new java.util.SplittableRandom(1);
        try {
            for (long cookie = 0; System.nanoTime() < endNs; cookie++) {
                if (!slots.tryAcquire()) {
                    out.flush();
                    slots.acquire();
                }
                if ((cookie & 7) == 7) {
                    request(out, CMD_TRIM, cookie, random.nextLong(VOLUME_BYTES / TRIM_BYTES) * TRIM_BYTES, TRIM_BYTES);
                    continue;
                }
                boolean write = (cookie & 1) == 1;
                request(out, write ? CMD_WRITE : CMD_READ, cookie, random.nextLong(VOLUME_BYTES / BLOCK_BYTES) * BLOCK_BYTES, BLOCK_BYTES);
                if (write) out.write(data);
            }
            request(out, CMD_DISC, 0, 0, 0);
            out.flush();
        } catch (IOException | InterruptedException e) {
            // The receiver has failed or finished: it reports what went wrong.
        }
    }

    private static void request(DataOutputStream out, int type, long cookie, long offset, int length) throws IOException {
        out.writeInt(REQUEST_MAGIC);
        out.writeShort(0);
        out.writeShort(type);
        out.writeLong(cookie);
        out.writeLong(offset);
        out.writeInt(length);
    }
}
