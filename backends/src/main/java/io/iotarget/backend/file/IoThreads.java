package io.iotarget.backend.file;

import io.iotarget.backend.Backend;
import io.iotarget.backend.Completion;
import io.iotarget.backend.RequestRunner;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The portable way to run blocking backend calls off the submitting thread: a bounded pool of
 * platform threads, each running one request at a time through {@link RequestRunner} (for
 * files: pread/pwrite on the raw descriptor). Requests beyond the threads wait in FIFO order;
 * there are never more of them than the devices' queue depths allow, so the queue needs no
 * bound of its own. Threads start on demand, up to {@code maxThreads}, and stay until
 * {@link #close}. It is the whole IO engine where io_uring is unavailable, and the home of the
 * rare operations io_uring is not used for.
 *
 * <p>{@link #execute} from any thread; completions run on the pool's threads.
 */
final class IoThreads implements AutoCloseable {
    /*
     * Maintainers' notes. The queue is a RequestFifo under one lock, so that a request costs
     * no allocation. A submitter wakes one waiting worker per request it queues;
     * `signalled` counts wake-ups sent and not yet taken, so a burst of requests wakes as many
     * distinct workers (and starts new ones once none is left waiting) instead of signalling
     * one worker twice. A worker that wakes spuriously may take a wake-up meant for another;
     * that only costs an extra signal later, never a lost one.
     */
    private final int maxThreads;
    private final String threadName;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final List<Thread> threads = new ArrayList<>();
    // Guarded by lock.
    private final RequestFifo queue = new RequestFifo();
    private int waiting;
    private int signalled;
    private boolean closed;

    IoThreads(int maxThreads, String threadName) {
        if (maxThreads < 1) throw new IllegalArgumentException("maxThreads " + maxThreads + " (expected: >= 1)");
        this.maxThreads = maxThreads;
        this.threadName = threadName;
    }

    /**
     * Queues {@code io} to run on {@code backend}; null, or {@link IoStatus#ABORTED} (and
     * {@code done} is never called) when the pool is closed.
     */
    IoStatus execute(Backend backend, IoRequest io, Completion done) {
        lock.lock();
        try {
            if (closed) return IoStatus.ABORTED;
            queue.add(backend, io, done);
            if (waiting > signalled) {
                signalled++;
                work.signal();
            } else if (threads.size() < maxThreads) {
                Thread t = Thread.ofPlatform().daemon().name(threadName + "-" + threads.size()).unstarted(this::work);
                threads.add(t);
                t.start();
            }
            return null;
        } finally {
            lock.unlock();
        }
    }

    private void work() {
        while (true) {
            Backend backend;
            IoRequest io;
            Completion done;
            lock.lock();
            try {
                while (queue.size() == 0) {
                    if (closed) return;
                    waiting++;
                    try {
                        work.awaitUninterruptibly();
                    } finally {
                        waiting--;
                        if (signalled > 0) signalled--;
                    }
                }
                backend = queue.backend();
                io = queue.request();
                done = queue.completion();
                queue.remove();
            } finally {
                lock.unlock();
            }
            run(backend, io, done);
        }
    }

    private static void run(Backend backend, IoRequest io, Completion done) {
        IoStatus status;
        try {
            status = RequestRunner.run(backend, io);
        } catch (IOException e) {
            done.failed(io, e);
            return;
        } catch (RuntimeException | Error e) {
            done.failed(io, new IOException("unexpected failure in " + backend.kind() + " backend", e));
            return;
        }
        done.completed(io, status);
    }

    /**
     * Lets the threads finish what is queued, then ends them. Later {@link #execute} calls are
     * refused. Not from a pool thread.
     */
    @Override
    public void close() {
        List<Thread> started;
        lock.lock();
        try {
            closed = true;
            work.signalAll();
            started = List.copyOf(threads);
        } finally {
            lock.unlock();
        }
        for (Thread t : started) {
            try {
                t.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
