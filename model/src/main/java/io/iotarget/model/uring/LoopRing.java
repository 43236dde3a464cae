package io.iotarget.model.uring;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * An io_uring owned by one thread — an event loop — in which that thread waits for everything
 * it is told of: socket readiness (a poll on its selector's epoll descriptor) and the disk
 * operations the backends put on it while running on that thread. Whoever puts an operation on
 * the ring is an {@link Owner}; the ring hands each completion back to its owner on the owning
 * thread, inside {@link #reap()}, so a request goes socket → loop → disk → loop → socket with
 * no other thread.
 *
 * <h2>How it is used</h2>
 * <pre>
 *   owner thread:  ring = LoopRing.open(entries)        binds the ring to this thread
 *                  owner = ring.register(o)             once per owner (the loop, each IO engine)
 *                  ring.prepare(owner, tag, op, ...)    queues an SQE (not yet submitted)
 *                  ring.enter(waitNs)                   submits everything queued, waits for a completion
 *                  ring.reap()                          runs each completion's owner
 * </pre>
 * Operations are submitted only by {@link #enter}: what a pass of the loop prepares goes to the
 * kernel in the one io_uring_enter that also waits, so a pass costs one system call for its
 * submissions and its wait together.
 *
 * <h2>Setup</h2>
 * IORING_SETUP_SINGLE_ISSUER | DEFER_TASKRUN where the kernel has them (6.1): only the owning
 * thread enters, and completion work runs when it does — inside its wait — instead of
 * interrupting it while it runs a handler. Older kernels get a plain ring. A kernel without
 * io_uring, or one that refuses it (kernel.io_uring_disabled, a seccomp profile), fails
 * {@link #open} with the errno; the caller then keeps its selector.
 *
 * <p>Owning thread only, except {@link #current()} (any thread: the calling thread's ring).
 */
public final class LoopRing implements AutoCloseable {
    /*
     * Maintainers' notes. One thread does everything, so there are no locks: the SQ tail is
     * kept in a field and released to the kernel before each enter, the CQ head released after
     * each CQE is read. user_data is (owner << 32) | tag. The SQ cannot overflow: prepare enters
     * first when it is full. The CQ is twice the SQ and the kernel keeps what does not fit
     * (IORING_FEAT_NODROP), so owners need not bound what they have in flight for the ring's
     * sake.
     */

    /** Takes the completions of the operations it prepared. Runs on the owning thread. */
    public interface Owner {
        /** The operation {@code tag} finished with {@code res} (bytes, or -errno); {@code flags} are the CQE's. */
        void completed(int tag, int res, int flags);

        /** Whether operations of this owner are still in the kernel: the ring's close waits for them. */
        default boolean busy() {
            return false;
        }
    }

    // Opcodes of include/uapi/linux/io_uring.h.
    public static final byte OP_NOP = 0;
    public static final byte OP_FSYNC = 3;
    public static final byte OP_POLL_ADD = 6;
    public static final byte OP_FALLOCATE = 17;
    public static final byte OP_READ = 22;
    public static final byte OP_WRITE = 23;
    /** POLLIN, for {@link #OP_POLL_ADD}'s poll32_events. */
    public static final int POLLIN = 1;

    private static final long PARAMS_BYTES = 120;
    private static final long P_SQ_ENTRIES = 0;
    private static final long P_CQ_ENTRIES = 4;
    private static final long P_FLAGS = 8;
    private static final long P_FEATURES = 20;
    private static final long P_SQ_OFF = 40;
    private static final long P_CQ_OFF = 80;
    private static final long OFF_HEAD = 0;
    private static final long OFF_TAIL = 4;
    private static final long OFF_RING_MASK = 8;
    private static final long OFF_SQ_ARRAY = 24;
    private static final long OFF_CQES = 20;
    private static final long OFF_SQ_RING = 0L;
    private static final long OFF_CQ_RING = 0x8000000L;
    private static final long OFF_SQES = 0x10000000L;

    private static final int SETUP_SUBMIT_ALL = 1 << 7;
    private static final int SETUP_SINGLE_ISSUER = 1 << 12;
    private static final int SETUP_DEFER_TASKRUN = 1 << 13;
    private static final int FEAT_SINGLE_MMAP = 1;
    private static final int ENTER_GETEVENTS = 1;
    private static final int ENTER_EXT_ARG = 1 << 3;

    private static final long SQE_BYTES = 64;
    private static final long CQE_BYTES = 16;
    /** struct io_uring_getevents_arg (24 bytes) then struct __kernel_timespec (16). */
    private static final long WAIT_ARG_BYTES = 40;

    private static final int EINTR = 4;
    private static final int EAGAIN = 11;
    private static final int EBUSY = 16;
    private static final int EINVAL = 22;
    private static final int ETIME = 62;
    private static final long SYS_IO_URING_SETUP = 425;
    private static final long SYS_IO_URING_ENTER = 426;
    /** How long close waits for owners' operations still in the kernel before it closes the ring regardless. */
    private static final long CLOSE_WAIT_NS = 5_000_000_000L;

    private static final VarHandle INT = JAVA_INT.varHandle();
    private static final ThreadLocal<LoopRing> CURRENT = new ThreadLocal<>();
    private static final Calls CALLS = new Calls();

    private final Thread ownerThread;
    private final Arena arena = Arena.ofShared();
    private final int ringFd;
    private final int sqEntries;
    private final MemorySegment sqRing;
    private final MemorySegment cqRing;
    private final MemorySegment sqes;
    private final long sqHeadAt;
    private final long sqTailAt;
    private final long sqArrayAt;
    private final int sqMask;
    private final long cqHeadAt;
    private final long cqTailAt;
    private final long cqesAt;
    private final int cqMask;
    private final MemorySegment waitArg;
    private final boolean deferred;
    private final List<Owner> owners = new ArrayList<>();
    private final Map<Object, Object> attachments = new IdentityHashMap<>();
    /** SQEs prepared and not yet handed to the kernel by an enter. */
    private int pending;
    private int sqTail;
    private int cqHead;
    private boolean closed;

    private LoopRing(int ringFd, MemorySegment params, boolean deferred) throws IOException {
        this.ownerThread = Thread.currentThread();
        this.ringFd = ringFd;
        this.deferred = deferred;
        this.sqEntries = params.get(JAVA_INT, P_SQ_ENTRIES);
        int cqEntries = params.get(JAVA_INT, P_CQ_ENTRIES);
        long sqArray = params.get(JAVA_INT, P_SQ_OFF + OFF_SQ_ARRAY);
        long cqes = params.get(JAVA_INT, P_CQ_OFF + OFF_CQES);
        long sqBytes = sqArray + 4L * sqEntries;
        long cqBytes = cqes + CQE_BYTES * cqEntries;
        boolean single = (params.get(JAVA_INT, P_FEATURES) & FEAT_SINGLE_MMAP) != 0;
        MemorySegment sq = null;
        MemorySegment cq = null;
        try {
            sq = CALLS.mmap(ringFd, single ? Math.max(sqBytes, cqBytes) : sqBytes, OFF_SQ_RING);
            cq = single ? sq : CALLS.mmap(ringFd, cqBytes, OFF_CQ_RING);
            this.sqes = CALLS.mmap(ringFd, SQE_BYTES * sqEntries, OFF_SQES);
        } catch (IOException e) {
            if (sq != null) CALLS.munmap(sq);
            if (cq != null && cq != sq) CALLS.munmap(cq);
            throw e;
        }
        this.sqRing = sq;
        this.cqRing = cq;
        this.sqHeadAt = params.get(JAVA_INT, P_SQ_OFF + OFF_HEAD);
        this.sqTailAt = params.get(JAVA_INT, P_SQ_OFF + OFF_TAIL);
        this.sqArrayAt = sqArray;
        this.sqMask = sqRing.get(JAVA_INT, params.get(JAVA_INT, P_SQ_OFF + OFF_RING_MASK));
        this.cqHeadAt = params.get(JAVA_INT, P_CQ_OFF + OFF_HEAD);
        this.cqTailAt = params.get(JAVA_INT, P_CQ_OFF + OFF_TAIL);
        this.cqesAt = cqes;
        this.cqMask = cqRing.get(JAVA_INT, params.get(JAVA_INT, P_CQ_OFF + OFF_RING_MASK));
        this.sqTail = (int) INT.getAcquire(sqRing, sqTailAt);
        this.cqHead = (int) INT.getAcquire(cqRing, cqHeadAt);
        this.waitArg = arena.allocate(WAIT_ARG_BYTES, 8);
    }

    /**
     * Sets up a ring of {@code entries} SQEs (a power of two) owned by the calling thread, which
     * becomes the thread's {@link #current()} ring.
     *
     * @throws IOException io_uring_setup failed (the message names the errno: ENOSYS, EPERM, ...)
     */
    public static LoopRing open(int entries) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(PARAMS_BYTES, 8);
            int[] tries = {SETUP_SUBMIT_ALL | SETUP_SINGLE_ISSUER | SETUP_DEFER_TASKRUN, SETUP_SUBMIT_ALL, 0};
            long fd = -EINVAL;
            int flags = 0;
            for (int t : tries) {
                params.fill((byte) 0);
                params.set(JAVA_INT, P_FLAGS, t);
                fd = CALLS.syscall(SYS_IO_URING_SETUP, entries, params.address(), 0, 0, 0, 0);
                flags = t;
                if (fd != -EINVAL) break;                   // EINVAL: a flag this kernel lacks
            }
            if (fd < 0) throw new IOException("io_uring_setup: errno " + -fd + " (" + errnoName((int) -fd) + ")");
            try {
                LoopRing ring = new LoopRing((int) fd, params, (flags & SETUP_DEFER_TASKRUN) != 0);
                CURRENT.set(ring);
                return ring;
            } catch (IOException | RuntimeException e) {
                CALLS.close((int) fd);
                throw e;
            }
        }
    }

    /** The ring the calling thread owns, or null (not an io_uring loop's thread). Any thread. */
    public static LoopRing current() {
        return CURRENT.get();
    }

    /** Whether completion work waits for this thread's enter (IORING_SETUP_DEFER_TASKRUN). */
    public boolean deferredTaskRun() {
        return deferred;
    }

    /** Makes {@code owner} known to the ring; its operations carry the number returned. */
    public int register(Owner owner) {
        owners.add(owner);
        return owners.size() - 1;
    }

    /**
     * What {@code key} keeps on this ring (an IO engine's slots for this thread), made by
     * {@code make} the first time it is asked for.
     */
    @SuppressWarnings("unchecked")
    public <T> T attachment(Object key, Function<LoopRing, T> make) {
        Object value = attachments.get(key);
        if (value == null) {
            value = make.apply(this);
            attachments.put(key, value);
        }
        return (T) value;
    }

    /**
     * Queues one SQE for the next {@link #enter}: {@code opcode} on {@code fd}; {@code offset},
     * {@code address}, {@code length} and {@code opFlags} as struct io_uring_sqe's off, addr,
     * len and the op's flags word (rw_flags, fsync_flags, poll32_events). Enters first to make
     * room when the SQ is full.
     */
    public void prepare(int owner, int tag, byte opcode, int fd, long offset, long address, int length, int opFlags) {
        if (pending == sqEntries) submitNow();
        int tail = sqTail;
        int index = tail & sqMask;
        long at = index * SQE_BYTES;
        sqes.asSlice(at, SQE_BYTES).fill((byte) 0);
        sqes.set(JAVA_BYTE, at, opcode);
        sqes.set(JAVA_INT, at + 4, fd);
        sqes.set(JAVA_LONG, at + 8, offset);
        sqes.set(JAVA_LONG, at + 16, address);
        sqes.set(JAVA_INT, at + 24, length);
        sqes.set(JAVA_INT, at + 28, opFlags);
        sqes.set(JAVA_LONG, at + 32, ((long) owner << 32) | (tag & 0xffff_ffffL));
        sqRing.set(JAVA_INT, sqArrayAt + 4L * index, index);
        sqTail = tail + 1;
        pending++;
    }

    /** Submits what is queued without waiting (the SQ was full). */
    private void submitNow() {
        enter(0);
    }

    /**
     * Submits every queued SQE and, unless {@code waitNs} is 0, waits until at least one
     * completion is there or {@code waitNs} have passed (negative: no limit). Completions are
     * not run here: {@link #reap()} runs them.
     */
    public void enter(long waitNs) {
        if (closed) return;
        INT.setRelease(sqRing, sqTailAt, sqTail);
        int toSubmit = pending;
        while (true) {
            long rc;
            if (waitNs == 0) {
                // GETEVENTS with min_complete 0 runs deferred completion work and returns.
                rc = CALLS.syscall(SYS_IO_URING_ENTER, ringFd, toSubmit, 0, deferred ? ENTER_GETEVENTS : 0, 0, 0);
            } else if (waitNs < 0) {
                rc = CALLS.syscall(SYS_IO_URING_ENTER, ringFd, toSubmit, 1, ENTER_GETEVENTS, 0, 0);
            } else {
                waitArg.fill((byte) 0);
                waitArg.set(JAVA_LONG, 16, waitArg.address() + 24);
                waitArg.set(JAVA_LONG, 24, waitNs / 1_000_000_000L);
                waitArg.set(JAVA_LONG, 32, waitNs % 1_000_000_000L);
                rc = CALLS.syscall(SYS_IO_URING_ENTER, ringFd, toSubmit, 1, ENTER_GETEVENTS | ENTER_EXT_ARG, waitArg.address(), 24);
            }
            int errno = rc < 0 ? (int) -rc : 0;
            if (rc >= 0 || errno == ETIME || errno == EINTR) {
                // What the kernel consumed is behind its SQ head, whether or not the wait then timed out.
                pending = sqTail - (int) INT.getAcquire(sqRing, sqHeadAt);
                return;
            }
            if (errno == EAGAIN || errno == EBUSY) {
                // Out of memory for requests or the CQ is full: reap and try again without waiting.
                Thread.onSpinWait();
                waitNs = 0;
                continue;
            }
            throw new IllegalStateException("io_uring_enter: errno " + errno + " (" + errnoName(errno) + ")");
        }
    }

    /** Runs the owners of the completions that are there; how many ran. Owning thread. */
    public int reap() {
        int head = cqHead;
        int tail = (int) INT.getAcquire(cqRing, cqTailAt);
        int n = 0;
        while (head != tail) {
            long at = cqesAt + CQE_BYTES * (head & cqMask);
            long userData = cqRing.get(JAVA_LONG, at);
            int res = cqRing.get(JAVA_INT, at + 8);
            int flags = cqRing.get(JAVA_INT, at + 12);
            head++;
            INT.setRelease(cqRing, cqHeadAt, head);
            cqHead = head;
            owners.get((int) (userData >>> 32)).completed((int) userData, res, flags);
            n++;
            if (head == tail) tail = (int) INT.getAcquire(cqRing, cqTailAt);
        }
        return n;
    }

    /** Whether the calling thread is the ring's owner. */
    public boolean inOwnerThread() {
        return Thread.currentThread() == ownerThread;
    }

    /**
     * Waits (up to 5 s) for the owners' operations still in the kernel, running their
     * completions, then unmaps and closes the ring; the kernel cancels what remains (the
     * loop's own poll). Owning thread, once.
     */
    @Override
    public void close() {
        if (closed) return;
        long deadline = System.nanoTime() + CLOSE_WAIT_NS;
        while (anyBusy() && System.nanoTime() - deadline < 0) {
            enter(10_000_000L);
            reap();
        }
        closed = true;
        if (CURRENT.get() == this) CURRENT.remove();
        CALLS.munmap(sqes);
        if (cqRing != sqRing) CALLS.munmap(cqRing);
        CALLS.munmap(sqRing);
        CALLS.close(ringFd);
        arena.close();
    }

    private boolean anyBusy() {
        for (Owner o : owners) if (o.busy()) return true;
        return false;
    }

    private static String errnoName(int errno) {
        return switch (errno) {
            case 1 -> "EPERM";
            case 12 -> "ENOMEM";
            case 22 -> "EINVAL";
            case 38 -> "ENOSYS";
            default -> "errno " + errno;
        };
    }

    /** syscall(2), mmap(2), munmap(2) and close(2) through the FFM API; failures as -errno or IOException. */
    private static final class Calls {
        private static final long PROT_READ_WRITE = 3;
        private static final long MAP_SHARED_POPULATE = 0x8001;
        private final Linker linker = Linker.nativeLinker();
        private final MethodHandle syscall;
        private final MethodHandle mmap;
        private final MethodHandle munmap;
        private final MethodHandle close;

        @SuppressWarnings("restricted")
        Calls() {
            var libc = linker.defaultLookup();
            // The raw syscall(2) returns -1 and sets errno; syscall numbers below go through it and
            // read errno back with the capture state.
            syscall = linker.downcallHandle(libc.find("syscall").orElseThrow(),
                    FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG),
                    Linker.Option.firstVariadicArg(1), Linker.Option.captureCallState("errno"));
            mmap = linker.downcallHandle(libc.find("mmap").orElseThrow(),
                    FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_LONG));
            munmap = linker.downcallHandle(libc.find("munmap").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG));
            close = linker.downcallHandle(libc.find("close").orElseThrow(), FunctionDescriptor.of(JAVA_INT, JAVA_INT));
        }

        private static final ThreadLocal<MemorySegment> STATE =
                ThreadLocal.withInitial(() -> Arena.ofAuto().allocate(Linker.Option.captureStateLayout()));
        private static final VarHandle ERRNO = Linker.Option.captureStateLayout()
                .varHandle(java.lang.foreign.MemoryLayout.PathElement.groupElement("errno"));

        /** The call's result, or -errno. */
        long syscall(long number, long a, long b, long c, long d, long e, long f) {
            MemorySegment state = STATE.get();
            try {
                long rc = (long) syscall.invokeExact(state, number, a, b, c, d, e, f);
                return rc == -1 ? -(int) ERRNO.get(state, 0L) : rc;
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        @SuppressWarnings("restricted")
        MemorySegment mmap(int fd, long bytes, long offset) throws IOException {
            long address;
            try {
                address = (long) mmap.invokeExact(0L, bytes, (int) PROT_READ_WRITE, (int) MAP_SHARED_POPULATE, fd, offset);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
            if (address == -1L) throw new IOException("mmap of the io_uring failed");
            return MemorySegment.ofAddress(address).reinterpret(bytes);
        }

        void munmap(MemorySegment segment) {
            try {
                int ignored = (int) munmap.invokeExact(segment.address(), segment.byteSize());
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }

        void close(int fd) {
            try {
                int ignored = (int) close.invokeExact(fd);
            } catch (Throwable t) {
                throw new IllegalStateException(t);
            }
        }
    }
}
