package io.iotarget.backend.file;

import io.iotarget.backend.Backend;
import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.Completion;
import io.iotarget.backend.ErrnoException;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

/**
 * One io_uring for the file and block-device backends of an engine, reached through the FFM
 * API: io_uring_setup and io_uring_enter by syscall(2), the submission queue (SQ), completion
 * queue (CQ) and SQE array mapped into the process.
 *
 * <h2>1. Slots</h2>
 * The ring has {@code entries} slots ({@link RingSlot}), one per request on the ring, and slot
 * {@code i} owns SQE {@code i}. A request holds its slot from its first SQE to its last
 * completion and has at most one SQE outstanding at a time (a PREFLUSH's fsync, then the data,
 * then a FUA fsync), so at most {@code entries} operations are ever in the kernel: the SQ
 * cannot overflow, and neither can the CQ, which the kernel makes twice as large. Nothing is
 * dropped; a request that finds no free slot waits in a FIFO backlog and takes the next slot
 * freed.
 *
 * <h2>2. Submission</h2>
 * Any thread may start a request. It takes a slot and writes the slot's SQE without a lock,
 * then, under {@link #lock}, appends the slot's index to the SQ array and publishes the new
 * tail with a release store (the kernel reads it with acquire). It then calls io_uring_enter
 * to submit — unless it is {@linkplain #plug() plugged}: then the outermost plug's close
 * submits everything gathered in one call. Any enter submits every published entry, whoever
 * published it, so an entry is never left behind as long as its publisher enters afterwards.
 *
 * <h2>3. Completion</h2>
 * One platform thread per ring waits in io_uring_enter(GETEVENTS), reads CQEs after an
 * acquire load of the CQ tail, and hands each result to its slot, which either pushes its
 * next SQE or ends the request: it frees the slot (or gives it to the oldest backlogged
 * request) and then calls the request's {@link Completion}. Requests that completion starts
 * (the dispatch queue's next waiting request) are gathered and submitted by the same enter
 * that waits for the next completions; when it gathered nothing it waits with
 * {@code to_submit = 0}, because any submitting enter takes the ring's mutex (uring_lock):
 * entering with work to submit on every wait made the completion thread and the submitters
 * spin on that mutex for a quarter of all CPU time (17.7 µs of CPU per 4 KiB read at QD32,
 * against 4.9 µs without). The CQ head is released after each CQE is read.
 *
 * <h2>4. Why one ring per engine</h2>
 * A ring per device would size each ring to its device's queue depth and need no backlog, but
 * costs a completion thread per device, and an engine may have many devices (every file
 * namespace is one) on few cores; one ring gathers completions of all devices into one wait
 * and one wake-up. Per-device fairness is not the ring's job: each device's dispatch queue
 * already bounds what it has in flight; the ring only adds a FIFO when all devices together
 * exceed {@link IoEngine#RING_ENTRIES}, as a host adapter's shared tag set does.
 *
 * <h2>5. Watch</h2>
 * A thread that exits while its requests are in the kernel may see them fail with ECANCELED
 * (io-wq work of an exiting task): such requests, and EINTR/EAGAIN results, are pushed again
 * from the completion thread, up to {@link RingSlot#MAX_RETRIES} times. No SQPOLL (it would
 * spin a core) and no COOP_TASKRUN or DEFER_TASKRUN (they would wait for the submitting
 * thread, which may be blocked elsewhere, to run completion work).
 *
 * <p>Any thread may {@link #start}; {@link #close} once, after the requests have ended.
 */
final class IoRing implements AutoCloseable {
    /*
     * Maintainers' notes. The slot's fields are written by the starting thread before its SQE
     * is published (release) and read by the completion thread after the CQE (acquire): the
     * kernel's own acquire/release pairs between the two carry them, as they carry the SQE.
     * While a request is under way only the completion thread touches its slot.
     */

    // struct io_uring_params (include/uapi/linux/io_uring.h), 120 bytes.
    private static final long PARAMS_BYTES = 120;
    private static final long P_SQ_ENTRIES = 0;
    private static final long P_CQ_ENTRIES = 4;
    private static final long P_FLAGS = 8;
    private static final long P_FEATURES = 20;
    private static final long P_SQ_OFF = 40;
    private static final long P_CQ_OFF = 80;
    // struct io_sqring_offsets / io_cqring_offsets, relative to P_SQ_OFF / P_CQ_OFF.
    private static final long OFF_HEAD = 0;
    private static final long OFF_TAIL = 4;
    private static final long OFF_RING_MASK = 8;
    private static final long OFF_SQ_ARRAY = 24;
    private static final long OFF_CQES = 20;
    // mmap offsets of the three regions.
    private static final long OFF_SQ_RING = 0L;
    private static final long OFF_CQ_RING = 0x8000000L;
    private static final long OFF_SQES = 0x10000000L;

