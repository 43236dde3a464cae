package io.iotarget.iocontrol.stat;

import io.iotarget.model.IoOp;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJJJ_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * io.stat's publish/flush pair: an add to a stripe that is already on the updated list, racing
 * a reader's flush.
 *
 * <p>Two stripes (of groups A and B) each hold one read and are queued, A on top. The IO path
 * adds a second read to A while a reader flushes. This is the Dekker pair of
 * {@link StatStripe}: the writer adds, then reads {@code queued}; {@code foldInto} clears
 * {@code queued}, then reads the counters — so either the flush sees the add, or the add sees
 * the stripe unqueued and pushes it again. It is also {@link StatFlusher#flush}'s rule of reading
 * a stripe's link before folding it: once folded, A can be pushed again, which rewrites its link.
 *
 * <p>Result: A and B as the reader's flush left them, then A and B after one more flush.
 */
@JCStressTest
@Outcome(id = "2, 1, 2, 1", expect = ACCEPTABLE, desc = "the flush saw the add")
@Outcome(id = "1, 1, 2, 1", expect = ACCEPTABLE, desc = "the add came after the flush unqueued A; it queued A again, and the next flush folded it")
@Outcome(id = "1, 1, 1, 1", expect = FORBIDDEN, desc = "lost add: it saw A still queued, but the flush had already read A's counters")
@Outcome(id = "., 0, ., .", expect = FORBIDDEN, desc = "B dropped from the updated list: the flush followed A's link after A was pushed again")
@Outcome(expect = FORBIDDEN, desc = "an add folded twice, or lost")
@State
public class StatStripeRequeueStress {
    private final StatFlusher flusher = new StatFlusher();
    private final DeviceStats a = new DeviceStats(null, flusher);
    private final DeviceStats b = new DeviceStats(null, flusher);
    private final StatStripe stripeA = new StatStripe(a, flusher);

    public StatStripeRequeueStress() {
        new StatStripe(b, flusher).add(IoOp.StatBucket.READ, 512);
        stripeA.add(IoOp.StatBucket.READ, 512);
    }

    @Actor
    public void io() {
        stripeA.add(IoOp.StatBucket.READ, 512);
    }

    @Actor
    public void reader(JJJJ_Result r) {
        flusher.lock().lock();
        try {
            flusher.flush();
            r.r1 = a.total(StatField.RIOS);
            r.r2 = b.total(StatField.RIOS);
        } finally {
            flusher.lock().unlock();
        }
    }

    @Arbiter
    public void after(JJJJ_Result r) {
        flusher.lock().lock();
        try {
            flusher.flush();
            r.r3 = a.total(StatField.RIOS);
            r.r4 = b.total(StatField.RIOS);
        } finally {
            flusher.lock().unlock();
        }
    }
}
