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
 * The updated list's two ends meeting: a reader's flush takes the whole list (group A's stripe,
 * queued with one read) while an IO thread's first add to group B's stripe pushes it. The push
 * lands either on the list the flush took or on the fresh, empty one, never in between.
 *
 * <p>Result: A and B as the reader's flush left them, then A and B after one more flush.
 */
@JCStressTest
@Outcome(id = "1, 1, 1, 1", expect = ACCEPTABLE, desc = "B was pushed before the flush took the list, and folded with A")
@Outcome(id = "1, 0, 1, 1", expect = ACCEPTABLE, desc = "B was pushed onto the fresh list after the take; the next flush folded it")
@Outcome(id = "., 0, ., 0", expect = FORBIDDEN, desc = "B's push was lost between the take and the fresh list: its read is never counted")
@Outcome(expect = FORBIDDEN, desc = "A or B folded twice, or A lost")
@State
public class StatFlusherPushStress {
    private final StatFlusher flusher = new StatFlusher();
    private final DeviceStats a = new DeviceStats(null, flusher);
    private final DeviceStats b = new DeviceStats(null, flusher);
    private final StatStripe stripeB = new StatStripe(b, flusher);

    public StatFlusherPushStress() {
        new StatStripe(a, flusher).add(IoOp.StatBucket.READ, 512);
    }

    @Actor
    public void io() {
        stripeB.add(IoOp.StatBucket.READ, 512);
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