    private static final int SETUP_SUBMIT_ALL = 1 << 7;
    private static final int FEAT_SINGLE_MMAP = 1;
    private static final int ENTER_GETEVENTS = 1;

    /*  struct io_uring_sqe, 64 bytes:
     *   0 opcode u8 | 1 flags u8 | 2 ioprio u16 | 4 fd s32
     *   8 off u64                | 16 addr u64
     *  24 len u32   | 28 op flags (rw_flags, fsync_flags) u32
     *  32 user_data u64          | 40..63 buf_index, personality, ... (0)          */
    static final long SQE_BYTES = 64;
    private static final long SQE_OPCODE = 0;
    private static final long SQE_FD = 4;
    private static final long SQE_OFF = 8;
    private static final long SQE_ADDR = 16;
    private static final long SQE_LEN = 24;
    private static final long SQE_OP_FLAGS = 28;
    private static final long SQE_USER_DATA = 32;
    /*  struct io_uring_cqe, 16 bytes: 0 user_data u64 | 8 res s32 | 12 flags u32          */
    private static final long CQE_BYTES = 16;
    private static final long CQE_RES = 8;

    static final byte OP_NOP = 0;
    static final byte OP_FSYNC = 3;
    static final byte OP_FALLOCATE = 17;
    static final byte OP_READ = 22;
    static final byte OP_WRITE = 23;
    static final int FSYNC_DATASYNC = 1;
    static final int RWF_DSYNC = 2;

    /** user_data of the NOP that tells the completion thread to stop; slots use 0..entries-1. */
    private static final long STOP = -1L;
    /** Wait before trying io_uring_enter again after EAGAIN/EBUSY (the kernel is short of memory). */
    private static final long RETRY_WAIT_NS = 100_000;
    private static final long CLOSE_POLL_NS = 1_000_000;

    private static final VarHandle INT = JAVA_INT.varHandle();
    private static final System.Logger LOG = System.getLogger(IoRing.class.getName());

    private final int ringFd;
    private final int entries;
    private final MemorySegment sqRing;
    private final MemorySegment cqRing;
    private final MemorySegment sqes;
    private final long sqTailAt;
    private final long sqArrayAt;
    private final int sqMask;
    private final long cqHeadAt;
    private final long cqTailAt;
    private final long cqesAt;
    private final int cqMask;
    private final IoThreads fallback;
    private final RingSlot[] slots;
    private final Thread completer;
    private final ThreadLocal<PlugState> plugs = new ThreadLocal<>();
    /** io_uring_enter calls that submitted for a starting thread or a plug, not the completion thread's. */
    private final LongAdder submitCalls = new LongAdder();

    private final ReentrantLock lock = new ReentrantLock();
    // Guarded by lock.
    private final int[] freeSlots;
    private int freeCount;
    private final RequestFifo backlog = new RequestFifo();
    private int sqTail;
    private boolean closed;

    /** Completion thread only. */
    private int cqHead;

    private IoRing(int ringFd, MemorySegment params, IoThreads fallback) throws ErrnoException {
        this.ringFd = ringFd;
        this.fallback = fallback;
        this.entries = params.get(JAVA_INT, P_SQ_ENTRIES);
        int cqEntries = params.get(JAVA_INT, P_CQ_ENTRIES);
        long sqArray = params.get(JAVA_INT, P_SQ_OFF + OFF_SQ_ARRAY);
        long cqes = params.get(JAVA_INT, P_CQ_OFF + OFF_CQES);
        long sqBytes = sqArray + 4L * entries;
        long cqBytes = cqes + CQE_BYTES * cqEntries;
        boolean single = (params.get(JAVA_INT, P_FEATURES) & FEAT_SINGLE_MMAP) != 0;
        MemorySegment sq = null;
        MemorySegment cq = null;
        try {
            sq = LinuxCalls.mmap(ringFd, single ? Math.max(sqBytes, cqBytes) : sqBytes, OFF_SQ_RING);
            cq = single ? sq : LinuxCalls.mmap(ringFd, cqBytes, OFF_CQ_RING);
            this.sqes = LinuxCalls.mmap(ringFd, SQE_BYTES * entries, OFF_SQES);
        } catch (ErrnoException e) {
            if (sq != null) LinuxCalls.munmap(sq);
            if (cq != null && cq != sq) LinuxCalls.munmap(cq);
            throw e;
        }
        this.sqRing = sq;
        this.cqRing = cq;
        this.sqTailAt = params.get(JAVA_INT, P_SQ_OFF + OFF_TAIL);
        this.sqArrayAt = sqArray;
        this.sqMask = sqRing.get(JAVA_INT, params.get(JAVA_INT, P_SQ_OFF + OFF_RING_MASK));
        this.cqHeadAt = params.get(JAVA_INT, P_CQ_OFF + OFF_HEAD);
        this.cqTailAt = params.get(JAVA_INT, P_CQ_OFF + OFF_TAIL);
        this.cqesAt = cqes;
        this.cqMask = cqRing.get(JAVA_INT, params.get(JAVA_INT, P_CQ_OFF + OFF_RING_MASK));
        this.sqTail = (int) INT.getAcquire(sqRing, sqTailAt);
        this.cqHead = (int) INT.getAcquire(cqRing, cqHeadAt);
        this.slots = new RingSlot[entries];
        this.freeSlots = new int[entries];
        for (int i = 0; i < entries; i++) {
            slots[i] = new RingSlot(this, i);
            freeSlots[i] = entries - 1 - i;
        }
        this.freeCount = entries;
        this.completer = Thread.ofPlatform().daemon().name("iotarget-uring").unstarted(this::complete);
        completer.start();
    }

