/**
 * The last step of the request path: a {@link io.iotarget.dispatch.DispatchQueue} per device
 * turns admitted requests into backend calls, at most {@code depth} at a time — on the
 * submitting thread for memory and null backends, started asynchronously on the engine's
 * {@link io.iotarget.backend.file.IoEngine} (io_uring or IO threads) for files and block devices —
 * and reports issue and completion so the controller's policies can measure latency. Backend
 * failures become statuses that mean something (ENOSPC is NO_SPACE) and are logged, rate-limited
 * per device.
 * {@link io.iotarget.dispatch.RequestCheck} refuses malformed requests before they are charged.
 */
package io.iotarget.dispatch;
