package io.iotarget.dispatch;

import io.iotarget.model.CounterDescriptor;

/** The counters of one device's {@link DispatchQueue}, read with {@link DispatchQueue#counters()}. */
public enum DispatchCounter implements CounterDescriptor {
    BACKEND_ERRORS("backend_errors", Kind.COUNTER, "backend calls that failed (every errno, full file systems included)"),
    ABORTED("aborted", Kind.COUNTER, "requests failed ABORTED without reaching the backend, because the device was being removed"),
    IN_FLIGHT("in_flight", Kind.GAUGE, "requests on the backend now (at most the queue depth)"),
    WAITING("waiting", Kind.GAUGE, "requests waiting for a free slot of the queue depth");

    private final String label;
    private final Kind kind;
    private final String doc;

    DispatchCounter(String label, Kind kind, String doc) {
        this.label = label;
        this.kind = kind;
        this.doc = doc;
    }

    @Override
    public String label() {
        return label;
    }

    @Override
    public Kind kind() {
        return kind;
    }

    @Override
    public String doc() {
        return doc;
    }
}
