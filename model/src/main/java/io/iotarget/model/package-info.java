/**
 * The request model every layer shares: what an IO is ({@link io.iotarget.model.IoRequest},
 * {@link io.iotarget.model.IoOp}, {@link io.iotarget.model.IoFlags}), where it goes
 * ({@link io.iotarget.model.Device}, {@link io.iotarget.model.DeviceNumber}), who pays
 * ({@link io.iotarget.model.IoGroup}), how it ended ({@link io.iotarget.model.IoStatus}), and how
 * the control plane reports a refused write ({@link io.iotarget.model.Errno},
 * {@link io.iotarget.model.ControlException}), the shape of a configuration tree
 * ({@link io.iotarget.model.ConfigTree}, built with the toolkit of {@code io.iotarget.model.tree}),
 * and how every layer exposes its counters: a catalogue enum of
 * {@link io.iotarget.model.CounterDescriptor}s read through {@link io.iotarget.model.Counters}.
 *
 * <p>Nothing here has threads, sockets or a clock.
 */
package io.iotarget.model;
