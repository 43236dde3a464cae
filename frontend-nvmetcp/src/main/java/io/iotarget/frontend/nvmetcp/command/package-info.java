/**
 * The NVMe commands a queue executes: Fabrics ({@link io.iotarget.frontend.nvmetcp.command.Fabrics}:
 * Connect, Property Get/Set), admin ({@link io.iotarget.frontend.nvmetcp.command.AdminCommands},
 * {@link io.iotarget.frontend.nvmetcp.command.Identify}, {@link io.iotarget.frontend.nvmetcp.command.LogPages})
 * and IO ({@link io.iotarget.frontend.nvmetcp.command.IoCommands}, which turns each into the
 * {@link io.iotarget.model.IoRequest}s that are charged), over the submission queue entry ({@link
 * io.iotarget.frontend.nvmetcp.wire.Sqe}) and answered with NVMe status codes ({@link
 * io.iotarget.frontend.nvmetcp.wire.Status}). Each runs on its queue's event loop.
 *
 * <p>The layer above the core: the commands take the core's controllers, queues and slots, and
 * the core calls them only through its {@link io.iotarget.frontend.nvmetcp.CommandSet}, which
 * {@link io.iotarget.frontend.nvmetcp.command.NvmeCommands} implements (registered in
 * {@code META-INF/services}).
 */
package io.iotarget.frontend.nvmetcp.command;
