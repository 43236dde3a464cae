package io.iotarget.buffer;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static io.iotarget.buffer.TestSupport.KiB;
import static io.iotarget.buffer.TestSupport.MiB;
import static io.iotarget.buffer.TestSupport.group;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Many threads take, queue, release and cancel at once on a pool too small for them, with the
 * real trim timer running; afterwards the totals must be exact: nothing in use, every waiter
 * served or cancelled exactly once, no buffer ever held by two at a time.
 *
 * <p>The takes queue faster than releases serve them: when the threads are done, some 90,000
 * are still queued, each served only by a release. A take never served therefore shows as a
 * stall — no waiter of any thread served for {@link #STALL_SECONDS} — not as a deadline on the
 * whole drain, whose length depends on the machine's load. A thread waiting for its takes
 * sleeps until a delivery wakes it and looks at each of its waiters once, so as not to take the
 * CPU from the threads whose releases serve them.
 */
class BufferPoolStressTest {
    private static final int THREADS = 6;
    private static final int OPERATIONS_PER_THREAD = 60_000;
    private static final int ACCOUNTS = 4;
    private static final long CAPACITY = 4 * MiB;
    private static final long SHARE = 3 * MiB / 2;
    private static final long STALL_SECONDS = 60;

    /** A queued take: delivered at most once, or cancelled; a delivery wakes the taking thread. */
    private static final class CountingWaiter implements BufferWaiter {
        final AtomicInteger deliveries = new AtomicInteger();
        volatile boolean cancelled;
        final BufferAccount account;
        final Queue<PooledBuffer> inbox;
        final AtomicLong allDeliveries;
        final Thread owner = Thread.currentThread();

        CountingWaiter(BufferAccount account, Queue<PooledBuffer> inbox, AtomicLong allDeliveries) {
            this.account = account;
            this.inbox = inbox;
            this.allDeliveries = allDeliveries;
        }

        @Override
        public void available(PooledBuffer buffer) {
            inbox.add(buffer);                  // first: a counted delivery is always in the inbox
            deliveries.incrementAndGet();
            allDeliveries.incrementAndGet();
            LockSupport.unpark(owner);
        }
    }

    /**
     * Marks a buffer as held by `owner` in its first bytes, so that a second holder shows. The
     * mark goes through a view of the whole class (4 KiB at least): a take of fewer than 8
     * bytes has a limit too small for it.
     */
    private static void claim(PooledBuffer buffer, long owner) {
        wholeClass(buffer).putLong(0, owner);
    }

    private static void releaseChecked(PooledBuffer buffer, long owner, AtomicLong clashes) {
        if (wholeClass(buffer).getLong(0) != owner) clashes.incrementAndGet();
        buffer.release();
    }

    private static ByteBuffer wholeClass(PooledBuffer buffer) {
        return buffer.buffer().duplicate().clear();
    }

    /** Mostly up to 64 KiB, one in 8 up to 256 KiB, one in 32 below the 8 bytes of an owner mark. */
    private static int size(SplittableRandom random) {
        int kind = random.nextInt(32);
        if (kind == 0) return 1 + random.nextInt(7);
        if (kind <= 4) return 1 + random.nextInt(MiB / 4);
        return 1 + random.nextInt(64 * KiB);
    }

    @Test
    void shouldKeepExactTotalsUnderConcurrentTakeReleaseAndCancel() throws Exception {
        BufferPool pool = new BufferPool(CAPACITY, SHARE);
        BufferAccount[] accounts = new BufferAccount[ACCOUNTS];
        for (int i = 0; i < ACCOUNTS; i++) accounts[i] = pool.account(group(10 + i));
        Queue<CountingWaiter> allWaiters = new ConcurrentLinkedQueue<>();
        AtomicLong clashes = new AtomicLong();
        AtomicLong ownerIds = new AtomicLong();
        AtomicLong overShare = new AtomicLong();
        AtomicLong overCapacity = new AtomicLong();
        AtomicLong deliveries = new AtomicLong();
        AtomicBoolean running = new AtomicBoolean(true);
        CountDownLatch start = new CountDownLatch(1);

        Thread watcher = Thread.ofPlatform().start(() -> {
            while (running.get()) {
                for (BufferAccount account : accounts) if (account.inUseBytes() > SHARE) overShare.incrementAndGet();
                if (pool.residentBytes() > CAPACITY) overCapacity.incrementAndGet();
                Thread.onSpinWait();
            }
        });
        List<Thread> workers = new ArrayList<>();
        Queue<Throwable> errors = new ConcurrentLinkedQueue<>();
        for (int t = 0; t < THREADS; t++) {
            long seed = 1000 + t;
            workers.add(Thread.ofPlatform().start(() -> {
                try {
                    start.await();
                    SplittableRandom random = new SplittableRandom(seed);
                    Queue<PooledBuffer> inbox = new ConcurrentLinkedQueue<>();
                    List<PooledBuffer> held = new ArrayList<>();
                    List<Long> owners = new ArrayList<>();
                    List<CountingWaiter> queued = new ArrayList<>();
                    List<CountingWaiter> mine = new ArrayList<>();
                    for (int op = 0; op < OPERATIONS_PER_THREAD; op++) {
                        for (PooledBuffer delivered; (delivered = inbox.poll()) != null; ) {
                            long owner = ownerIds.incrementAndGet();
                            claim(delivered, owner);
                            held.add(delivered);
                            owners.add(owner);
                        }
                        int choice = random.nextInt(100);
                        BufferAccount account = accounts[random.nextInt(ACCOUNTS)];
                        int bytes = size(random);
                        if (choice < 40 && held.size() < 16) {
                            CountingWaiter waiter = new CountingWaiter(account, inbox, deliveries);
                            PooledBuffer buffer = account.take(bytes, waiter);
                            if (buffer != null) {
                                long owner = ownerIds.incrementAndGet();
                                claim(buffer, owner);
                                held.add(buffer);
                                owners.add(owner);
                            } else {
                                allWaiters.add(waiter);
                                queued.add(waiter);
                                mine.add(waiter);
                            }
                        } else if (choice < 55 && held.size() < 16) {
                            PooledBuffer buffer = account.tryTake(bytes);
                            if (buffer != null) {
                                long owner = ownerIds.incrementAndGet();
                                claim(buffer, owner);
                                held.add(buffer);
                                owners.add(owner);
                            }
                        } else if (choice < 65 && !queued.isEmpty()) {
                            CountingWaiter waiter = queued.remove(random.nextInt(queued.size()));
                            if (waiter.account.cancel(waiter)) waiter.cancelled = true;
                        } else if (!held.isEmpty()) {
                            int i = random.nextInt(held.size());
                            releaseChecked(held.remove(i), owners.remove(i), clashes);
                        }
                    }
                    for (int i = 0; i < held.size(); i++) releaseChecked(held.get(i), owners.get(i), clashes);
                    // What is still queued is served as the others release; give it back as it comes.
                    // A worker that died keeps what it held and what its queued takes receive, so
                    // the others may never be served: stop waiting then, and let its error speak.
                    long seen = deliveries.get();
                    long seenAt = System.nanoTime();
                    int done = 0;           // mine.get(i) for i < done is served or cancelled, for good
                    while (true) {
                        PooledBuffer delivered = inbox.poll();
                        if (delivered != null) {
                            delivered.release();
                            continue;
                        }
                        while (done < mine.size() && (mine.get(done).cancelled || mine.get(done).deliveries.get() != 0)) done++;
                        if (done == mine.size()) {
                            if (inbox.isEmpty()) break;     // every delivery counted is in the inbox
                        } else if (!errors.isEmpty()) {
                            return;
                        } else if (deliveries.get() != seen) {
                            seen = deliveries.get();
                            seenAt = System.nanoTime();
                        } else if (System.nanoTime() - seenAt > TimeUnit.SECONDS.toNanos(STALL_SECONDS)) {
                            throw new AssertionError("queued takes never served: no waiter served for " + STALL_SECONDS
                                    + " s, " + List.of(accounts) + ", resident " + pool.residentBytes() + " bytes");
                        } else {
                            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
                        }
                    }
                } catch (Throwable e) {
                    errors.add(e);
                }
            }));
        }
        start.countDown();
        for (Thread worker : workers) worker.join();
        running.set(false);
        watcher.join();

        for (Throwable e : errors) e.printStackTrace();
        assertEquals(List.of(), List.copyOf(errors));
        assertEquals(0, clashes.get(), "a buffer was held by two at once");
        assertEquals(0, overShare.get(), "an account went over its share");
        assertEquals(0, overCapacity.get(), "the pool went over its capacity");
        long served = 0;
        long cancelled = 0;
        for (CountingWaiter waiter : allWaiters) {
            if (waiter.cancelled) {
                assertEquals(0, waiter.deliveries.get(), "a cancelled waiter was served");
                cancelled++;
            } else {
                assertEquals(1, waiter.deliveries.get(), "a waiter was not served exactly once");
                served++;
            }
        }
        assertTrue(pool.counter(BufferCounter.WAITS) >= allWaiters.size());
        for (BufferAccount account : accounts) {
            assertEquals(0, account.inUseBytes(), account.toString());
            assertEquals(0, account.waiting(), account.toString());
        }
        assertEquals(0, pool.inUseBytes());
        assertTrue(served > 1000 && cancelled > 100, "the test exercised waiting: served " + served + ", cancelled " + cancelled);
        pool.close();
        assertEquals(0, pool.residentBytes());
    }
}
