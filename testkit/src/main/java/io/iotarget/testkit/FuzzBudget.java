package io.iotarget.testkit;

import java.util.Random;

/**
 * How long and how hard a socket-level fuzz test runs, from system properties so that the same
 * test is a bounded check in every build and an hours-long run in {@code bench/fuzz}:
 * {@code iotarget.fuzz.cases} (default {@code defaultCases}), {@code iotarget.fuzz.seconds}
 * (default 60: whichever ends first) and {@code iotarget.fuzz.seed} (default: random, printed,
 * so that a failure can be replayed).
 */
public final class FuzzBudget {
    private final long cases;
    private final long deadlineNs;
    private final long seed;
    private long done;

    public FuzzBudget(String test, long defaultCases) {
        this.cases = Long.getLong("iotarget.fuzz.cases", defaultCases);
        this.deadlineNs = System.nanoTime() + Long.getLong("iotarget.fuzz.seconds", 60) * 1_000_000_000L;
        this.seed = Long.getLong("iotarget.fuzz.seed", new Random().nextLong());
        System.out.println(test + ": up to " + cases + " cases, seed " + seed + " (replay with -Diotarget.fuzz.seed=" + seed + ")");
    }

    /** A generator for case number {@code n}: cases replay one by one from the seed. */
    public Random random(long n) {
        return new Random(seed * 31 + n);
    }

    /** True while there is budget for another case; counts it. */
    public boolean another() {
        if (done >= cases || System.nanoTime() > deadlineNs) return false;
        done++;
        return true;
    }

    /**
     * Fails unless at least {@code minimum} cases ran: a budget that ran out first (a slow
     * machine, or too few cases asked for) checked too little for the test to pass.
     */
    public void assertRan(long minimum) {
        if (done < minimum) {
            throw new AssertionError("only " + done + " cases ran, at least " + minimum + " are needed"
                                     + " (raise -Diotarget.fuzz.seconds or -Diotarget.fuzz.cases)");
        }
    }

    public long done() {
        return done;
    }

    public long seed() {
        return seed;
    }
}
