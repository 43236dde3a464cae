/**
 * nvmet's configfs model: the objects an operator creates and links ({@link
 * io.iotarget.frontend.nvmetcp.config.Subsystem}, {@link io.iotarget.frontend.nvmetcp.config.Namespace},
 * {@link io.iotarget.frontend.nvmetcp.config.Port}, {@link io.iotarget.frontend.nvmetcp.config.Host}),
 * the tree that reads and writes them with nvmet's names, parsers and errnos ({@link
 * io.iotarget.frontend.nvmetcp.config.NvmetTree}, with the subsystem, namespace, port and host attribute tables beside it),
 * and what a namespace looks like to the commands while it is enabled ({@link
 * io.iotarget.frontend.nvmetcp.config.ActiveNamespace}, one immutable {@link
 * io.iotarget.frontend.nvmetcp.config.NamespaceTable} per subsystem). The root of it all is
 * {@link io.iotarget.frontend.nvmetcp.config.NvmetConfig}, with the configuration lock; every
 * change runs under that lock, and the queues read the tables without it.
 *
 * <p>A model only: no controller, no connection, nothing of the runtime. What the target must do
 * when the model changes (fail a subsystem's controllers, send an ANA or namespace event, listen
 * on a port, close its connections) it hears through {@link
 * io.iotarget.frontend.nvmetcp.config.ConfigEvents}, which it implements.
 */
package io.iotarget.frontend.nvmetcp.config;
