package io.iotarget.iocontrol.stat;

import io.iotarget.model.CounterDescriptor;

import static io.iotarget.model.CounterDescriptor.Description.counter;

/**
 * Time the requests of a (group, device) were held back, in ns, summed over requests (so two
 * requests held for the same second count two seconds) and hierarchical like io.stat: a
 * group's counters include its descendants', removed ones too. Read with
 * {@code DeviceGroup.held()}.
 */
public enum HeldTime implements CounterDescriptor {
    THROTTLE(counter("throttle", "ns requests waited in io.max (their own group's limit or an ancestor's)")),
    LATENCY(counter("latency", "ns requests waited for io.latency's queue depth (a sibling's target cut it)")),
    COST(counter("cost", "ns requests waited for iocost's budget")),
    ISSUER_DELAY(counter("delay", "ns completions were held back from their issuer (iocost's debt, io.latency's delay)"));

    private final Description description;

    HeldTime(Description description) {
        this.description = description;
    }

    /** The entry for the time a policy named {@code policyName} parks requests; null for a policy it has none for. */
    public static HeldTime parkedBy(String policyName) {
        for (HeldTime t : values()) if (t != ISSUER_DELAY && t.label().equals(policyName)) return t;
        return null;
    }

    @Override
    public Description description() {
        return description;
    }
}
