package io.iotarget.iocontrol.policy.cost;

/**
 * io.cost.qos's parameters: the device counts as saturated when more than {@code 100 − rpct}%
 * of reads complete later than {@code rlat} µs (likewise for writes), and vrate stays within
 * [min, max]. Percentages are kept in ppm (percent × 10000) as the kernel keeps them; a pct of
 * 0 switches that latency check off. Immutable; any thread.
 *
 * @param readPpm    rpct × 10000
 * @param readLatUs  rlat, µs
 * @param writePpm   wpct × 10000
 * @param writeLatUs wlat, µs
 * @param minPpm     min × 10000, within [1%, 10000%]
 * @param maxPpm     max × 10000, within [1%, 10000%]
 */
record QosParams(long readPpm, long readLatUs, long writePpm, long writeLatUs, long minPpm, long maxPpm) {
    /** The latency target of a direction (LinearModel.READ or WRITE), µs. */
    long latencyUs(int dir) {
        return dir == LinearModel.READ ? readLatUs : writeLatUs;
    }
}
