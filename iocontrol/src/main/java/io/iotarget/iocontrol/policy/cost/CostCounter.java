package io.iotarget.iocontrol.policy.cost;

import io.iotarget.model.CounterDescriptor;

import static io.iotarget.model.CounterDescriptor.Description.counter;
import static io.iotarget.model.CounterDescriptor.Description.gauge;

/** iocost's counters on one device, read with {@code IoController.policyCounters(device).get("cost")}. */
public enum CostCounter implements CounterDescriptor {
    WAITED(counter("waited", "requests that waited for their group's budget")),
    WAITING(gauge("waiting", "requests waiting for budget now, in all groups of the device")),
    DEBT_IOS(counter("debt_ios", "requests that could not wait (metadata) and went out as their group's debt")),
    // Why vrate moves, a count per QoS period (the kernel's iocost_ioc_vrate_adj tracepoint, summed).
    PERIODS(counter("periods", "QoS periods that ended (the kernel's ioc_timer_fn): what the *_periods counts are out of")),
    RQ_WAIT_BUSY_PERIODS(counter("rq_wait_busy_periods",
            "periods in which requests waited for a queue slot over 5% of the period: a busy signal")),
    READ_LATENCY_BUSY_PERIODS(counter("read_latency_busy_periods",
            "periods in which more reads missed io.cost.qos rlat than rpct allows: a busy signal")),
    WRITE_LATENCY_BUSY_PERIODS(counter("write_latency_busy_periods",
            "periods in which more writes missed io.cost.qos wlat than wpct allows: a busy signal")),
    LAGGING_PERIODS(counter("lagging_periods",
            "periods in which a group had requests in flight for over a period (counted with latency targets only): they keep vrate from rising")),
    VRATE_LOWERED_PERIODS(counter("vrate_lowered_periods", "periods at whose end vrate fell")),
    VRATE_RAISED_PERIODS(counter("vrate_raised_periods", "periods at whose end vrate rose")),
    BUSY_LEVEL(gauge("busy_level",
            "the busy level now, -1000 to 1000: above 0 vrate falls at each period's end, the faster the higher; below 0 it rises"));

    private final Description description;

    CostCounter(Description description) {
        this.description = description;
    }

    @Override
    public Description description() {
        return description;
    }
}
