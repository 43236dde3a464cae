/**
 * The engine wires the layers into one request path and owns what the lower layers must not:
 * the clock, the one thread that releases parked requests, the IO engine (io_uring or IO
 * threads), and the devices: it numbers them and adds each, with its dispatch queue, to the
 * registry it shares with the controller ({@code iocontrol.chain.DeviceRegistry}).
 *
 * <pre>
 *  submit(io) ─► RequestCheck ─► IoController.admit ─┬─ true ──► DispatchQueue ─┬─ memory/null: on this thread
 *                                                    │                          └─ file: IoEngine (io_uring / IO threads)
 *                                                    └─ parked ─► Releaser (timer thread)
 *                                                                  └─ releaseDue ─► DispatchQueue
 *  DispatchQueue completion (submitter or IO thread) ─► IoController.complete ─┬─ io.callback()
 *                                       └─ held (iocost's issuer delay) ─► Releaser ─► io.callback()
 * </pre>
 *
 * A front end serves a device through a {@link io.iotarget.engine.Lease} ({@link
 * io.iotarget.engine.Engine#bind}): while an export or namespace holds one, neither its device
 * nor its group can be removed.
 *
 * <p>io.pressure's tasks are tenant queues ({@link io.iotarget.engine.Engine#newQueue}): an NBD
 * connection, an NVMe/TCP IO queue, a {@link io.iotarget.engine.Volume} opened with a group. The
 * engine counts each request of a queue outstanding from {@code submit} until its callback
 * runs, and a completion that carries an issuer delay stalls its queue for the delay — whether
 * the front end pauses itself ({@code IoCallback.delayIssuer}) or the engine holds the
 * completion; the policy chain reports where requests park and resume. What a stalled queue
 * is, and SOME and FULL, are in {@code iocontrol.pressure}.
 *
 * <p>{@link io.iotarget.engine.Engine} is also the embedded Java API: {@link
 * io.iotarget.engine.Engine#open} gives a {@link io.iotarget.engine.Volume} that submits IO on
 * behalf of an explicit group or of the caller's current one ({@link
 * io.iotarget.engine.Engine#CURRENT_GROUP}, a scoped value, like {@code task_css(current)}).
 */
package io.iotarget.engine;
