package io.iotarget.model;

/**
 * The one source of time of the engine and the transport. Layers below the engine never read
 * time themselves: they take {@code nowNs} as an argument; the transport's event loops read it
 * once per pass. Tests drive both with a {@link ManualClock}.
 */
@FunctionalInterface
public interface Clock {
    /** Monotonic nanoseconds; only differences mean anything. */
    long nanoTime();

    /** {@link System#nanoTime()}. */
    Clock SYSTEM = System::nanoTime;
}
