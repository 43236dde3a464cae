package io.iotarget.iocontrol.stat;

import io.iotarget.model.IoOp;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJJ_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * Two IO threads whose ids hash to the same stripe add to it at once, the stripe not yet
 * queued: the adds are atomic, and the {@code queued} flag's compare-and-set lets exactly one of
 * them push the stripe (a second push would link the stripe to itself, and the flush would
 * never end: jcstress reports that as a timeout). A reader flushes afterwards, twice.
 *
 * <p>Result: rios and rbytes after the first flush, and rios after the second.
 */
@JCStressTest
@Outcome(id = "2, 4608, 2", expect = ACCEPTABLE, desc = "both adds counted once; the one push folded both")
@Outcome(id = "1, .*", expect = FORBIDDEN, desc = "an add lost, or not queued: the flush did not see it")
@Outcome(expect = FORBIDDEN, desc = "an add counted twice, or an add lost by a non-atomic increment")
@State
public class StatStripeWritersStress {
    private final StatFlusher flusher = new StatFlusher();
    private final DeviceStats group = new DeviceStats(null, flusher);
    private final StatStripe stripe = new StatStripe(group, flusher);

    @Actor
    public void io1() {
        stripe.add(IoOp.StatBucket.READ, 512);
    }

    @Actor
    public void io2() {
        stripe.add(IoOp.StatBucket.READ, 4096);
    }

    @Arbiter
    public void reader(JJJ_Result r) {
        flusher.lock().lock();
        try {
            flusher.flush();
            r.r1 = group.total(StatField.RIOS);
            r.r2 = group.total(StatField.RBYTES);
            flusher.flush();
            r.r3 = group.total(StatField.RIOS);
        } finally {
            flusher.lock().unlock();
        }
    }
}
