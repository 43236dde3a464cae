package io.iotarget.frontend.nvmetcp;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.LLL_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * The responses' wake-up, as {@code Connection.respond} and its flush task use it: a completion
 * pushes its slot and schedules a flush task only if it raises the flag; the task lowers the
 * flag, then polls everything.
 *
 * <p>Slot 1's completion has pushed and scheduled the task (the flag is up). Now slot 2's
 * completion pushes and arms while that task runs. The task may miss slot 2 — it polled before
 * the push, or met it half linked — but then slot 2's producer must have found the flag down
 * and scheduled a second task, which polls it. Run by the arbiter when scheduled.
 *
 * <p>Result: what the first task polled, whether slot 2's completion scheduled a task, and what
 * that second task polled ("no task" when none).
 */
@JCStressTest
@Outcome(id = "1 2, false, no task", expect = ACCEPTABLE, desc = "the flag was still up: the running task polled slot 2")
@Outcome(id = "1 2, true, -", expect = ACCEPTABLE, desc = "the flag was down but the task still polled 2: a spare, empty task")
@Outcome(id = "1, true, 2", expect = ACCEPTABLE, desc = "the task missed slot 2 and 2's completion scheduled the next one")
@Outcome(id = "-, true, 1 2", expect = ACCEPTABLE, desc = "the task met slot 2 half linked, which holds back slot 1 too (its link is not yet written); the next task polled both")
@Outcome(id = "1, false, no task|-, false, no task", expect = FORBIDDEN, desc = "lost wake-up: slot 2's response stays queued until some other completion")
@Outcome(expect = FORBIDDEN, desc = "a slot lost or polled twice")
@State
public class SlotQueueFlushStress {
    private final SlotQueue queue = new SlotQueue();
    private final CommandSlot two = new CommandSlot(2, null);

    public SlotQueueFlushStress() {
        queue.push(new CommandSlot(1, null));
        if (!queue.armFlush()) throw new AssertionError("a fresh queue's flag is down");
    }

    @Actor
    public void completion(LLL_Result r) {
        queue.push(two);
        r.r2 = queue.armFlush();
    }

    @Actor
    public void flushTask(LLL_Result r) {
        queue.flushStarting();
        r.r1 = SlotQueueStress.pollAll(queue);
    }

    @Arbiter
    public void nextTask(LLL_Result r) {
        if ((Boolean) r.r2) {
            queue.flushStarting();
            r.r3 = SlotQueueStress.pollAll(queue);
        } else {
            r.r3 = "no task";
        }
    }
}
