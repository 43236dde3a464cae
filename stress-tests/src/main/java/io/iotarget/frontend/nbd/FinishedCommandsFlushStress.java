package io.iotarget.frontend.nbd;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.LLL_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * The NBD replies' wake-up, as {@code NbdConnection.complete} and its flush task use it: a
 * finished command is pushed and a flush task scheduled only by the thread that raises the
 * flag; the task lowers the flag, then drains.
 *
 * <p>Command 1 finished and scheduled the task (the flag is up). Now command 2 finishes on an
 * engine thread while that task runs. The task may miss command 2, but then 2's thread must have
 * found the flag down and scheduled a second task (run by the arbiter), which drains it.
 *
 * <p>Result: what the running task drained, whether 2's thread scheduled a task, and what that
 * task drained ("no task" when none).
 */
@JCStressTest
@Outcome(id = "1 2, false, no task", expect = ACCEPTABLE, desc = "the flag was still up: the running task drained command 2")
@Outcome(id = "1 2, true, -", expect = ACCEPTABLE, desc = "the flag was down but the task still drained 2: a spare, empty task")
@Outcome(id = "1, true, 2", expect = ACCEPTABLE, desc = "the task drained before 2 was pushed, and 2's thread scheduled the next one")
@Outcome(id = "1, false, no task", expect = FORBIDDEN, desc = "lost wake-up: command 2's reply waits for some other completion (or for ever)")
@Outcome(expect = FORBIDDEN, desc = "a command lost or drained twice")
@State
public class FinishedCommandsFlushStress {
    private final FinishedCommands finished = new FinishedCommands();
    private final Command two = FinishedCommandsStress.command(2);

    public FinishedCommandsFlushStress() {
        finished.push(FinishedCommandsStress.command(1));
        if (!finished.armFlush()) throw new AssertionError("a fresh flag is down");
    }

    @Actor
    public void completion(LLL_Result r) {
        finished.push(two);
        r.r2 = finished.armFlush();
    }

    @Actor
    public void flushTask(LLL_Result r) {
        finished.flushStarting();
        r.r1 = FinishedCommandsStress.drain(finished);
    }

    @Arbiter
    public void nextTask(LLL_Result r) {
        if ((Boolean) r.r2) {
            finished.flushStarting();
            r.r3 = FinishedCommandsStress.drain(finished);
        } else {
            r.r3 = "no task";
        }
    }
}
