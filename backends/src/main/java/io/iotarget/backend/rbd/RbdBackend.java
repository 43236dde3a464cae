package io.iotarget.backend.rbd;

import io.iotarget.backend.Backend;
import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.Completion;
import io.iotarget.backend.ErrnoException;
import io.iotarget.backend.IoExecutor;
import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodType;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * A Ceph RBD image as a backend: librados and librbd (Debian's librbd1) through the FFM API, one
 * RADOS client per backend. Reads, writes, flushes, discards and write-zeroes go to librbd's
 * asynchronous calls from {@link #start}, and librbd's completion callback hands each request's
 * end to the engine's {@link Completion} on librbd's own thread (no thread per request, nothing
 * blocks there); the rarer operations (verify, compare, prefetch, PREFLUSH, FUA discards) run on
 * the engine's IO threads through the synchronous calls. Block status is {@code rbd_diff_iterate2},
 * which has no asynchronous form: {@link #startMapExtents} runs it on this backend's own
 * {@value #MAP_THREADS} threads, so an NBD loop never waits a round trip to the OSDs for it.
 *
 * <p>librbd runs each aio call's dispatch (image and object requests, the objecter's send) on
 * the thread that calls {@link #start} ({@code rbd_non_blocking_aio = false}), with the
 * objecter's in-flight throttles off so that nothing there waits for a budget: a request that
 * would have to wait for an image refresh or a lock is queued by librbd itself. The engine's
 * {@code queue_depth} per backend and the buffer pool bound the requests and bytes in flight.
 * The calling thread (an NBD or NVMe/TCP loop, the engine's releaser) therefore spends librbd's
 * submission CPU, and librbd's threads only the completions; librbd may also call the
 * completion back on the calling thread before its aio call returns, which {@link #start}
 * allows for.
 *
 * <p>librbd's client-side cache is turned off ({@code rbd_cache = false}, whatever ceph.conf
 * says): a write then completes only once the OSDs have it, so FUA needs nothing more and a
 * flush finds nothing to write, and two gateways that serve one image see each other's writes.
 * An image {@code create} makes has the layering feature only, without exclusive-lock, for the
 * same reason: with it, two writers would pass the lock back and forth on every write.
 *
 * <p>Fencing: {@link #clientAddress} names this backend's RADOS client and {@link #blocklist}
 * makes every OSD refuse a client; a blocklisted client's IO fails with EBLOCKLISTED, an IO
 * error to the initiator, and none of it reaches the image. Any thread, as {@link Backend}.
 */
public final class RbdBackend implements Backend {
    /** What to open: the config's keys of a {@code type: rbd} backend. */
    public record Options(String pool, String image, String namespace, String snapshot, Path conf, String id, Path keyring,
                          long createBytes, int blockSize, boolean readOnly) {
        public Options {
            Objects.requireNonNull(pool, "pool");
            Objects.requireNonNull(image, "image");
            if (pool.isEmpty() || image.isEmpty()) throw new IllegalArgumentException("an rbd backend needs a pool and an image");
            if (blockSize != 512 && blockSize != 4096) throw new IllegalArgumentException("block size " + blockSize + " (expected 512 or 4096)");
            if (snapshot != null && snapshot.isEmpty()) snapshot = null;
            if (namespace != null && namespace.isEmpty()) namespace = null;
            if (id == null || id.isEmpty()) id = "admin";
            if (createBytes < 0) throw new IllegalArgumentException("size " + createBytes);
        }

        /** pool/image, pool/namespace/image, with @snapshot: as the rbd tool names it. */
        public String spec() {
            return pool + "/" + (namespace == null ? "" : namespace + "/") + image + (snapshot == null ? "" : "@" + snapshot);
        }
    }

    private static final System.Logger LOG = System.getLogger(RbdBackend.class.getName());

    /** Requests between their aio call and librbd's callback, by the number passed to librbd as the callback's arg. */
    private static final ConcurrentHashMap<Long, Pending> PENDING = new ConcurrentHashMap<>();
    private static final AtomicLong NEXT_ID = new AtomicLong(1);
    /** The one completion callback: every backend's aio hands its number to it. */
    private static final MemorySegment COMPLETION_STUB = Librbd.unavailable() != null ? MemorySegment.NULL
            : Librbd.upcall(RbdBackend.class, "completed", MethodType.methodType(void.class, MemorySegment.class, MemorySegment.class),
                            Librbd.COMPLETION_CALLBACK, Arena.global());

    /** Where rbd_aio_create_completion leaves the completion: one pointer per submitting thread, so that no IO allocates it. */
    private static final ThreadLocal<MemorySegment> COMPLETION_OUT = ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(ADDRESS));
    /** Seconds rados_connect waits for a monitor before it fails (librados' own default, 300, would hold the control tree for 5 minutes). */
    static final int CONNECT_TIMEOUT_SECONDS = 30;

    private final Options options;
    private final MemorySegment cluster;
    private final MemorySegment ioctx;
    private final MemorySegment image;
    private final boolean readOnly;
    private volatile long sizeBytes;
    private volatile boolean closed;
    /** Told once, the first time the OSDs refuse this client ({@link #onBlocklisted}). */
    private volatile Runnable blocklistedListener = () -> { };
    private final java.util.concurrent.atomic.AtomicBoolean blocklisted = new java.util.concurrent.atomic.AtomicBoolean();
    /** Where {@link #startMapExtents} runs rbd_diff_iterate2; threads end when idle. */
    private final ExecutorService maps;

    /** Threads for block status per image: a client's in-flight limit bounds what waits for them. */
    static final int MAP_THREADS = 2;

    private RbdBackend(Options options, MemorySegment cluster, MemorySegment ioctx, MemorySegment image, boolean readOnly, long sizeBytes) {
        this.options = options;
        this.cluster = cluster;
        this.ioctx = ioctx;
        this.image = image;
        this.readOnly = readOnly;
        this.sizeBytes = sizeBytes;
        ThreadPoolExecutor pool = new ThreadPoolExecutor(MAP_THREADS, MAP_THREADS, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(),
                                                         r -> Thread.ofPlatform().daemon().name("rbd-map " + options.spec()).unstarted(r));
        pool.allowCoreThreadTimeOut(true);
        this.maps = pool;
    }

    /** Null when librbd can be used here; otherwise why not. */
    public static String unavailable() {
        return Librbd.unavailable();
    }

    /**
     * Connects to the cluster as {@code client.ID} and opens the image; with
     * {@link Options#createBytes} &gt; 0, creates it first when it does not exist. A snapshot is
     * always opened read-only.
     *
     * @throws ErrnoException librados or librbd refused (ENOENT: no such pool or image; ETIMEDOUT:
     *                        no monitor answered; EACCES/EPERM: the key is wrong or lacks caps)
     * @throws IOException    librbd1 is not installed
     */
    public static RbdBackend open(Options options) throws IOException {
        return open(options, CONNECT_TIMEOUT_SECONDS);
    }

    /** {@link #open(Options)}, waiting {@code connectTimeoutSeconds} for a monitor: its test's way to time out in seconds, not 30. */
    static RbdBackend open(Options options, int connectTimeoutSeconds) throws IOException {
        if (Librbd.unavailable() != null) throw new IOException("librbd cannot be loaded: " + Librbd.unavailable() + " (apt-get install librbd1)");
        MemorySegment cluster = MemorySegment.NULL;
        MemorySegment ioctx = MemorySegment.NULL;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            Librbd.check("rados_create2", (int) invoke(() -> (int) Librbd.RADOS_CREATE2.invokeExact(out, arena.allocateFrom("ceph"),
                                                                                                     arena.allocateFrom("client." + options.id()), 0L)));
            cluster = out.get(ADDRESS, 0);
            MemorySegment c = cluster;
            MemorySegment conf = options.conf() == null ? MemorySegment.NULL : arena.allocateFrom(options.conf().toString());
            Librbd.check("rados_conf_read_file(" + (options.conf() == null ? "the default ceph.conf" : options.conf()) + ")",
                         (int) invoke(() -> (int) Librbd.RADOS_CONF_READ_FILE.invokeExact(c, conf)));
            if (options.keyring() != null) confSet(arena, c, "keyring", options.keyring().toString());
            confSet(arena, c, "rbd_cache", "false");
            // librbd dispatches each aio call on the thread that makes it instead of handing it to its io_context_pool
            // first: one thread wake-up and about four context switches fewer per request (bench/results/rbd.md). What could
            // then block that thread is the objecter's budget (1024 ops, 100 MiB): off, because the engine's queue_depth and
            // the buffer pool already bound what is in flight.
            confSet(arena, c, "rbd_non_blocking_aio", "false");
            confSet(arena, c, "objecter_inflight_ops", "0");
            confSet(arena, c, "objecter_inflight_op_bytes", "0");
            confSet(arena, c, "client_mount_timeout", Integer.toString(connectTimeoutSeconds));
            Librbd.check("rados_connect", (int) invoke(() -> (int) Librbd.RADOS_CONNECT.invokeExact(c)));
            Librbd.check("rados_ioctx_create(" + options.pool() + ")",
                         (int) invoke(() -> (int) Librbd.RADOS_IOCTX_CREATE.invokeExact(c, arena.allocateFrom(options.pool()), out)));
            ioctx = out.get(ADDRESS, 0);
            MemorySegment io = ioctx;
            if (options.namespace() != null) {
                invoke(() -> {
                    Librbd.RADOS_IOCTX_SET_NAMESPACE.invokeExact(io, arena.allocateFrom(options.namespace()));
                    return 0;
                });
            }
            MemorySegment name = arena.allocateFrom(options.image());
            boolean readOnly = options.readOnly() || options.snapshot() != null;
            MemorySegment snap = options.snapshot() == null ? MemorySegment.NULL : arena.allocateFrom(options.snapshot());
            int opened = openImage(io, name, out, snap, readOnly);
            if (opened == -Librbd.ENOENT && options.createBytes() > 0 && options.snapshot() == null) {
                MemorySegment order = arena.allocate(JAVA_LONG);
                Librbd.check("rbd_create2(" + options.spec() + ")", (int) invoke(() -> (int) Librbd.RBD_CREATE2.invokeExact(
                        io, name, options.createBytes(), Librbd.FEATURE_LAYERING, order)));
                opened = openImage(io, name, out, snap, readOnly);
            }
            Librbd.check(OPEN_CALL + options.spec() + ")", opened);
            MemorySegment image = out.get(ADDRESS, 0);
            MemorySegment size = arena.allocate(JAVA_LONG);
            int got = (int) invoke(() -> (int) Librbd.RBD_GET_SIZE.invokeExact(image, size));
            if (got < 0) {
                invoke(() -> (int) Librbd.RBD_CLOSE.invokeExact(image));
                Librbd.check("rbd_get_size(" + options.spec() + ")", got);
            }
            return new RbdBackend(options, cluster, ioctx, image, readOnly, size.get(JAVA_LONG, 0));
        } catch (IOException | RuntimeException e) {
            MemorySegment io = ioctx;
            MemorySegment c = cluster;
            if (!io.equals(MemorySegment.NULL)) invokeQuietly(() -> { Librbd.RADOS_IOCTX_DESTROY.invokeExact(io); });
            if (!c.equals(MemorySegment.NULL)) invokeQuietly(() -> { Librbd.RADOS_SHUTDOWN.invokeExact(c); });
            throw e;
        }
    }

    /** True when {@link #open} failed because the image (or its snapshot) does not exist, not the pool, the key or the cluster. */
    public static boolean imageMissing(IOException failure) {
        return failure instanceof ErrnoException e && e.errno() == Librbd.ENOENT && e.getMessage().startsWith(OPEN_CALL);
    }

    private static final String OPEN_CALL = "rbd_open(";

    private static int openImage(MemorySegment io, MemorySegment name, MemorySegment out, MemorySegment snap, boolean readOnly) throws IOException {
        return readOnly ? (int) invoke(() -> (int) Librbd.RBD_OPEN_READ_ONLY.invokeExact(io, name, out, snap))
                        : (int) invoke(() -> (int) Librbd.RBD_OPEN.invokeExact(io, name, out, snap));
    }

    private static void confSet(Arena arena, MemorySegment cluster, String option, String value) throws IOException {
        Librbd.check("rados_conf_set(" + option + ")", (int) invoke(
                () -> (int) Librbd.RADOS_CONF_SET.invokeExact(cluster, arena.allocateFrom(option), arena.allocateFrom(value))));
    }

    /** The options it was opened with. */
    public Options options() {
        return options;
    }

    @Override
    public String kind() {
        return "rbd";
    }

    @Override
    public long sizeBytes() {
        return sizeBytes;
    }

    /** The image's size now ({@code rbd resize} elsewhere shows here: librbd watches the image's header). */
    @Override
    public long revalidatedSize(long configuredBytes) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment size = arena.allocate(JAVA_LONG);
            Librbd.check("rbd_get_size(" + options.spec() + ")", (int) invoke(() -> (int) Librbd.RBD_GET_SIZE.invokeExact(image, size)));
            return size.get(JAVA_LONG, 0);
        }
    }

    @Override
    public void resize(long sizeBytes) {
        this.sizeBytes = sizeBytes;
    }

    /**
     * Resizes the image itself ({@code rbd_resize}); the engine takes the new size with
     * revalidate_size, as for a file grown on disk. Not on the IO path.
     */
    public void resizeImage(long sizeBytes) throws IOException {
        refuseWrites("rbd_resize");
        Librbd.check("rbd_resize(" + options.spec() + ")", (int) invoke(() -> (int) Librbd.RBD_RESIZE.invokeExact(image, sizeBytes)));
    }

    @Override
    public int logicalBlockSize() {
        return options.blockSize();
    }

    @Override
    public boolean readOnly() {
        return readOnly;
    }

    @Override
    public boolean blocking() {
        return true;
    }

    // ---- asynchronous IO ----

    /** A request between its aio call and librbd's callback; {@code bounce} is native memory for a heap buffer. */
    private record Pending(RbdBackend backend, IoRequest io, Completion done, ByteBuffer data, Arena bounce, MemorySegment bounceSegment) {
    }

    @Override
    public IoStatus start(IoRequest io, IoExecutor executor, Completion done) throws IOException {
        if (!asynchronous(io)) return executor.startOnThreads(this, io, done);
        if (io.op() == IoOp.FLUSH && readOnly) return IoStatus.OK;
        if (io.op() != IoOp.READ) refuseWrites("rbd_aio_" + io.op().name().toLowerCase(java.util.Locale.ROOT));
        ByteBuffer data = io.op().carriesData() ? io.data() : null;
        Arena bounce = null;
        MemorySegment buffer = MemorySegment.NULL;
        if (data != null) {
            if (data.isDirect()) {
                buffer = MemorySegment.ofBuffer(data);
            } else {
                bounce = Arena.ofShared();
                buffer = bounce.allocate(data.remaining(), 8);
                if (io.op() == IoOp.WRITE) buffer.copyFrom(MemorySegment.ofBuffer(data));
            }
        }
        long id = NEXT_ID.getAndIncrement();
        Pending pending = new Pending(this, io, done, data, bounce, bounce == null ? null : buffer);
        MemorySegment out = COMPLETION_OUT.get();
        int made = (int) invoke(() -> (int) Librbd.RBD_AIO_CREATE_COMPLETION.invokeExact(MemorySegment.ofAddress(id), COMPLETION_STUB, out));
        if (made < 0) {
            if (bounce != null) bounce.close();
            throw new ErrnoException("rbd_aio_create_completion", -made);
        }
        MemorySegment completion = out.get(ADDRESS, 0);
        PENDING.put(id, pending);
        // The bare address, not the segment: a downcall holds its segments' arenas until it returns, and librbd may call
        // back (and the callback close the bounce arena) before rbd_aio_* has returned here. Pending keeps the memory alive.
        MemorySegment buf = MemorySegment.ofAddress(buffer.address());
        long offset = io.offset();
        long length = io.length();
        int started = (int) invoke(() -> switch (io.op()) {
            case READ -> (int) Librbd.RBD_AIO_READ2.invokeExact(image, offset, length, buf, completion, 0);
            case WRITE -> (int) Librbd.RBD_AIO_WRITE2.invokeExact(image, offset, length, buf, completion,
                                                                  io.hasFlag(IoFlags.FUA) ? Librbd.OP_FLAG_FUA : 0);
            case FLUSH -> (int) Librbd.RBD_AIO_FLUSH.invokeExact(image, completion);
            case DISCARD -> (int) Librbd.RBD_AIO_DISCARD.invokeExact(image, offset, length, completion);
            case WRITE_ZEROES -> (int) Librbd.RBD_AIO_WRITE_ZEROES.invokeExact(image, offset, length, completion,
                                                                              io.hasFlag(IoFlags.NO_UNMAP) ? Librbd.WRITE_ZEROES_THICK : 0, 0);
            default -> throw new AssertionError(io.op());
        });
        if (started < 0) {
            // librbd did not take it: no callback will come.
            PENDING.remove(id);
            invokeQuietly(() -> { Librbd.RBD_AIO_RELEASE.invokeExact(completion); });
            if (bounce != null) bounce.close();
            throw new ErrnoException("rbd_aio_" + io.op().name().toLowerCase(java.util.Locale.ROOT), -started);
        }
        return null;
    }

    /**
     * What goes to librbd's aio calls: reads, writes (FUA included: without the cache a completed
     * write is on the OSDs), flushes, discards and write-zeroes without PREFLUSH or FUA or a
     * FAST_ZERO this backend must refuse; the rest runs on the IO threads.
     */
    private static boolean asynchronous(IoRequest io) {
        if (io.hasFlag(IoFlags.PREFLUSH)) return false;
        return switch (io.op()) {
            case READ, WRITE, FLUSH -> true;
            case DISCARD, WRITE_ZEROES -> !io.hasFlag(IoFlags.FUA);
            default -> false;
        };
    }

    /**
     * librbd's completion callback, on one of librbd's threads: takes the result, releases the
     * completion and hands the end to the request's {@link Completion}. Must not throw (an
     * exception out of an upcall ends the JVM) and must not block.
     */
    static void completed(MemorySegment completion, MemorySegment arg) {
        Pending p = PENDING.remove(arg.address());
        long result;
        try {
            result = (long) Librbd.RBD_AIO_GET_RETURN_VALUE.invokeExact(completion);
            Librbd.RBD_AIO_RELEASE.invokeExact(completion);
        } catch (Throwable t) {
            result = -BackendErrors.EIO;
        }
        if (p == null) {
            LOG.log(System.Logger.Level.ERROR, "librbd completed request " + arg.address() + ", which is not pending");
            return;
        }
        try {
            if (p.bounce() != null) {
                try {
                    if (result >= 0 && p.io().op() == IoOp.READ) MemorySegment.ofBuffer(p.data()).copyFrom(p.bounceSegment());
                } finally {
                    p.bounce().close();
                }
            }
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "rbd completion of " + p.io() + ": the bounce buffer failed", e);
            result = -BackendErrors.EIO;
        }
        if (result == -Librbd.EBLOCKLISTED) p.backend().blocklisted();
        try {
            if (result < 0) p.done().failed(p.io(), new ErrnoException("rbd_aio_" + p.io().op().name().toLowerCase(java.util.Locale.ROOT),
                                                                       (int) -result));
            else p.done().completed(p.io(), IoStatus.OK);
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.ERROR, "rbd completion of " + p.io() + " failed", t);
        }
    }

    // ---- synchronous calls (the IO threads' and tests') ----

    @Override
    public void read(long offset, ByteBuffer dst) throws IOException {
        withBuffer(dst, false, buf -> Librbd.check("rbd_read2", (long) invoke(
                () -> (long) Librbd.RBD_READ2.invokeExact(image, offset, buf.byteSize(), buf, 0))));
    }

    @Override
    public void write(long offset, ByteBuffer src, boolean fua) throws IOException {
        refuseWrites("rbd_write2");
        withBuffer(src, true, buf -> Librbd.check("rbd_write2", (long) invoke(
                () -> (long) Librbd.RBD_WRITE2.invokeExact(image, offset, buf.byteSize(), buf, fua ? Librbd.OP_FLAG_FUA : 0))));
    }

    @Override
    public void flush() throws IOException {
        if (readOnly) return;
        Librbd.check("rbd_flush", (int) invoke(() -> (int) Librbd.RBD_FLUSH.invokeExact(image)));
    }

    @Override
    public void discard(long offset, long length) throws IOException {
        refuseWrites("rbd_discard");
        Librbd.check("rbd_discard", (int) invoke(() -> (int) Librbd.RBD_DISCARD.invokeExact(image, offset, length)));
    }

    @Override
    public void writeZeroes(long offset, long length, boolean mayUnmap) throws IOException {
        refuseWrites("rbd_write_zeroes");
        Librbd.check("rbd_write_zeroes", (long) invoke(() -> (long) Librbd.RBD_WRITE_ZEROES.invokeExact(
                image, offset, length, mayUnmap ? 0 : Librbd.WRITE_ZEROES_THICK, 0)));
    }

    /** librbd zeroes whole objects by removing or truncating them: the cost follows the objects touched, not the bytes. */
    @Override
    public boolean zeroesFast() {
        return true;
    }

    /** Nothing to do: without librbd's cache there is nothing to read ahead into. */
    @Override
    public void prefetch(long offset, long length) {
    }

    /**
     * The image's allocation from {@code rbd_diff_iterate2} (since the image's creation,
     * parents included, extent by extent): what it reports as existing is data, what it reports
     * as discarded and what it does not report are holes that read as zeroes. Blocks the calling
     * thread for a round trip to the OSDs per object that exists in the range: a loop calls
     * {@link #startMapExtents} instead.
     */
    @Override
    public void mapExtents(long offset, long length, ExtentSink sink) throws IOException {
        List<long[]> extents = new ArrayList<>();
        long id = NEXT_ID.getAndIncrement();
        DIFFS.put(id, extents);
        try {
            Librbd.check("rbd_diff_iterate2(" + options.spec() + ")", (int) invoke(() -> (int) Librbd.RBD_DIFF_ITERATE2.invokeExact(
                    image, MemorySegment.NULL, offset, length, (byte) 1, (byte) 0, DIFF_STUB, MemorySegment.ofAddress(id))));
        } finally {
            DIFFS.remove(id);
        }
        List<long[]> sorted;
        synchronized (extents) {
            sorted = new ArrayList<>(extents);
        }
        sorted.sort(Comparator.comparingLong(e -> e[0]));
        long at = offset;
        long end = offset + length;
        for (long[] e : sorted) {
            long from = Math.max(e[0], at);
            long to = Math.min(e[0] + e[1], end);
            if (to <= from) continue;
            if (from > at && !sink.extent(from - at, true, true)) return;
            boolean data = e[2] != 0;
            if (!sink.extent(to - from, !data, !data)) return;
            at = to;
        }
        if (at < end) sink.extent(end - at, true, true);
    }

    /** Maps on this backend's threads ({@link #MAP_THREADS}); after {@link #close} it fails at once. */
    @Override
    public void startMapExtents(long offset, long length, ExtentSink sink, Consumer<IOException> done) {
        try {
            maps.execute(() -> {
                if (closed) done.accept(new IOException("rbd " + options.spec() + ": closed"));
                else Backend.super.startMapExtents(offset, length, sink, done);      // here, on this thread: the map as the default runs it
            });
        } catch (RejectedExecutionException e) {
            done.accept(new IOException("rbd " + options.spec() + ": closed"));
        }
    }

    /** Extents of the diff iterations under way, by the number passed as the callback's arg: {offset, length, exists}. */
    private static final ConcurrentHashMap<Long, List<long[]>> DIFFS = new ConcurrentHashMap<>();
    private static final MemorySegment DIFF_STUB = Librbd.unavailable() != null ? MemorySegment.NULL
            : Librbd.upcall(RbdBackend.class, "diffExtent", MethodType.methodType(int.class, long.class, long.class, int.class, MemorySegment.class),
                            Librbd.DIFF_CALLBACK, Arena.global());

    /** rbd_diff_iterate2's callback (on the caller's or a librbd thread): records one extent; never throws. */
    static int diffExtent(long offset, long length, int exists, MemorySegment arg) {
        List<long[]> extents = DIFFS.get(arg.address());
        if (extents == null) return -BackendErrors.ECANCELED;
        synchronized (extents) {
            extents.add(new long[] {offset, length, exists});
        }
        return 0;
    }

    // ---- fencing ----

    /**
     * This backend's RADOS client's address ({@code rados_getaddrs}), as {@code osd blocklist}
     * takes it: what another node blocklists to fence this one.
     */
    @SuppressWarnings("restricted") // a C string librados allocated
    public String clientAddress() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            Librbd.check("rados_getaddrs", (int) invoke(() -> (int) Librbd.RADOS_GETADDRS.invokeExact(cluster, out)));
            MemorySegment text = out.get(ADDRESS, 0).reinterpret(Long.MAX_VALUE);
            try {
                return text.getString(0, StandardCharsets.UTF_8);
            } finally {
                invokeQuietly(() -> { Librbd.FREE.invokeExact(text); });
            }
        }
    }

    /**
     * Sets what is told (once, on a librbd thread; it must not block) when the OSDs first refuse
     * this client with EBLOCKLISTED: another node fenced this one, and the client can never
     * write again — serve's answer is to stop the process, so that its service manager starts
     * it again with new clients (docs/rbd.md).
     */
    public void onBlocklisted(Runnable listener) {
        this.blocklistedListener = Objects.requireNonNull(listener);
    }

    private void blocklisted() {
        if (!blocklisted.compareAndSet(false, true)) return;
        try {
            blocklistedListener.run();
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.ERROR, "rbd " + options.spec() + ": the blocklist listener failed", e);
        }
    }

    /**
     * How long a blocklist entry lasts, in seconds (30 days; Ceph's default is an hour): longer
     * than any pause a fenced node could wake from. Nothing else is refused meanwhile: a client
     * made later has another address (a new nonce).
     */
    public static final long BLOCKLIST_SECONDS = 30L * 24 * 3600;

    /**
     * Blocklists {@code address} (a {@link #clientAddress}) on the whole cluster through this
     * backend's client: the monitor command {@code osd blocklist add} for
     * {@link #BLOCKLIST_SECONDS}, after which every OSD refuses that client's IO; then waits for
     * the OSD map that holds it ({@link #awaitLatestOsdMap}). Needs the monitor cap to run it
     * ({@code allow *}, or {@code profile rbd}, which grants blocklisting).
     */
    public void blocklist(String address) throws IOException {
        monCommand("{\"prefix\": \"osd blocklist\", \"blocklistop\": \"add\", \"addr\": \"" + jsonEscape(address)
                   + "\", \"expire\": " + BLOCKLIST_SECONDS + ".0}");   // a CephFloat: an integer is refused
        awaitLatestOsdMap();
    }

    /**
     * Waits until this client has the cluster's latest OSD map. Its IO from then on carries that
     * map's epoch, and an OSD that has not heard of the epoch fetches it before it runs the IO:
     * so once a blocklist is in the map, no write of the blocklisted client runs on any OSD after
     * a write this client sends from now on (what librbd does when it breaks a lock).
     */
    public void awaitLatestOsdMap() throws IOException {
        Librbd.check("rados_wait_for_latest_osdmap", (int) invoke(() -> (int) Librbd.RADOS_WAIT_FOR_LATEST_OSDMAP.invokeExact(cluster)));
    }

    /** The Ceph cluster's id (its fsid, a UUID): which monitors {@link #blocklist} reaches. */
    public String clusterFsid() throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment buf = arena.allocate(64);
            int n = (int) invoke(() -> (int) Librbd.RADOS_CLUSTER_FSID.invokeExact(cluster, buf, 64L));
            Librbd.check("rados_cluster_fsid", n);
            return new String(buf.asSlice(0, n).toArray(JAVA_BYTE), StandardCharsets.US_ASCII);
        }
    }

    /** Runs a monitor command (JSON) through this backend's client; its status text on failure. */
    @SuppressWarnings("restricted") // the status text librados allocated, of the length it gave
    private void monCommand(String json) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment cmd = arena.allocate(ADDRESS);
            cmd.set(ADDRESS, 0, arena.allocateFrom(json));
            MemorySegment outbuf = arena.allocate(ADDRESS);
            MemorySegment outbufLen = arena.allocate(JAVA_LONG);
            MemorySegment outs = arena.allocate(ADDRESS);
            MemorySegment outsLen = arena.allocate(JAVA_LONG);
            int result = (int) invoke(() -> (int) Librbd.RADOS_MON_COMMAND.invokeExact(cluster, cmd, 1L, MemorySegment.NULL, 0L, outbuf,
                                                                                        outbufLen, outs, outsLen));
            String status = "";
            MemorySegment statusText = outs.get(ADDRESS, 0);
            if (!statusText.equals(MemorySegment.NULL)) {
                long n = outsLen.get(JAVA_LONG, 0);
                status = new String(statusText.reinterpret(n).toArray(JAVA_BYTE), StandardCharsets.UTF_8);
                invokeQuietly(() -> { Librbd.RADOS_BUFFER_FREE.invokeExact(statusText); });
            }
            MemorySegment out = outbuf.get(ADDRESS, 0);
            if (!out.equals(MemorySegment.NULL)) invokeQuietly(() -> { Librbd.RADOS_BUFFER_FREE.invokeExact(out); });
            if (result < 0) throw new ErrnoException("mon command " + json + (status.isEmpty() ? "" : " (" + status.strip() + ")"), -result);
        }
    }

    private static String jsonEscape(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.toString();
    }

    // ---- helpers ----

    private void refuseWrites(String call) throws ErrnoException {
        if (readOnly) throw new ErrnoException(call + " on read-only " + options.spec(), BackendErrors.EROFS);
    }

    @FunctionalInterface
    private interface BufferCall {
        void call(MemorySegment buffer) throws IOException;
    }

    /** Runs {@code call} on the native memory of {@code data} (position to limit), through a copy when it is a heap buffer. */
    private static void withBuffer(ByteBuffer data, boolean in, BufferCall call) throws IOException {
        if (data.isDirect()) {
            call.call(MemorySegment.ofBuffer(data));
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment copy = arena.allocate(data.remaining(), 8);
            if (in) copy.copyFrom(MemorySegment.ofBuffer(data));
            call.call(copy);
            if (!in) MemorySegment.ofBuffer(data).copyFrom(copy);
        }
    }

    @FunctionalInterface
    private interface NativeCall {
        Object call() throws Throwable;
    }

    @FunctionalInterface
    private interface VoidCall {
        void call() throws Throwable;
    }

    /** Calls a downcall handle; a Throwable other than an IOException or a RuntimeException is a binding error. */
    private static Object invoke(NativeCall call) throws IOException {
        try {
            return call.call();
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable t) {
            throw new AssertionError(t);
        }
    }

    private static void invokeQuietly(VoidCall call) {
        try {
            call.call();
        } catch (Throwable t) {
            LOG.log(System.Logger.Level.WARNING, "librbd cleanup failed", t);
        }
    }

    /** Closes the image, the pool's context and the client. The engine calls it after every request it started ended. */
    @Override
    public synchronized void close() throws IOException {
        if (closed) return;
        closed = true;
        // A block status under way still uses the image: it ends (queued ones fail at once) before the image closes.
        maps.shutdown();
        boolean interrupted = false;
        for (;;) {
            try {
                if (maps.awaitTermination(10, TimeUnit.SECONDS)) break;
                LOG.log(System.Logger.Level.WARNING, "rbd " + options.spec() + ": closing waits for a block status the OSDs have not answered");
            } catch (InterruptedException e) {
                interrupted = true;                       // the image must not close under it: wait on, and say so after
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
        int result = (int) invoke(() -> (int) Librbd.RBD_CLOSE.invokeExact(image));
        invokeQuietly(() -> { Librbd.RADOS_IOCTX_DESTROY.invokeExact(ioctx); });
        invokeQuietly(() -> { Librbd.RADOS_SHUTDOWN.invokeExact(cluster); });
        // A blocklisted client cannot release the image's header watch: that is expected after fencing.
        if (result < 0 && result != -Librbd.EBLOCKLISTED) throw new ErrnoException("rbd_close(" + options.spec() + ")", -result);
    }
}
