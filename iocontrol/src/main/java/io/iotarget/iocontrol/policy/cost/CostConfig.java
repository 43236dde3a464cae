package io.iotarget.iocontrol.policy.cost;

/**
 * What io.cost.qos and io.cost.model show for one device: published as a whole by the device's
 * policy under its lock, read by the files and the IO path's hint without it. Immutable.
 *
 * @param enabled   io.cost.qos enable=1: IO on the device is costed and paced
 * @param userQos   io.cost.qos ctrl=user: {@link #qos} was written, not taken from {@link #autop}
 * @param qos       the QoS parameters in effect
 * @param userModel io.cost.model ctrl=user
 * @param model     the cost model in effect
 * @param autop     the built-in set that fills in what the user did not set
 */
record CostConfig(boolean enabled, boolean userQos, QosParams qos, boolean userModel, LinearModel model, AutoParams autop) {
}
