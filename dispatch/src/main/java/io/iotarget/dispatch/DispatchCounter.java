package io.iotarget.dispatch;

import io.iotarget.model.CounterDescriptor;

import static io.iotarget.model.CounterDescriptor.Description.counter;
import static io.iotarget.model.CounterDescriptor.Description.gauge;

/** The counters of one device's {@link DispatchQueue}, read with {@link DispatchQueue#counters()}. */
public enum DispatchCounter implements CounterDescriptor {
    BACKEND_ERRORS(counter("backend_errors", "backend calls that failed (every errno, full file systems included)")),
    ABORTED(counter("aborted", "requests failed ABORTED without reaching the backend, because the device was being removed")),
    UNCHARGED(counter("uncharged", "requests run past the controller, charged to no group: iotarget calibrate's measurements")),
    IN_FLIGHT(gauge("in_flight", "requests on the backend now (at most the queue depth)")),
    WAITING(gauge("waiting", "requests waiting for a free slot of the queue depth"));

    private final Description description;

    DispatchCounter(Description description) {
        this.description = description;
    }

    @Override
    public Description description() {
        return description;
    }
}
