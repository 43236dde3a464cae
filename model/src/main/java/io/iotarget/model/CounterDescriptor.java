package io.iotarget.model;

/**
 * One entry of a counter catalogue: each layer declares its counters as an enum implementing
 * this (Aeron's {@code SystemCounterDescriptor}), so that what exists, what it is called and what
 * it means are in one place, and a reader (io.stat, a metrics exporter) can list them all.
 */
public interface CounterDescriptor {
    /** Whether the value only grows (a count of events) or is a level read at the moment (a queue depth). */
    enum Kind { COUNTER, GAUGE }

    /** The stable name, lower snake case: {@code backend_errors}. */
    String label();

    /** One line: what is counted, and when it moves. */
    String doc();

    Kind kind();
}
