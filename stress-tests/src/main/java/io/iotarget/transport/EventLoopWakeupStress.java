package io.iotarget.transport;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.L_Result;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * {@link EventLoop#execute}'s wake-up flag, with a real selector. Another thread has queued a
 * task and woken the loop (the flag is up); the loop's select has returned on that wake-up
 * ({@code selectNow} here, which consumes it as the real select did) and it now runs its tasks
 * — lowering the flag first — while a second thread executes another task. That task either
 * runs in this drain, or its thread found the flag down and woke the selector, so the loop's
 * next select returns at once. The arbiter looks: a select that waits its full second means
 * nobody will run the task until some unrelated event.
 *
 * <p>Result: how the second task got run.
 */
@JCStressTest
@Outcome(id = "drained", expect = ACCEPTABLE, desc = "the running drain ran it")
@Outcome(id = "woken", expect = ACCEPTABLE, desc = "queued after the drain; its thread woke the selector, the next pass runs it")
@Outcome(id = "stranded", expect = FORBIDDEN, desc = "lost wake-up: the task waits in the queue while the loop blocks in select")
@Outcome(expect = FORBIDDEN, desc = "the task ran twice, or not even after the wake-up")
@State
public class EventLoopWakeupStress {
    private static final long WAIT_MS = 1000;

    private final EventLoop loop;
    private int runs;

    public EventLoopWakeupStress() {
        try {
            loop = new EventLoop("stress", io.iotarget.model.Clock.SYSTEM, TimeUnit.SECONDS.toNanos(30), Transport.Settings.DEFAULT_SEND_BUFFER, 0, Runnable::run);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        loop.execute(() -> { });
    }

    @Actor
    public void producer() {
        loop.execute(() -> runs++);
    }

    @Actor
    public void loopPass() {
        try {
            loop.selector().selectNow();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        loop.runTasks();
    }

    @Arbiter
    public void nextPass(L_Result r) {
        try {
            if (runs == 1) {
                r.r1 = "drained";
                return;
            }
            long startNs = System.nanoTime();
            loop.selector().select(WAIT_MS);
            boolean woken = System.nanoTime() - startNs < TimeUnit.MILLISECONDS.toNanos(WAIT_MS / 2);
            loop.runTasks();
            r.r1 = !woken ? "stranded" : runs == 1 ? "woken" : "runs=" + runs;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            try {
                loop.selector().close();
            } catch (IOException e) {
                r.r1 = "close failed: " + e;
            }
        }
    }
}