    /**
     * Sets up a ring of {@code entries} (rounded up to a power of two by the kernel); the
     * requests the ring refuses to do go to {@code fallback}.
     *
     * @throws ErrnoException io_uring_setup failed: ENOSYS (no io_uring), EPERM
     *                        (kernel.io_uring_disabled, seccomp), ENOMEM, ...
     */
    static IoRing open(int entries, IoThreads fallback) throws ErrnoException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment params = arena.allocate(PARAMS_BYTES, 8);
            params.set(JAVA_INT, P_FLAGS, SETUP_SUBMIT_ALL);
            long fd = LinuxCalls.syscall(LinuxCalls.SYS_IO_URING_SETUP, entries, params.address(), 0, 0, 0, 0);
            if (fd == -BackendErrors.EINVAL) {            // before Linux 5.18: no SUBMIT_ALL
                params.fill((byte) 0);
                fd = LinuxCalls.syscall(LinuxCalls.SYS_IO_URING_SETUP, entries, params.address(), 0, 0, 0, 0);
            }
            if (fd < 0) throw new ErrnoException("io_uring_setup", (int) -fd);
            try {
                return new IoRing((int) fd, params, fallback);
            } catch (ErrnoException | RuntimeException e) {
                LinuxCalls.close((int) fd);
                throw e;
            }
        }
    }

    int entries() {
        return entries;
    }

    IoThreads fallback() {
        return fallback;
    }

    /** io_uring_enter calls made to submit, by starting threads and plugs (not by the completion thread). */
    long submitCalls() {
        return submitCalls.sum();
    }

    /**
     * Starts {@code io} on {@code file}: null when it is under way or waits for a slot,
     * {@link IoStatus#ABORTED} (and {@code done} never called) when the ring is closed.
     */
    IoStatus start(FileBackend file, IoRequest io, Completion done) {
        RingSlot slot;
        lock.lock();
        try {
            if (closed) return IoStatus.ABORTED;
            if (freeCount == 0) {
                backlog.add(file, io, done);
                return null;
            }
            slot = slots[freeSlots[--freeCount]];
        } finally {
            lock.unlock();
        }
        slot.begin(file, io, done);
        return null;
    }

    /** Writes SQE {@code index}; the caller owns the slot and its SQE is not in the kernel. */
    void prepare(int index, byte opcode, int fd, long offset, long address, int length, int opFlags) {
        long at = index * SQE_BYTES;
        for (long i = 0; i < SQE_BYTES; i += 8) sqes.set(JAVA_LONG, at + i, 0L);
        sqes.set(JAVA_BYTE, at + SQE_OPCODE, opcode);
        sqes.set(JAVA_INT, at + SQE_FD, fd);
        sqes.set(JAVA_LONG, at + SQE_OFF, offset);
        sqes.set(JAVA_LONG, at + SQE_ADDR, address);
        sqes.set(JAVA_INT, at + SQE_LEN, length);
        sqes.set(JAVA_INT, at + SQE_OP_FLAGS, opFlags);
        sqes.set(JAVA_LONG, at + SQE_USER_DATA, index);
    }

    /** Publishes SQE {@code index} and submits it, or leaves that to this thread's plug. */
    void push(int index) {
        publish(index);
        PlugState plug = plugs.get();
        if (plug != null && plug.depth > 0) {
            plug.gathered = true;
        } else {
            submit();
        }
    }

    /** Appends SQE {@code index} to the SQ and releases the new tail to the kernel. */
    private void publish(int index) {
        lock.lock();
        try {
            int tail = sqTail;
            sqRing.set(JAVA_INT, sqArrayAt + 4L * (tail & sqMask), index);
            sqTail = tail + 1;
            INT.setRelease(sqRing, sqTailAt, tail + 1);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Hands every published SQE to the kernel. A failure other than EAGAIN/EBUSY (tried again)
     * means the ring itself is broken: it is logged, and the entries stay for the next enter.
     */
    private void submit() {
        submitCalls.increment();
        while (true) {
            long rc = LinuxCalls.syscall(LinuxCalls.SYS_IO_URING_ENTER, ringFd, entries, 0, 0, 0, 0);
            if (rc >= 0 || rc == -BackendErrors.EINTR) return;
            if (rc != -BackendErrors.EAGAIN && rc != -BackendErrors.EBUSY) {
                LOG.log(System.Logger.Level.ERROR, "io_uring_enter failed: " + BackendErrors.name((int) -rc));
                return;
            }
            LockSupport.parkNanos(RETRY_WAIT_NS);
        }
    }

    /**
     * A slot's request has ended (or moved to the pool): the slot goes to the oldest
     * backlogged request, or back to the free list. Completion thread.
     */
    void release(RingSlot slot) {
        Backend backend;
        IoRequest io;
        Completion done;
        lock.lock();
        try {
            if (backlog.size() == 0) {
                freeSlots[freeCount++] = slot.index;
                return;
            }
            backend = backlog.backend();
            io = backlog.request();
            done = backlog.completion();
            backlog.remove();
        } finally {
            lock.unlock();
        }
        slot.begin((FileBackend) backend, io, done);
    }

    /** The completion thread's loop: wait, reap, repeat, until the STOP NOP. */
    private void complete() {
        PlugState own = new PlugState();
        own.depth = 1;                  // what completions start goes out with the next wait
        plugs.set(own);
        boolean stop = false;
        while (!stop) {
            long rc = LinuxCalls.syscall(LinuxCalls.SYS_IO_URING_ENTER, ringFd, own.gathered ? entries : 0, 1, ENTER_GETEVENTS, 0, 0);
            own.gathered = false;
            if (rc < 0 && rc != -BackendErrors.EINTR && rc != -BackendErrors.EAGAIN && rc != -BackendErrors.EBUSY) {
                LOG.log(System.Logger.Level.ERROR, "io_uring_enter(GETEVENTS) failed: " + BackendErrors.name((int) -rc));
                LockSupport.parkNanos(CLOSE_POLL_NS);
            }
            int head = cqHead;
            int tail = (int) INT.getAcquire(cqRing, cqTailAt);
            while (head != tail) {
                long at = cqesAt + CQE_BYTES * (head & cqMask);
                long userData = cqRing.get(JAVA_LONG, at);
                int res = cqRing.get(JAVA_INT, at + CQE_RES);
                head++;
                INT.setRelease(cqRing, cqHeadAt, head);
                if (userData == STOP) {
                    stop = true;
                    continue;
                }
                try {
                    slots[(int) userData].completed(res);
                } catch (RuntimeException | Error e) {
                    // The completion thread must outlive what a callback throws, or every IO in flight waits for ever.
                    LOG.log(System.Logger.Level.ERROR, "a completion failed on the io_uring completion thread", e);
                }
            }
            cqHead = head;
        }
    }

    /** The calling thread's plug, one more level deep. */
    IoEngine.Plug plug() {
        PlugState plug = plugs.get();
        if (plug == null) {
            plug = new PlugState();
            plugs.set(plug);
        }
        plug.depth++;
        return plug;
    }

    /** One thread's plug: how deep, and whether it holds published SQEs not yet entered. Its thread only. */
    private final class PlugState implements IoEngine.Plug {
        int depth;
        boolean gathered;

        @Override
        public void close() {
            if (depth <= 0) throw new IllegalStateException("plug closed more often than opened");
            if (--depth == 0 && gathered) {
                gathered = false;
                submit();
            }
        }
    }

    /**
     * Refuses new requests, waits for those on the ring (submitting anything plugged threads
     * still hold), stops the completion thread, unmaps the rings and closes the descriptor.
     * Not from the completion thread.
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) return;
            closed = true;
        } finally {
            lock.unlock();
        }
        while (!idle()) {
            submit();
            LockSupport.parkNanos(CLOSE_POLL_NS);
        }
        prepare(0, OP_NOP, -1, 0, 0, 0, 0);
        sqes.set(JAVA_LONG, SQE_USER_DATA, STOP);
        publish(0);
        submit();
        boolean interrupted = false;
        while (completer.isAlive()) {
            try {
                completer.join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) Thread.currentThread().interrupt();
        LinuxCalls.munmap(sqes);
        if (cqRing != sqRing) LinuxCalls.munmap(cqRing);
        LinuxCalls.munmap(sqRing);
        LinuxCalls.close(ringFd);
    }

    private boolean idle() {
        lock.lock();
        try {
            return freeCount == entries && backlog.size() == 0;
        } finally {
            lock.unlock();
        }
    }
}
