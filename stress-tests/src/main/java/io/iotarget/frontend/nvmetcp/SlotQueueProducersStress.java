package io.iotarget.frontend.nvmetcp;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.L_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * Two completion threads push their slots onto an empty {@link SlotQueue} at once; the loop
 * then polls until the queue is empty. The producers' exchange of the head orders them, so
 * either order is right, but each slot comes out exactly once.
 *
 * <p>Result: the tags in the order polled.
 */
@JCStressTest
@Outcome(id = "1 2", expect = ACCEPTABLE, desc = "1's exchange came first")
@Outcome(id = "2 1", expect = ACCEPTABLE, desc = "2's exchange came first")
@Outcome(expect = FORBIDDEN, desc = "a slot lost (a link overwritten) or polled twice")
@State
public class SlotQueueProducersStress {
    private final SlotQueue queue = new SlotQueue();
    private final CommandSlot one = new CommandSlot(1, null);
    private final CommandSlot two = new CommandSlot(2, null);

    @Actor
    public void completion1() {
        queue.push(one);
    }

    @Actor
    public void completion2() {
        queue.push(two);
    }

    @Arbiter
    public void loop(L_Result r) {
        r.r1 = SlotQueueStress.pollAll(queue);
    }
}
