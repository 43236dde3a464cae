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
 * An IO thread records a latency into a (group, device) pair that already holds one while a
 * reader folds, and a reader folds again afterwards: the copy-and-subtract of the recording
 * histogram must lose no sample and fold none twice, however the first fold lands between the
 * writer's increments (bucket, total, sum), in the group and in its parent. (Two actors: the
 * machines have two cores, and jcstress runs no more actors than that.)
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

    public LatencyStatsFoldStress() {
        child.record(10_000);
    }

    @Actor
    public void io() {
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
