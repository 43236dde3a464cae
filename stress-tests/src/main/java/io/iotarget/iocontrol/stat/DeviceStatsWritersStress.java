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
 * Two IO threads count into one (group, device) pair at once — one stripe or two, as their
 * thread ids hash — and a reader flushes afterwards: the stripes' atomic adds and the updated
 * list's concurrent pushes must lose nothing and fold nothing twice, in the group and in its
 * parent.
 *
 * <p>Result: the child's rios and rbytes, and the parent's rios.
 */
@JCStressTest
@Outcome(id = "2, 4608, 2", expect = ACCEPTABLE, desc = "both requests counted once, in the group and its parent")
@Outcome(expect = FORBIDDEN, desc = "a request lost (a push or an add overwritten) or counted twice")
@State
public class DeviceStatsWritersStress {
    private final StatFlusher flusher = new StatFlusher();
    private final DeviceStats parent = new DeviceStats(null, flusher);
    private final DeviceStats child = new DeviceStats(parent, flusher);

    @Actor
    public void io1() {
        child.add(IoOp.StatBucket.READ, 512);
    }

    @Actor
    public void io2() {
        child.add(IoOp.StatBucket.READ, 4096);
    }

    @Arbiter
    public void reader(JJJ_Result r) {
        flusher.lock().lock();
        try {
            flusher.flush();
            r.r1 = child.total(StatField.RIOS);
            r.r2 = child.total(StatField.RBYTES);
            r.r3 = parent.total(StatField.RIOS);
        } finally {
            flusher.lock().unlock();
        }
    }
}
