package io.iotarget.testkit;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The tests' one way to wait for something another thread or process does: poll a condition
 * until it holds or a deadline passes, instead of sleeping a fixed time and hoping. Returns as
 * soon as the condition holds, so a generous timeout costs nothing on a fast machine and still
 * holds on a loaded 2-core one. Call it from the test's own thread; the condition is evaluated
 * on that thread, every {@link #POLL_MS} ms, the last time after the deadline.
 *
 * <p>Not for waits that are meant to let time pass (rate and measurement windows, "nothing
 * happens within X" checks): those sleep on purpose.
 */
public final class Await {
    /** How long between two looks at the condition, in milliseconds. */
    public static final long POLL_MS = 5;

    private Await() {
    }

    /**
     * Waits until {@code condition} holds; fails with {@code whatFailed}'s message (built only
     * then, so it can show the state at the deadline) if it still does not after {@code timeout}.
     */
    public static void until(Duration timeout, BooleanSupplier condition, Supplier<String> whatFailed) throws InterruptedException {
        if (!within(timeout, condition)) throw new AssertionError("not within " + timeout.toMillis() + " ms: " + whatFailed.get());
    }

    /**
     * Polls until {@code condition} holds or {@code timeout} passes, without failing: for callers
     * that assert on the state themselves afterwards (their message says more). True if it held.
     */
    public static boolean within(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            boolean late = System.nanoTime() - deadline > 0;        // read before the look, so the last look comes after the deadline
            if (condition.getAsBoolean()) return true;
            if (late) return false;
            Thread.sleep(POLL_MS);
        }
    }
}
