package io.iotarget.backend.nullblk;

import io.iotarget.backend.Completion;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * Reports requests to their {@link Completion} at given times, on one thread, as null_blk's
 * per-request hrtimer does with {@code irqmode=2}: no thread sleeps per request, and the
 * submitting thread returns at once.
 *
 * <p>Deadlines must be added in non-decreasing order (the {@link TimedNullBackend} timeline
 * guarantees it), so a FIFO ring is the whole schedule: the thread sleeps until the head's
 * deadline, reports every request that is due, and sleeps again. The ring doubles when full
 * and never shrinks, so a device at a steady depth allocates nothing.
 *
 * <p>Any thread may {@link #add}; the callbacks run on the timer's thread and must not block.
 */
final class CompletionTimer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(CompletionTimer.class.getName());
    /** Requests reported per pass without taking the lock again. */
    private static final int BATCH = 64;
    /** Numbers the timer threads. */
    private static final AtomicInteger TIMERS = new AtomicInteger();

    private final Thread thread;
    // guarded by this
    private IoRequest[] requests = new IoRequest[BATCH];
    private IoStatus[] statuses = new IoStatus[BATCH];
    private Completion[] completions = new Completion[BATCH];
    private long[] deadlinesNs = new long[BATCH];
    private int head;
    private int size;
    private volatile boolean closed;

    CompletionTimer() {
        this.thread = Thread.ofPlatform().daemon().name("iotarget-null-timer-", TIMERS.getAndIncrement()).start(this::run);
    }

    /** Reports {@code io} with {@code status} to {@code done} once {@code System.nanoTime()} reaches {@code deadlineNs}. */
    synchronized void add(IoRequest io, IoStatus status, Completion done, long deadlineNs) {
        if (size == requests.length) grow();
        int tail = (head + size) & (requests.length - 1);
        requests[tail] = io;
        statuses[tail] = status;
        completions[tail] = done;
        deadlinesNs[tail] = deadlineNs;
        if (size++ == 0) LockSupport.unpark(thread);   // a later entry never precedes the head: only an empty ring needs waking
    }

    private void grow() {
        int n = requests.length;
        IoRequest[] r = new IoRequest[2 * n];
        IoStatus[] s = new IoStatus[2 * n];
        Completion[] c = new Completion[2 * n];
        long[] d = new long[2 * n];
        for (int i = 0; i < size; i++) {
            int at = (head + i) & (n - 1);
            r[i] = requests[at];
            s[i] = statuses[at];
            c[i] = completions[at];
            d[i] = deadlinesNs[at];
        }
        requests = r;
        statuses = s;
        completions = c;
        deadlinesNs = d;
        head = 0;
    }

    private void run() {
        IoRequest[] dueRequests = new IoRequest[BATCH];
        IoStatus[] dueStatuses = new IoStatus[BATCH];
        Completion[] dueCompletions = new Completion[BATCH];
        while (!closed) {
            int due = 0;
            long waitNs;
            synchronized (this) {
                long now = System.nanoTime();
                int mask = requests.length - 1;
                while (size > 0 && due < BATCH && deadlinesNs[head] - now <= 0) {
                    dueRequests[due] = requests[head];
                    dueStatuses[due] = statuses[head];
                    dueCompletions[due++] = completions[head];
                    requests[head] = null;
                    completions[head] = null;
                    head = (head + 1) & mask;
                    size--;
                }
                waitNs = size == 0 ? -1 : deadlinesNs[head] - now;
            }
            for (int i = 0; i < due; i++) {
                try {
                    dueCompletions[i].completed(dueRequests[i], dueStatuses[i]);
                } catch (RuntimeException | Error e) {      // a callback's bug must not stop every later completion
                    LOG.log(System.Logger.Level.ERROR, "completion callback failed on " + thread.getName(), e);
                }
                dueRequests[i] = null;
                dueCompletions[i] = null;
            }
            if (due > 0) continue;
            if (waitNs < 0) LockSupport.park(this);
            else LockSupport.parkNanos(this, waitNs);
        }
    }

    /** Stops the thread; requests still waiting are never reported (close only once the device is drained). */
    @Override
    public void close() {
        closed = true;
        LockSupport.unpark(thread);
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
