/**
 * The last step of the request path: a {@link io.iotarget.dispatch.DispatchQueue} per device
 * turns admitted requests into backend calls, at most {@code depth} at a time, and reports
 * issue and completion so the controller's policies can measure latency.
 * {@link io.iotarget.dispatch.RequestCheck} refuses malformed requests before they are charged.
 */
package io.iotarget.dispatch;
