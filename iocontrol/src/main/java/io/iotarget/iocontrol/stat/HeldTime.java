package io.iotarget.iocontrol.stat;

import io.iotarget.model.CounterDescriptor;

/**
 * Time the requests of a (group, device) were held back, in ns, summed over requests (so two
 * requests held for the same second count two seconds) and hierarchical like io.stat: a
 * group's counters include its descendants', removed ones too. Read with
 * {@code DeviceGroup.held()}.
 */
public enum HeldTime implements CounterDescriptor {
    THROTTLE("throttle", "ns requests waited in io.max (their own group's limit or an ancestor's)"),
    LATENCY("latency", "ns requests waited for io.latency's queue depth (a sibling's target cut it)"),
    COST("cost", "ns requests waited for iocost's budget"),
    ISSUER_DELAY("delay", "ns completions were held back from their issuer (iocost's debt, io.latency's delay)");

    private final String label;
    private final String doc;

    HeldTime(String label, String doc) {
        this.label = label;
        this.doc = doc;
    }

    /** The entry for the time a policy named {@code policyName} parks requests; null for a policy it has none for. */
    public static HeldTime parkedBy(String policyName) {
        for (HeldTime t : values()) if (t != ISSUER_DELAY && t.label.equals(policyName)) return t;
        return null;
    }

    @Override
    public String label() {
        return label;
    }

    @Override
    public String doc() {
        return doc;
    }

    @Override
    public Kind kind() {
        return Kind.COUNTER;
    }
}
