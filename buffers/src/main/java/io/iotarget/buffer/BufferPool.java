package io.iotarget.buffer;

import io.iotarget.model.IoGroup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The server's data buffers: direct memory in power-of-two size classes, reused, bounded by a
 * capacity for the whole pool and a share per account (tenant). The package doc explains the
 * design. Any thread; nothing blocks.
 */
public final class BufferPool implements AutoCloseable {
    /** The smallest class: one page, so that every buffer is O_DIRECT-aligned. */
    public static final int MIN_CLASS_BYTES = 4096;
    /** The largest buffer: the largest power of two a ByteBuffer can hold (NBD's max_request is at most this). */
    public static final int MAX_BUFFER_BYTES = 1 << 30;
    /**
     * Classes below this are cut out of mappings of this size: bounds the mappings to
     * capacity / 2 MiB + one per class (vm.max_map_count is 65530), at one mmap per 512 pages.
     */
    static final int CHUNK_BYTES = 2 << 20;
    /**
     * Time between trim passes; a free buffer is given back after 1 to 2 periods idle. Long
     * enough that a connection pausing between bursts finds its buffers again, short enough
     * that a burst's memory is back within 2 s of its end.
     */
    static final long TRIM_PERIOD_MS = 1000;
    /**
     * Fresh slots taken for this many bytes or more have them made resident with one
     * madvise(MADV_POPULATE_WRITE) instead of a fault per page: a 1 MiB miss took 502 µs
     * with it against 531-553 without, while for 4 KiB the call cost more than the one
     * fault it saves (bench/results/buffers.md).
     */
    static final int POPULATE_MIN_BYTES = 64 << 10;
    /** Default capacity: a quarter of RAM, as the JVM's default heap — together at most half. */
    static final int DEFAULT_CAPACITY_DIVISOR = 4;
    /** Floor of the default capacity: four shares of NBD's largest payload (32 MiB). */
    static final long MIN_DEFAULT_CAPACITY = 128L << 20;
    /**
     * Ceiling of the default capacity: 16 GiB is more than a second of 100 GbE in flight;
     * beyond that RAM does more as page cache and memory backends.
     */
    static final long MAX_DEFAULT_CAPACITY = 16L << 30;
    /** Default share: a quarter of the capacity, so one tenant leaves three quarters to the rest. */
    static final int DEFAULT_SHARE_DIVISOR = 4;
    /** Floor of the default share: NBD's largest payload must fit. */
    static final long MIN_DEFAULT_SHARE = 32L << 20;

    private static final int MIN_CLASS_SHIFT = Integer.numberOfTrailingZeros(MIN_CLASS_BYTES);

    private final long capacityBytes;
    private final long shareBytes;
    private final TrimScheduler trimScheduler;
    private final SizeClass[] classes;
    private final ConcurrentHashMap<Long, BufferAccount> accounts = new ConcurrentHashMap<>();
    /** Class bytes of buffers in use, cached, or being cleared: at most capacityBytes. */
    private final AtomicLong residentBytes = new AtomicLong();
    private final LongAdder[] counters = new LongAdder[BufferCounter.values().length];

    /** Guards the accounts' queues and {@link #waitingAccounts}. */
    private final ReentrantLock waitLock = new ReentrantLock();
    /** Accounts with queued takes, in round-robin order; guarded by waitLock. */
    private final ArrayDeque<BufferAccount> waitingAccounts = new ArrayDeque<>();
    /**
     * The first waiting account's head take fits its share but not the pool: everyone else
     * queues behind it. Written under waitLock, read on the fast path.
     */
    private volatile boolean poolFull;
    /** Requests to serve waiters; only the thread that raised it from 0 serves (see serve). */
    private final AtomicInteger serveRequests = new AtomicInteger();

    /** Trim passes so far; written only by the (serialised) passes. */
    private volatile int trimEpoch;
    /** A trim pass is scheduled. */
    private final AtomicBoolean trimArmed = new AtomicBoolean();
    /** Serialises trim passes. */
    private final Object trimLock = new Object();
    /** Chunks whose arena could not be closed yet (a released buffer still in a system call). */
    private final List<Chunk> unclosed = new ArrayList<>();
    private volatile boolean closed;

