package io.iotarget.iocontrol.policy.cost;

import io.iotarget.model.CounterDescriptor;

import static io.iotarget.model.CounterDescriptor.Description.counter;
import static io.iotarget.model.CounterDescriptor.Description.gauge;

/** iocost's counters on one device, read with {@code IoController.policyCounters(device).get("cost")}. */
public enum CostCounter implements CounterDescriptor {
    WAITED(counter("waited", "requests that waited for their group's budget")),
    WAITING(gauge("waiting", "requests waiting for budget now, in all groups of the device")),
    DEBT_IOS(counter("debt_ios", "requests that could not wait (metadata) and went out as their group's debt"));

    private final Description description;

    CostCounter(Description description) {
        this.description = description;
    }

    @Override
    public Description description() {
        return description;
    }
}
