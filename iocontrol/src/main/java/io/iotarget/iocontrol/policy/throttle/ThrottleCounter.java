package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.model.CounterDescriptor;

/** io.max's counters on one device, read with {@code IoController.policyCounters(device).get("throttle")}. */
public enum ThrottleCounter implements CounterDescriptor {
    DELAYED("delayed", Kind.COUNTER, "requests io.max made wait (each counted once, however many levels held it)"),
    QUEUED("queued", Kind.GAUGE, "requests waiting now, anywhere in the device's group tree");

    private final String label;
    private final Kind kind;
    private final String doc;

    ThrottleCounter(String label, Kind kind, String doc) {
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
