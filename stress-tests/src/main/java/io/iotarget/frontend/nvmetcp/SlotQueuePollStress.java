package io.iotarget.frontend.nvmetcp;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.LL_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * The loop polls a {@link SlotQueue} while a completion thread pushes into it. Slot 1 is queued
 * alone, so the loop's polls pass through the queue's hard cases: taking the last slot (the
 * stub is pushed back behind it) while a producer exchanges the head, and a producer half way
 * through a push (head exchanged, link not yet written), where {@code poll} answers null and
 * must not lose or reorder anything.
 *
 * <p>Result: what the loop's two polls returned ("-" for null), then what a later drain polls.
 */
@JCStressTest
@Outcome(id = "1 2, 3", expect = ACCEPTABLE, desc = "the polls saw the first push complete")
@Outcome(id = "1 -, 2 3", expect = ACCEPTABLE, desc = "the second poll found the queue empty, or 2 half linked")
@Outcome(id = "- -, 1 2 3", expect = ACCEPTABLE, desc = "both polls met a push half way (slot 2's head exchange done, its link not yet written)")
@Outcome(id = "- 1, 2 3", expect = ACCEPTABLE, desc = "the first poll met 2 half linked, the second found it linked")
@Outcome(expect = FORBIDDEN, desc = "a slot lost, polled twice, or out of order")
@State
public class SlotQueuePollStress {
    private final SlotQueue queue = new SlotQueue();
    private final CommandSlot two = new CommandSlot(2, null);
    private final CommandSlot three = new CommandSlot(3, null);

    public SlotQueuePollStress() {
        queue.push(new CommandSlot(1, null));
    }

    @Actor
    public void completion() {
        queue.push(two);
        queue.push(three);
    }

    @Actor
    public void loop(LL_Result r) {
        CommandSlot first = queue.poll();
        CommandSlot second = queue.poll();
        r.r1 = (first == null ? "-" : first.tag) + " " + (second == null ? "-" : second.tag);
    }

    @Arbiter
    public void later(LL_Result r) {
        r.r2 = SlotQueueStress.pollAll(queue);
    }
}
