/**
 * nvmet's configfs model: the objects an operator creates and links ({@link
 * io.iotarget.frontend.nvmetcp.config.Subsystem}, {@link io.iotarget.frontend.nvmetcp.config.Namespace},
 * {@link io.iotarget.frontend.nvmetcp.config.Port}, {@link io.iotarget.frontend.nvmetcp.config.Host}),
 * the tree that reads and writes them with nvmet's names, parsers and errnos ({@link
 * io.iotarget.frontend.nvmetcp.config.NvmetTree}, with the subsystem, namespace, port and host attribute tables beside it),
 * and what a namespace looks like to the commands while it is enabled ({@link
 * io.iotarget.frontend.nvmetcp.config.ActiveNamespace}, one immutable {@link
 * io.iotarget.frontend.nvmetcp.config.NamespaceTable} per subsystem). Every change runs under the
 * target's configuration lock; the queues read the tables without it.
 */
package io.iotarget.frontend.nvmetcp.config;
