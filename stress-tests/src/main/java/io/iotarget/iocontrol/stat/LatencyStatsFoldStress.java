package io.iotarget.iocontrol.stat;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJJ_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * Two IO threads record latencies into one (group, device) pair while a reader folds, and a
 * reader folds again afterwards: the copy-and-subtract of the recording histogram must lose no
 * sample and fold none twice, however the first fold lands between the writers' increments, in
 * the group and in its parent.
 *
 * <p>Result: the child's count, the parent's count, the child's sum of ns.
 */
@JCStressTest
@Outcome(id = "2, 2, 1010000", expect = ACCEPTABLE, desc = "both samples folded once, in the group and its parent")
@Outcome(expect = FORBIDDEN, desc = "a sample lost or folded twice")
@State
public class LatencyStatsFoldStress {
    private final StatFlusher flusher = new StatFlusher();
    private final LatencyStats parent = new LatencyStats(null);
    private final LatencyStats child = new LatencyStats(parent);

    @Actor
    public void io1() {
        child.record(10_000);
    }

    @Actor
    public void io2() {
        child.record(1_000_000);
    }

    @Actor
    public void readerDuring() {
        fold();
    }

    @Arbiter
    public void readerAfter(JJJ_Result r) {
        fold();
        r.r1 = child.count();
        r.r2 = parent.count();
        r.r3 = child.sumNs();
    }

    private void fold() {
        flusher.lock().lock();
        try {
            child.fold();
        } finally {
            flusher.lock().unlock();
        }
    }
}
