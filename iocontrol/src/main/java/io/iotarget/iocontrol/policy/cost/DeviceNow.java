package io.iotarget.iocontrol.policy.cost;

/**
 * One instant on a device as iocost sees it, the kernel's {@code struct ioc_now}: the engine's
 * time in ns and in µs, and the device's virtual time then, {@code vnow}. {@link CostDevice}
 * takes one at each entry point that uses the device clock — admit, the timers, an io.weight
 * change, a group going offline, a cancel — and passes it to every method below that reads the
 * time, so a method's parameters say whether it depends on the time, and every method of one
 * entry point sees the same instant. (A completion and the io.cost.* writes need only the
 * engine's ns.)
 *
 * <p>The kernel's struct once carried the vrate it was computed with; the kernel dropped it
 * (nothing read it), and so does this one: a period's end changes the device's vrate while the
 * instant stays, so a copy here would only go stale.
 *
 * <p>Reused, to keep the IO path free of allocation: each device owns one and restamps it at
 * each entry point. Entry points never nest (a device's resumer hands requests only to the
 * policies after it), so a {@code DeviceNow} is valid until the entry point that took it
 * returns, and must not be kept past that. Device lock.
 */
final class DeviceNow {
    private long nowNs;
    private long nowUs;
    private long vnow;

    /** Sets the instant; only {@link CostDevice#deviceNow}, the kernel's {@code ioc_now()}, calls it. */
    DeviceNow set(long nowNs, long nowUs, long vnow) {
        this.nowNs = nowNs;
        this.nowUs = nowUs;
        this.vnow = vnow;
        return this;
    }

    /**
     * A request went on a minimum: the device clock the weights share is {@code absCost}
     * behind from now on (CostDevice.takeFromClock moves the period's start the same way).
     */
    void take(long absCost) {
        vnow -= absCost;
    }

    /** The engine's time, ns (timer deadlines are in these units). */
    long nowNs() {
        return nowNs;
    }

    /** The same time in µs, the unit of the device clock and of every statistic (the kernel's {@code now->now}). */
    long nowUs() {
        return nowUs;
    }

    /** The device's vtime at this instant: a group with {@code vtime + cost ≤ vnow} may issue. */
    long vnow() {
        return vnow;
    }
}
