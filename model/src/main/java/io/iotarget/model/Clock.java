package io.iotarget.model;

/**
 * The engine's one source of time. Layers below the engine never read time themselves: they
 * take {@code nowNs} as an argument, so tests can drive them with a manual clock.
 */
@FunctionalInterface
public interface Clock {
    /** Monotonic nanoseconds; only differences mean anything. */
    long nanoTime();

    /** {@link System#nanoTime()}. */
    Clock SYSTEM = System::nanoTime;
}
