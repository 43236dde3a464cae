package io.iotarget.engine;

import io.iotarget.iocontrol.IoController;
import io.iotarget.model.Clock;
import io.iotarget.model.CountedErrorHandler;
import io.iotarget.model.IoRequest;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * The releaser's wake-up (its Dekker pair), as the engine uses it when iocost holds a
 * completion back: the completing thread adds the completion to the held ones, due at
 * {@link #DUE_NS}, then calls {@link Releaser#releaseBy}; meanwhile the releaser, having just
 * run ({@code scheduledNs} is still Long.MIN_VALUE), publishes its next wake time and re-reads
 * what is pending ({@link Releaser#publishNextWake}). The clock stands at 0 and nothing else
 * waits.
 *
 * <p>Result: how long the releaser then parks (0: it runs again at once; Long.MAX_VALUE: until
 * unparked), and {@code scheduledNs} afterwards. A completion that unparks the releaser first
 * writes its due time there, so {@code scheduledNs == DUE_NS} after a park for ever means it
 * was woken.
 */
@JCStressTest
@Outcome(id = "1000, 1000", expect = ACCEPTABLE, desc = "the releaser saw the completion at once and parks until it is due")
@Outcome(id = "0, 9223372036854775807", expect = ACCEPTABLE, desc = "the releaser's re-read saw the completion: it runs again at once (the completion had read Long.MIN_VALUE, running, and left it alone)")
@Outcome(id = "0, 1000", expect = ACCEPTABLE, desc = "the re-read saw it, and the completion found the releaser about to park for ever and unparked it too")
@Outcome(id = "9223372036854775807, 1000", expect = ACCEPTABLE, desc = "the releaser missed the completion and parks for ever, but the completion saw that and unparked it")
@Outcome(id = "9223372036854775807, 9223372036854775807", expect = FORBIDDEN, desc = "lost wake-up: parked for ever with a completion due and nobody to unpark it")
@Outcome(expect = FORBIDDEN, desc = "anything else: a wake time the releaser never published, or a park past the due time")
@State
public class ReleaserWakeupStress {
    private static final long DUE_NS = 1000;
    private static final Clock AT_ZERO = () -> 0L;
    /** Nothing waits in the controller: the held completion is all there is. Only read. */
    private static final IoController EMPTY = new IoController(AT_ZERO, Engine.STANDARD_POLICIES);
    private static final CountedErrorHandler ERRORS = new CountedErrorHandler("ReleaserWakeupStress");

    private final HeldCompletions held = new HeldCompletions(ERRORS, io -> io.callback().complete(io));
    private final Releaser releaser = new Releaser(EMPTY, held, AT_ZERO, io -> { }, ERRORS);
    private final IoRequest io = new IoRequest();

    @Actor
    public void completion() {
        held.add(io, DUE_NS);
        releaser.releaseBy(DUE_NS);
    }

    @Actor
    public void releaser(JJ_Result r) {
        r.r1 = releaser.publishNextWake();
    }

    @Arbiter
    public void after(JJ_Result r) {
        r.r2 = releaser.scheduledNs();
    }
}
