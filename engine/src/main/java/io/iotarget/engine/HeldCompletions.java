package io.iotarget.engine;

import io.iotarget.model.CountedErrorHandler;
import io.iotarget.model.IoRequest;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;
import java.util.function.Consumer;

/**
 * Completed requests whose callback a policy holds back: iocost delays the issuer of IO that
 * went out as debt, as the kernel makes the issuing task sleep on its way back to user space.
 * The request is done on the backend; only the news of it waits. Any thread; the
 * {@link Releaser} (or a manual-clock driver) delivers what is due.
 */
final class HeldCompletions {
    private record Held(long deliverAtNs, long seq, IoRequest io) {
    }

    private final PriorityQueue<Held> queue = new PriorityQueue<>(
            Comparator.comparingLong(Held::deliverAtNs).thenComparingLong(Held::seq));
    private long nextSeq;
    private final CountedErrorHandler errors;
    /** Reports one completion to its creator. */
    private final Consumer<IoRequest> report;

    HeldCompletions(CountedErrorHandler errors, Consumer<IoRequest> report) {
        this.errors = errors;
        this.report = report;
    }

    synchronized void add(IoRequest io, long deliverAtNs) {
        queue.add(new Held(deliverAtNs, nextSeq++, io));
    }

    /** When the next held completion is due; {@link Long#MAX_VALUE} when none is held. */
    synchronized long nextNs() {
        Held first = queue.peek();
        return first == null ? Long.MAX_VALUE : first.deliverAtNs();
    }

    /**
     * Runs the callbacks of the completions due by {@code nowNs} (all of them with Long.MAX_VALUE),
     * outside the lock; one that throws is reported and the others still run.
     */
    void deliverDue(long nowNs) {
        List<IoRequest> due = new ArrayList<>();
        synchronized (this) {
            while (!queue.isEmpty() && queue.peek().deliverAtNs() <= nowNs) due.add(queue.poll().io());
        }
        for (IoRequest io : due) {
            try {
                report.accept(io);
            } catch (Throwable t) {
                errors.onError(t);
            }
        }
    }
}
