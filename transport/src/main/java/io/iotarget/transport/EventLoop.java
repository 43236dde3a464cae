package io.iotarget.transport;

import io.iotarget.model.Clock;
import io.iotarget.model.LogText;
import io.iotarget.model.RateLimitedLog;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One thread that owns a {@link Selector} and every {@link Connection} registered with it:
 * it reads, runs the protocol handlers, writes, runs the tasks other threads hand it and the
 * timeouts it was asked for. Nothing a loop owns is touched by another thread; other threads
 * talk to it through {@link #execute}.
 *
 * <h2>One pass of the loop</h2>
 * <pre>
 *   select (until the next timeout, or woken by execute)
 *   read the clock once: {@link #nowNs()} for everything the pass does
 *   for each ready key: accept | read → handler.received → flush | write → flush
 *   run the tasks other threads queued (engine completions, control-plane requests)
 *   run the timeouts that are due (handshake limits, the send-stall sweep)
 * </pre>
 * Time is the transport's {@link Clock}, read once per pass: the send timeout, every
 * {@link #schedule}d deadline and a connection's last progress are measured on it, so tests
 * drive them with a manual clock (waking the loop with {@link #execute} after moving it).
 * A handler that throws fails its own connection, never the loop: an {@link Error} (out of
 * memory, out of threads) is logged and the loop goes on with the next event.
 */
public final class EventLoop {
    /*
     * Maintainers' notes. Wake-ups: a producer queues its task and then, only if no wake-up is
     * pending, sets the flag and calls Selector.wakeup(); the loop clears the flag before it
     * drains the queue (the first thing runTasks does). A task queued after the drain finds the
     * flag clear and wakes the next select (a wakeup() between two selects is kept for the next
     * one); one queued before it is run by the drain. Either way nothing waits for a timeout.
     * The queue and the flag are both volatile, so one of the two sides sees the other's write:
     * stress-tests' EventLoopWakeupStress holds it to this.
     */
    /** Bytes read from a socket per call: big enough for a burst of pipelined small requests. */
    static final int READ_BUFFER_BYTES = 64 * 1024;
    /**
     * Room beyond {@link #READ_BUFFER_BYTES} in the TLS plaintext buffer: more than one record's
     * plaintext (2^14 bytes and its padding), so what a handler left plus one record always fit.
     */
    static final int TLS_RECORD_ROOM = 32 * 1024;
    /** A file region sent under TLS is read in pieces of this size: one record's plaintext each. */
    static final int TLS_FILE_CHUNK_BYTES = 16 * 1024;
    private static final System.Logger LOG = System.getLogger(EventLoop.class.getName());
    /** How often the loop looks for stalled peers; the send timeout is met within this much. */
    static final long SWEEP_NS = 250_000_000L;
    /** An Error in the loop is logged at most this often; the loop then backs off this long. */
    private static final long ERROR_BACKOFF_NS = 100_000_000L;
    /** A file truncated under many readers ends each one's connection: log a few, count the rest. */
    private static final int REGION_CUT_SHORT_LINES_PER_SECOND = 5;

    private final Selector selector;
    private final Thread thread;
    private final Clock clock;
    /** The clock as this pass read it, after its select; loop thread only. */
    private long nowNs;
    private final ConcurrentLinkedQueue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean wakeupPending = new AtomicBoolean();
    private final PriorityQueue<Timeout> timeouts = new PriorityQueue<>();
    /** Shared by every connection of the loop: what a read returns lives here until the handler has seen it. */
    final ByteBuffer readBuffer = ByteBuffer.allocateDirect(READ_BUFFER_BYTES);
    /** The gather list of one write; loop thread only. */
    final ByteBuffer[] gather = new ByteBuffer[OutputQueue.GATHER_MAX];
    /** TLS connections' plaintext is unwrapped here; allocated with the loop's first TLS connection. */
    private ByteBuffer tlsPlain;
    /** A piece of a file region on its way into a TLS record; allocated when first needed. */
    private ByteBuffer tlsFileChunk;
    /** Where TLS connections run their engines' delegated tasks (key exchange, signatures, certificate checks). */
    private final Executor tlsTasks;
    /** Loop thread only. */
    private final List<Connection> connections = new ArrayList<>();
    private final long sendTimeoutNs;
    /** SO_SNDBUF of this loop's connections; 0: the kernel's auto-tuning. */
    final int sendBufferBytes;
    /** How long the loop busy-polls after its last work before it sleeps in select; 0: never polls. */
    private final long pollNs;
    /** When the loop last found a ready key or a task; kept only when it polls. */
    private long lastWorkNs;
    private final java.util.concurrent.atomic.LongAdder unexpected = new java.util.concurrent.atomic.LongAdder();
    /** Connections ended because a queued file region's file shrank beneath it: a few lines a second, the rest counted. */
    private final RateLimitedLog regionsCutShort;
    private volatile boolean running = true;
    private long lastErrorLogNs;
    private long timeoutSequence;

    EventLoop(String name, Clock clock, long sendTimeoutNs, int sendBufferBytes, long pollNs, Executor tlsTasks) throws IOException {
        this.selector = Selector.open();
        this.clock = clock;
        this.nowNs = clock.nanoTime();
        this.sendTimeoutNs = sendTimeoutNs;
        this.sendBufferBytes = sendBufferBytes;
        this.pollNs = pollNs;
        this.lastWorkNs = nowNs - pollNs;                  // no work yet: nothing to poll for
        this.tlsTasks = tlsTasks;
        this.regionsCutShort = new RateLimitedLog(LOG, clock, REGION_CUT_SHORT_LINES_PER_SECOND, "connection(s) ended by a file region cut short");
        this.thread = Thread.ofPlatform().daemon().name(name).unstarted(this::run);
    }

    void start() {
        thread.start();
        execute(this::sweep);
    }

    /** Connections of this loop now. Loop thread. */
    int connectionCount() {
        return connections.size();
    }

    void add(Connection c) {
        c.loopIndex = connections.size();
        connections.add(c);
    }

    void remove(Connection c) {
        int i = c.loopIndex;
        if (i < 0) return;
        Connection last = connections.removeLast();
        if (last != c) {
            connections.set(i, last);
            last.loopIndex = i;
        }
        c.loopIndex = -1;
    }

    /**
     * Every {@link #SWEEP_NS}: disconnects peers that have taken none of their replies for the
     * send timeout (they would pin their buffers for ever), and lets idle connections drop their
     * kept-input buffers.
     */
    private void sweep() {
        // Rescheduled first: a sweep that threw half way must not switch send timeouts off for good.
        if (running) schedule(SWEEP_NS, this::sweep);
        sweep(nowNs);
    }

    /** One sweep at {@code nowNs}: closes the connections stalled past the send timeout, trims the others. Loop thread. */
    void sweep(long nowNs) {
        for (int i = connections.size() - 1; i >= 0; i--) {
            if (i >= connections.size()) continue;
            Connection c = connections.get(i);
            long stalled = c.stalledNs(nowNs);
            try {
                if (stalled > sendTimeoutNs) {
                    c.close(new java.io.IOException("the peer took no reply bytes for " + stalled / 1_000_000 + " ms (send timeout "
                                                    + sendTimeoutNs / 1_000_000 + " ms)"));
                } else {
                    c.trim();
                }
            } catch (Throwable t) {
                survive(t);                             // a handler's closed() threw; the connection is closed all the same
            }
        }
    }

    /** The time this pass of the loop began (after its select), on the transport's clock. Loop thread only. */
    public long nowNs() {
        return nowNs;
    }

    /** The transport's clock, for a deadline computed on another thread. Any thread. */
    public Clock clock() {
        return clock;
    }

    /** True on this loop's own thread. */
    public boolean inLoop() {
        return Thread.currentThread() == thread;
    }

    /** Runs {@code task} on the loop thread, soon; any thread, never blocks. */
    public void execute(Runnable task) {
        tasks.add(task);
        if (!inLoop() && !wakeupPending.get() && wakeupPending.compareAndSet(false, true)) selector.wakeup();
    }

    /**
     * Runs {@code task} on the loop thread once {@code delayNs} have passed since this pass
     * began ({@link #nowNs()}), unless cancelled: the first pass that reads that time or later runs it.
     * Loop thread only.
     */
    public Timeout schedule(long delayNs, Runnable task) {
        assert inLoop();
        Timeout t = new Timeout(nowNs + delayNs, timeoutSequence++, task);
        timeouts.add(t);
        return t;
    }

    /** Failures that were not a peer's doing (handler bugs, running out of memory); 0 in a healthy server. Any thread. */
    long unexpectedFailures() {
        return unexpected.sum();
    }

    Selector selector() {
        return selector;
    }

    Executor tlsTasks() {
        return tlsTasks;
    }

    /** Loop thread only. */
    ByteBuffer tlsPlainBuffer() {
        if (tlsPlain == null) tlsPlain = ByteBuffer.allocateDirect(READ_BUFFER_BYTES + TLS_RECORD_ROOM);
        return tlsPlain;
    }

    /** Loop thread only. */
    ByteBuffer tlsFileChunk() {
        if (tlsFileChunk == null) tlsFileChunk = ByteBuffer.allocateDirect(TLS_FILE_CHUNK_BYTES);
        return tlsFileChunk;
    }

    /** Stops the loop: its connections are closed and its thread ends. Any thread but the loop's. */
    void stop() {
        execute(() -> {
            for (Connection c : List.copyOf(connections)) c.close(null);
            running = false;
        });
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void run() {
        while (running) {
            try {
                select();
                runTasks();
                runTimeouts();
            } catch (ClosedSelectorException e) {
                return;
            } catch (Throwable t) {
                survive(t);
            }
        }
        try {
            selector.close();
        } catch (IOException e) {
            // nothing left to tell
        }
    }

    private void select() throws IOException {
        int ready = pollNs > 0 ? poll() : 0;
        if (ready == 0) ready = waitForReady();
        nowNs = clock.nanoTime();
        if (pollNs > 0 && (ready > 0 || !tasks.isEmpty())) lastWorkNs = nowNs;
        if (ready == 0) return;
        var keys = selector.selectedKeys();
        for (var it = keys.iterator(); it.hasNext(); ) {
            SelectionKey key = it.next();
            it.remove();
            Object attachment = key.attachment();
            try {
                if (attachment instanceof Connection c) c.ready(key);
                else if (attachment instanceof Listener l) l.acceptReady();
            } catch (Throwable t) {
                if (attachment instanceof Connection c) c.fail(t);
                else survive(t);
            }
        }
    }

    /**
     * Busy-polls the selector until something is ready, a task is queued, the next timeout is
     * due, or {@link #pollNs} have passed since the loop's last work (at once if they have). A
     * request that arrives while the loop polls is read without the wake-up of a sleeping
     * thread, the main cost of a queue-depth-1 round trip; an idle loop polls not at all.
     */
    private int poll() throws IOException {
        long end = lastWorkNs + pollNs;
        Timeout next = timeouts.peek();
        if (next != null && next.deadlineNs - end < 0) end = next.deadlineNs;
        while (tasks.isEmpty() && clock.nanoTime() - end < 0) {
            int ready = selector.selectNow();
            if (ready > 0) return ready;
            Thread.yield();            // the server's other threads (the ring's completions) often share this core
        }
        return 0;
    }

    /** Selects until something is ready, a task is queued or the next timeout is due. */
    private int waitForReady() throws IOException {
        Timeout next = timeouts.peek();
        long leftNs = next == null ? Long.MAX_VALUE : next.deadlineNs - clock.nanoTime();
        if (!tasks.isEmpty() || leftNs <= 0) return selector.selectNow();
        if (next == null) return selector.select();
        return selector.select(Math.max(1, (leftNs + 999_999) / 1_000_000));
    }

    /** The queued tasks, after lowering the wake-up flag. Loop thread (and the stress test, acting as the loop). */
    void runTasks() {
        wakeupPending.set(false);
        for (Runnable task; (task = tasks.poll()) != null; ) {
            try {
                task.run();
            } catch (Throwable t) {
                survive(t);
            }
        }
    }

    private void runTimeouts() {
        for (Timeout t; (t = timeouts.peek()) != null && t.deadlineNs - nowNs <= 0; ) {
            timeouts.poll();
            if (t.cancelled) continue;
            try {
                t.task.run();
            } catch (Throwable e) {
                survive(e);
            }
        }
    }

    /** A connection of this loop ends because the file under its queued region shrank ({@link FileRegionCutShortException}). Loop thread. */
    void regionCutShort(String message) {
        regionsCutShort.log(thread.getName() + ": " + message, null);
    }

    /** Something failed outside any one connection: log (rate-limited) and go on. */
    void survive(Throwable t) {
        unexpected.increment();
        if (nowNs - lastErrorLogNs >= ERROR_BACKOFF_NS) {
            lastErrorLogNs = nowNs;
            // Escaped: a failure on a connection's behalf may quote what its client sent.
            LOG.log(System.Logger.Level.ERROR, thread.getName() + ": unexpected failure, the loop goes on", LogText.escape(t));
        }
        if (t instanceof Error) {
            // Out of memory or threads: give the rest of the process a moment to release some.
            try {
                Thread.sleep(ERROR_BACKOFF_NS / 1_000_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** A pending {@link #schedule}d task. */
    public static final class Timeout implements Comparable<Timeout> {
        final long deadlineNs;
        private final long sequence;
        /** Dropped on cancel: a cancelled timeout waits in the queue until its deadline, and must not keep its connection alive that long. */
        Runnable task;
        boolean cancelled;

        Timeout(long deadlineNs, long sequence, Runnable task) {
            this.deadlineNs = deadlineNs;
            this.sequence = sequence;
            this.task = task;
        }

        /** The task will not run (if it has not already). Loop thread only. */
        public void cancel() {
            cancelled = true;
            task = null;
        }

        @Override
        public int compareTo(Timeout o) {
            int c = Long.compare(deadlineNs, o.deadlineNs);
            return c != 0 ? c : Long.compare(sequence, o.sequence);
        }
    }
}
