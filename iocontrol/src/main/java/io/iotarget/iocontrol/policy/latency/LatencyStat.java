package io.iotarget.iocontrol.policy.latency;

/**
 * Latency samples of one group over a window (the kernel's {@code latency_stat}): on a
 * non-rotational device how many IOs completed and how many of them reached the target, on a
 * rotational one how many and their summed latency. Written under the device lock; the fields
 * are volatile so that io.stat may read them without it (a read is not an atomic snapshot).
 */
final class LatencyStat {
    volatile long total;
    volatile long missed;
    volatile long sumNs;

    void add(LatencyStat other) {
        total += other.total;
        missed += other.missed;
        sumNs += other.sumNs;
    }

    void reset() {
        total = 0;
        missed = 0;
        sumNs = 0;
    }

    long meanNs() {
        return total == 0 ? 0 : sumNs / total;
    }
}