    /**
     * @param capacityBytes server-wide cap on the memory buffers hold, in use plus cached free
     * @param shareBytes    the most one account may hold in use at once
     * @throws IllegalArgumentException unless {@code 4096 <= shareBytes <= capacityBytes}
     */
    public BufferPool(long capacityBytes, long shareBytes) {
        this(capacityBytes, shareBytes, TrimScheduler.SHARED_TIMER);
    }

    BufferPool(long capacityBytes, long shareBytes, TrimScheduler trimScheduler) {
        if (shareBytes < MIN_CLASS_BYTES || shareBytes > capacityBytes) {
            throw new IllegalArgumentException("buffer share " + shareBytes + " bytes, capacity " + capacityBytes
                    + " bytes (expected: " + MIN_CLASS_BYTES + " <= share <= capacity)");
        }
        this.capacityBytes = capacityBytes;
        this.shareBytes = shareBytes;
        this.trimScheduler = trimScheduler;
        int classCount = Integer.numberOfTrailingZeros(MAX_BUFFER_BYTES) - MIN_CLASS_SHIFT + 1;
        classes = new SizeClass[classCount];
        for (int i = 0; i < classCount; i++) classes[i] = new SizeClass(this, MIN_CLASS_BYTES << i, CHUNK_BYTES);
        for (int i = 0; i < counters.length; i++) counters[i] = new LongAdder();
    }

    /**
     * A quarter of the machine's RAM (MemTotal in /proc/meminfo), within 128 MiB and 16 GiB:
     * with the JVM's default heap of another quarter, at least half of RAM stays for memory
     * backends, the page cache and the system.
     */
    public static long defaultCapacity() {
        return Math.clamp(memTotalBytes() / DEFAULT_CAPACITY_DIVISOR, MIN_DEFAULT_CAPACITY, MAX_DEFAULT_CAPACITY);
    }

    /**
     * A quarter of {@code capacity}, and at least 32 MiB (NBD's largest payload) or all of a
     * smaller capacity: one tenant flooding a throttled device leaves three quarters of the
     * pool to the others, and four such tenants still leave the rest served round-robin.
     */
    public static long defaultShare(long capacity) {
        return Math.max(capacity / DEFAULT_SHARE_DIVISOR, Math.min(capacity, MIN_DEFAULT_SHARE));
    }

