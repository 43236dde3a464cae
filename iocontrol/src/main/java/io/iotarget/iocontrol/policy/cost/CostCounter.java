package io.iotarget.iocontrol.policy.cost;

import io.iotarget.model.CounterDescriptor;

/** iocost's counters on one device, read with {@code IoController.policyCounters(device).get("cost")}. */
public enum CostCounter implements CounterDescriptor {
    WAITED("waited", Kind.COUNTER, "requests that waited for their group's budget"),
    WAITING("waiting", Kind.GAUGE, "requests waiting for budget now, in all groups of the device"),
    DEBT_IOS("debt_ios", Kind.COUNTER, "requests that could not wait (metadata) and went out as their group's debt");

    private final String label;
    private final Kind kind;
    private final String doc;

    CostCounter(String label, Kind kind, String doc) {
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
