package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.model.CounterDescriptor;

import static io.iotarget.model.CounterDescriptor.Description.counter;
import static io.iotarget.model.CounterDescriptor.Description.gauge;

/** io.max's counters on one device, read with {@code IoController.policyCounters(device).get("throttle")}. */
public enum ThrottleCounter implements CounterDescriptor {
    DELAYED(counter("delayed", "requests io.max made wait (each counted once, however many levels held it)")),
    QUEUED(gauge("queued", "requests waiting now, anywhere in the device's group tree"));

    private final Description description;

    ThrottleCounter(Description description) {
        this.description = description;
    }

    @Override
    public Description description() {
        return description;
    }
}