    private static long memTotalBytes() {
        Path meminfo = Path.of("/proc/meminfo");
        try {
            for (String line : Files.readAllLines(meminfo)) {
                if (line.startsWith("MemTotal:")) {        // "MemTotal:       24684092 kB"
                    return Long.parseLong(line.substring("MemTotal:".length()).replace("kB", "").strip()) * 1024;
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + meminfo, e);
        }
        throw new IllegalStateException(meminfo + " has no MemTotal line");
    }

    /**
     * The account of {@code group} (by {@link IoGroup#id()}), created on first use with the
     * pool's share. Any thread; look it up once per binding, not per command.
     */
    public BufferAccount account(IoGroup group) {
        BufferAccount account = accounts.get(group.id());
        return account != null ? account : accounts.computeIfAbsent(group.id(), id -> new BufferAccount(this, shareBytes, group.path()));
    }

    public long capacityBytes() {
        return capacityBytes;
    }

    /** The most one account may hold in use at once: no single buffer may be larger. */
    public long shareBytes() {
        return shareBytes;
    }

    /** Bytes in use over all accounts, in class sizes; the sum is not an atomic snapshot. */
    public long inUseBytes() {
        long sum = 0;
        for (BufferAccount account : accounts.values()) sum += account.inUseBytes();
        return sum;
    }

    /** Bytes the pool lets be resident: in use plus cached free, at most {@link #capacityBytes}. */
    public long residentBytes() {
        return residentBytes.get();
    }

    public long counter(BufferCounter counter) {
        return counters[counter.ordinal()].sum();
    }

    /**
     * Closes the pool: takes throw from now on, cached memory is unmapped, and buffers still
     * out are unmapped as they are released. Queued waiters are never served. Any thread.
     */
    @Override
    public void close() {
        closed = true;
        for (SizeClass sizeClass : classes) sizeClass.trim(Integer.MAX_VALUE);
        closeUnclosed();
    }

    // ---- Taking ----

    PooledBuffer tryTake(BufferAccount account, int bytes) {
        SizeClass sizeClass = classFor(account, bytes);
        checkOpen();
        if (account.queued != 0 || poolFull) return null;
        PooledBuffer buffer = takeFor(account, sizeClass, bytes);
        // What this attempt held for a moment may be what a take queued meanwhile needs: the
        // share it charged, or cached memory it cleared in vain, which a round that ran during
        // the clearing found neither cached nor free (it then marked the pool full).
        if (buffer == null && (account.queued != 0 || poolFull)) serve(null);
        return buffer;
    }

    PooledBuffer take(BufferAccount account, int bytes, BufferWaiter waiter) {
        Objects.requireNonNull(waiter, "waiter");
        SizeClass sizeClass = classFor(account, bytes);
        checkOpen();
        if (account.queued == 0 && !poolFull) {
            PooledBuffer buffer = takeFor(account, sizeClass, bytes);
            if (buffer != null) return buffer;
        }
        Waiting waiting = new Waiting(waiter, sizeClass, bytes);
        waitLock.lock();
        try {
            if (account.queue.isEmpty()) waitingAccounts.addLast(account);
            account.queue.addLast(waiting);
            account.queued++;
        } finally {
            waitLock.unlock();
        }
        count(BufferCounter.WAITS);
        return serve(waiting);
    }

    private SizeClass classFor(BufferAccount account, int bytes) {
        if (bytes < 1 || bytes > MAX_BUFFER_BYTES) {
            throw new IllegalArgumentException("buffer of " + bytes + " bytes (expected: 1 to " + MAX_BUFFER_BYTES + ")");
        }
        int index = bytes <= MIN_CLASS_BYTES ? 0 : Integer.SIZE - Integer.numberOfLeadingZeros(bytes - 1) - MIN_CLASS_SHIFT;
        SizeClass sizeClass = classes[index];
        if (sizeClass.bytes > account.shareBytes()) {
            throw new IllegalArgumentException("buffer of " + bytes + " bytes takes a " + sizeClass.bytes
                    + "-byte class, more than the share of " + account.shareBytes() + " bytes per account (pool capacity "
                    + capacityBytes + " bytes)");
        }
        return sizeClass;
    }

    private void checkOpen() {
        if (closed) throw new IllegalStateException("buffer pool closed");
    }

    /** Charges the account and finds the memory, or changes nothing and returns null. */
    private PooledBuffer takeFor(BufferAccount account, SizeClass sizeClass, int bytes) {
        if (!account.charge(sizeClass.bytes)) return null;
        PooledBuffer buffer = obtain(sizeClass, bytes);
        if (buffer == null) {
            account.uncharge(sizeClass.bytes);
            return null;
        }
        buffer.handOut(account, bytes);
        return buffer;
    }

    /**
     * A buffer of {@code sizeClass} for {@code bytes} within the capacity: a cached one, else a
     * fresh slot (its first {@code bytes} populated when large) once resident bytes have room,
     * clearing the longest-idle cached buffers of any class to make it. Null when even that
     * leaves no room, or when the kernel refused a mapping (counted as
     * {@link BufferCounter#MAP_FAILURES}; the take waits as for a full pool).
     */
    private PooledBuffer obtain(SizeClass sizeClass, int bytes) {
        while (true) {
            PooledBuffer cached = sizeClass.takeCached();
            if (cached != null) return cached;
            if (chargeResident(sizeClass.bytes)) break;
            if (!clearOldestCached()) return null;
        }
        PooledBuffer fresh = sizeClass.takeFresh();
        if (fresh == null) {
            count(BufferCounter.MAP_FAILURES);
            unchargeResident(sizeClass.bytes);
        } else if (bytes >= POPULATE_MIN_BYTES) {
            AnonymousMemory.populate(fresh.pages(bytes));
        }
        return fresh;
    }

    private boolean chargeResident(int bytes) {
        for (long held = residentBytes.get(); held + bytes <= capacityBytes; held = residentBytes.get()) {
            if (residentBytes.compareAndSet(held, held + bytes)) return true;
        }
        return false;
    }

    void unchargeResident(int bytes) {
        residentBytes.addAndGet(-bytes);
    }

    /** Clears the longest-idle cached buffer (of the largest class among equals); false when none is cached. */
    private boolean clearOldestCached() {
        while (true) {
            SizeClass victim = null;
            int oldest = SizeClass.NONE_CACHED;
            for (int i = classes.length - 1; i >= 0; i--) {
                int epoch = classes[i].oldestCachedEpoch();
                if (epoch < oldest) {
                    oldest = epoch;
                    victim = classes[i];
                }
            }
            if (victim == null) return false;
            if (victim.clearOldest()) return true;
        }
    }

    // ---- Releasing ----

    void release(PooledBuffer buffer, BufferAccount account) {
        SizeClass sizeClass = buffer.chunk.sizeClass;
        account.uncharge(sizeClass.bytes);
        buffer.releasedEpoch = trimEpoch;
        sizeClass.putCached(buffer);
        if (closed) {
            sizeClass.trim(Integer.MAX_VALUE);
            return;
        }
        armTrim();
        if (account.queued != 0 || poolFull) serve(null);
    }

    // ---- Waiting ----

    /** A queued take. */
    static final class Waiting {
        final BufferWaiter waiter;
        final SizeClass sizeClass;
        final int bytes;
        /** Set when served, under waitLock. */
        PooledBuffer buffer;

        Waiting(BufferWaiter waiter, SizeClass sizeClass, int bytes) {
            this.waiter = waiter;
            this.sizeClass = sizeClass;
            this.bytes = bytes;
        }
    }

    boolean cancel(BufferAccount account, BufferWaiter waiter) {
        boolean removed = false;
        waitLock.lock();
        try {
            for (Iterator<Waiting> it = account.queue.iterator(); it.hasNext(); ) {
                if (it.next().waiter == waiter) {
                    it.remove();
                    account.queued--;
                    removed = true;
                    break;
                }
            }
            if (removed && account.queue.isEmpty()) waitingAccounts.remove(account);
        } finally {
            waitLock.unlock();
        }
        if (removed) serve(null);      // the cancelled take may have been holding the others up
        return removed;
    }

    /**
     * Serves every queued take that can be served now. One thread serves at a time: a call
     * while another serves only asks it to go round once more, so a waiter that releases or
     * takes from inside {@link BufferWaiter#available} never recurses. Returns the buffer of
     * {@code self} if this call served it (its waiter is then not called).
     */
    private PooledBuffer serve(Waiting self) {
        if (serveRequests.getAndIncrement() != 0) return null;
        PooledBuffer mine = null;
        int requests = 1;
        do {
            for (Waiting served; (served = nextServed()) != null; ) {
                if (served == self) {
                    mine = served.buffer;
                } else {
                    deliver(served);
                }
            }
            requests = serveRequests.addAndGet(-requests);
        } while (requests != 0);
        return mine;
    }

    /**
     * Calls the waiter; whatever it throws, an Error included, is reported and the round goes
     * on. Were it to escape, {@link #serveRequests} would stay above 0 and no take of any
     * account would ever be served again.
     */
    private void deliver(Waiting served) {
        try {
            served.waiter.available(served.buffer);
        } catch (Throwable t) {
            count(BufferCounter.WAITER_FAILURES);
            Thread thread = Thread.currentThread();
            thread.getUncaughtExceptionHandler().uncaughtException(thread, t);
        }
    }

    /**
     * Takes the next servable head off its queue, in round-robin order over the waiting
     * accounts: an account whose head does not fit its share is passed over (its own releases
     * will serve it); the first whose head fits its share but not the pool stops the round
     * and sets {@link #poolFull}, so that released memory accumulates for it.
     */
    private Waiting nextServed() {
        waitLock.lock();
        try {
            if (closed) return null;
            for (int n = waitingAccounts.size(); n > 0; n--) {
                BufferAccount account = waitingAccounts.peekFirst();
                Waiting head = account.queue.peekFirst();
                if (!account.charge(head.sizeClass.bytes)) {
                    waitingAccounts.addLast(waitingAccounts.pollFirst());
                    continue;
                }
                PooledBuffer buffer = obtain(head.sizeClass, head.bytes);
                if (buffer == null) {
                    poolFull = true;
                    buffer = obtain(head.sizeClass, head.bytes);        // memory released before the flag was seen
                    if (buffer == null) {
                        account.uncharge(head.sizeClass.bytes);
                        return null;
                    }
                }
                buffer.handOut(account, head.bytes);
                head.buffer = buffer;
                account.queue.pollFirst();
                account.queued--;
                waitingAccounts.pollFirst();
                if (!account.queue.isEmpty()) waitingAccounts.addLast(account);
                return head;
            }
            poolFull = false;
            return null;
        } finally {
            waitLock.unlock();
        }
    }

    // ---- Trimming ----

    /** Schedules a trim pass unless one is; called whenever something becomes trimmable. */
    void armTrim() {
        if (!trimArmed.get() && trimArmed.compareAndSet(false, true)) trimScheduler.schedule(this::trimPass, TRIM_PERIOD_MS);
    }

    /**
     * One trim pass (the shared timer's thread): a new epoch; cached buffers released two
     * epochs ago or earlier are evicted, emptied mappings unmapped; rescheduled while
     * anything stays cached.
     */
    void trimPass() {
        synchronized (trimLock) {
            trimArmed.set(false);
            int epoch = ++trimEpoch;
            for (SizeClass sizeClass : classes) sizeClass.trim(epoch - 2);
            closeUnclosed();
            boolean cachedLeft = false;
            for (SizeClass sizeClass : classes) cachedLeft |= sizeClass.hasCached();
            if (cachedLeft || hasUnclosed()) armTrim();
        }
        if (poolFull) serve(null);
    }

    /** Unmaps {@code chunk}, retired by its class; retried by the next pass if a system call still holds it. */
    void unmap(Chunk chunk) {
        try {
            chunk.arena.close();
            count(BufferCounter.UNMAPS);
        } catch (IllegalStateException stillAcquired) {
            synchronized (unclosed) {
                unclosed.add(chunk);
            }
            armTrim();
        }
    }

    private void closeUnclosed() {
        List<Chunk> retry;
        synchronized (unclosed) {
            retry = new ArrayList<>(unclosed);
            unclosed.clear();
        }
        for (Chunk chunk : retry) unmap(chunk);
    }

    private boolean hasUnclosed() {
        synchronized (unclosed) {
            return !unclosed.isEmpty();
        }
    }

    void count(BufferCounter counter) {
        counters[counter.ordinal()].increment();
    }

    /** Runs trim passes; the shared timer in production, a manual one in tests. */
    @FunctionalInterface
    interface TrimScheduler {
        void schedule(Runnable pass, long delayMs);

        /** One daemon thread for every pool of the process. */
        TrimScheduler SHARED_TIMER = (pass, delayMs) -> SharedTimer.EXECUTOR.schedule(pass, delayMs, TimeUnit.MILLISECONDS);
    }

    private static final class SharedTimer {
        static final ScheduledExecutorService EXECUTOR = Executors.newSingleThreadScheduledExecutor(
                Thread.ofPlatform().name("iotarget-buffer-trim").daemon().factory());
    }
}
