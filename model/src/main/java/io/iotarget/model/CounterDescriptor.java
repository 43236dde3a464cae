package io.iotarget.model;

/**
 * One entry of a counter catalogue: each layer declares its counters as an enum implementing
 * this (Aeron's {@code SystemCounterDescriptor}), so that what exists, what it is called and what
 * it means are in one place, and a reader (io.stat, a metrics exporter) can list them all. An
 * entry carries its {@link Description}; the enums hold one each and nothing else:
 * <pre>
 *   public enum QueueCounter implements CounterDescriptor {
 *       ERRORS(counter("errors", "requests that failed")),
 *       DEPTH(gauge("depth", "requests queued now"));
 *       ...constructor and description() returning the field
 * </pre>
 */
public interface CounterDescriptor {
    /** Whether the value only grows (a count of events) or is a level read at the moment (a queue depth). */
    enum Kind { COUNTER, GAUGE }

    /**
     * What an entry says of itself.
     *
     * @param label the stable name, lower snake case: {@code backend_errors}
     * @param kind  whether it only grows or is a level
     * @param doc   one line: what is counted, and when it moves
     */
    record Description(String label, Kind kind, String doc) {
        /** A count of events, which only grows. */
        public static Description counter(String label, String doc) {
            return new Description(label, Kind.COUNTER, doc);
        }

        /** A level read at the moment. */
        public static Description gauge(String label, String doc) {
            return new Description(label, Kind.GAUGE, doc);
        }
    }

    Description description();

    /** The stable name, lower snake case: {@code backend_errors}. */
    default String label() {
        return description().label();
    }

    /** One line: what is counted, and when it moves. */
    default String doc() {
        return description().doc();
    }

    default Kind kind() {
        return description().kind();
    }
}
