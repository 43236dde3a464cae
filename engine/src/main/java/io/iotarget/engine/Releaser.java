package io.iotarget.engine;

import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.chain.ReleaseSignal;
import io.iotarget.model.Clock;
import io.iotarget.model.CountedErrorHandler;
import io.iotarget.model.IoRequest;

import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * The one thread that waits for time on behalf of every parked request: it sleeps until the
 * controller's next release time (or the next held completion's), calls
 * {@link IoController#releaseDue}, hands what comes out to dispatch, and reports the held
 * completions that are due. Ten thousand throttled requests cost this one thread, nothing more.
 *
 * <p>It must never die: whatever a release throws (a completion callback that fails, memory that
 * runs out) goes to the engine's {@link CountedErrorHandler}, one request at a time, and the
 * loop goes on, so one failure never strands the other parked requests.
 */
final class Releaser implements ReleaseSignal {
    /*
     * Maintainers' notes. Missed wake-ups are excluded by a Dekker pair: the releaser publishes
     * scheduledNs and then re-reads the controller's next release time before parking; a
     * submitter publishes its wake time in the controller and then reads scheduledNs. One of
     * the two always sees the other's write (the controller's wake times are volatile, the held
     * completions' are read under their monitor). stress-tests' ReleaserWakeupStress holds it
     * to this.
     */
    private final IoController controller;
    private final HeldCompletions held;
    private final Clock clock;
    private final Consumer<IoRequest> dispatch;
    private final Thread thread;
    private volatile long scheduledNs = Long.MIN_VALUE;
    private volatile boolean running = true;
    private final CountedErrorHandler errors;

    Releaser(IoController controller, HeldCompletions held, Clock clock, Consumer<IoRequest> dispatch, CountedErrorHandler errors) {
        this.controller = controller;
        this.held = held;
        this.clock = clock;
        this.errors = errors;
        this.dispatch = io -> {
            try {
                dispatch.accept(io);
            } catch (Throwable t) {
                errors.onError(t);
            }
        };
        this.thread = Thread.ofPlatform().daemon().name("iotarget-releaser").unstarted(this::loop);
    }

    void start() {
        thread.start();
    }

    @Override
    public void releaseBy(long whenNs) {
        if (whenNs < scheduledNs) {
            scheduledNs = whenNs;
            LockSupport.unpark(thread);
        }
    }

    private void loop() {
        while (running) {
            try {
                releaseAndWait();
            } catch (Throwable t) {
                errors.onError(t);
            }
        }
    }

    private void releaseAndWait() {
        scheduledNs = Long.MIN_VALUE;
        long now = clock.nanoTime();
        controller.releaseDue(now, dispatch);
        held.deliverDue(now);
        long parkNs = publishNextWake();
        if (parkNs == Long.MAX_VALUE) {
            LockSupport.park(this);
        } else if (parkNs > 0) {
            LockSupport.parkNanos(this, parkNs);
        }
    }

    /**
     * The releaser's half of the Dekker pair: publishes when it will wake next, then reads the
     * controller again. Returns how long it may park — {@code Long.MAX_VALUE} until unparked —
     * or 0 when something is due or arrived meanwhile and it must run again at once. Releaser
     * thread (the stress test calls it as the releaser would).
     */
    long publishNextWake() {
        long next = nextNs();
        scheduledNs = next;
        long recheck = nextNs();
        if (recheck < next) return 0;
        if (next == Long.MAX_VALUE) return Long.MAX_VALUE;
        // Compared before subtracting: Long.MIN_VALUE (a ready request, due now) minus the
        // clock wraps round to a park of centuries.
        long now = clock.nanoTime();
        return next <= now ? 0 : next - now;
    }

    /** The wake time last published, by the releaser or by a submitter that unparked it; Long.MIN_VALUE while it runs. */
    long scheduledNs() {
        return scheduledNs;
    }

    private long nextNs() {
        return Math.min(controller.nextReleaseNs(), held.nextNs());
    }

    void stop() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
