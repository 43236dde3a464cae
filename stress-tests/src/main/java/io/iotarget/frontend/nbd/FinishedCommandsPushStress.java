package io.iotarget.frontend.nbd;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.L_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * Two engine threads finish NBD commands of one connection at once and push them onto its
 * {@link FinishedCommands} stack; the loop then drains it. The CAS orders the pushes, so either
 * order is right, but each command comes out exactly once and the list ends.
 *
 * <p>Result: the commands drained, oldest first.
 */
@JCStressTest
@Outcome(id = "1 2", expect = ACCEPTABLE, desc = "1 pushed first")
@Outcome(id = "2 1", expect = ACCEPTABLE, desc = "2 pushed first")
@Outcome(expect = FORBIDDEN, desc = "a command lost (its push overwritten), drained twice, or a cycle")
@State
public class FinishedCommandsPushStress {
    private final FinishedCommands finished = new FinishedCommands();
    private final Command one = FinishedCommandsStress.command(1);
    private final Command two = FinishedCommandsStress.command(2);

    @Actor
    public void completion1() {
        finished.push(one);
    }

    @Actor
    public void completion2() {
        finished.push(two);
    }

    @Arbiter
    public void loop(L_Result r) {
        r.r1 = FinishedCommandsStress.drain(finished);
    }
}
