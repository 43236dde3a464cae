package io.iotarget.transport;

import java.util.function.BooleanSupplier;

/**
 * Pauses one connection's input for an issuer delay (io.latency, iocost): the engine asks that
 * the tenant issue nothing more for a while, and the front end answers by reading no further
 * request from that connection until the delay's end. The reply of the request that owed the
 * delay still goes out at once; the peer meets TCP backpressure instead.
 *
 * <pre>
 *   engine: delay(d) ─execute─► loop: pause input, timer at until ─► until passed: resume()
 *                                      a later delay meanwhile extends until (never shortens it)
 * </pre>
 * The end is measured on the transport's clock: {@code until} is read on the calling thread,
 * the timer's check on the loop's pass time, so a manual clock drives both.
 *
 * <p>{@link #delay} any thread; the rest loop thread only.
 */
public final class IssuerDelay {
    private final Connection connection;
    private final BooleanSupplier ending;
    private final Runnable resume;
    private boolean active;
    private long untilNs;

    /**
     * @param ending true once the owner takes no more requests: no delay begins, and one under way
     *               ends without resuming input
     * @param resume runs when a delay ends (loop thread); resumes input unless something else
     *               still holds it paused
     */
    public IssuerDelay(Connection connection, BooleanSupplier ending, Runnable resume) {
        this.connection = connection;
        this.ending = ending;
        this.resume = resume;
    }

    /** Reads nothing more for {@code delayNs} from now (a later end extends a delay under way). Any thread. */
    public void delay(long delayNs) {
        long until = connection.loop().clock().nanoTime() + delayNs;
        connection.loop().execute(() -> begin(until));
    }

    /** True while the delay holds input paused. */
    public boolean active() {
        return active;
    }

    private void begin(long until) {
        if (connection.isClosed() || ending.getAsBoolean()) return;
        if (active) {
            if (until - untilNs > 0) untilNs = until;
            return;
        }
        active = true;
        untilNs = until;
        connection.pauseInput();
        connection.loop().schedule(until - connection.loop().nowNs(), this::timerDue);
    }

    /** The timer (loop thread): resumes, or waits on if the delay was extended. */
    private void timerDue() {
        boolean over = connection.isClosed() || ending.getAsBoolean();
        long leftNs = untilNs - connection.loop().nowNs();
        if (leftNs > 0 && !over) {
            connection.loop().schedule(leftNs, this::timerDue);
            return;
        }
        active = false;
        if (!over) resume.run();
    }
}
