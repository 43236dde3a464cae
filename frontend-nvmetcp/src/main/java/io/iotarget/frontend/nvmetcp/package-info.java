/**
 * The NVMe/TCP front end: Linux nvmet's target model served over NVMe/TCP, with every
 * namespace's IO charged to the group bound to it (seed 001's {@code cgroup_id}).
 *
 * <p>Packages in layers, each using only those below it (control's {@code PackageCycleTest}
 * fails on any cycle):
 * <pre>
 *  command      the NVMe commands: Fabrics, AdminCommands, Identify, LogPages, IoCommands, ...
 *  (this one)   the core: the target, its controllers, their submission queues and command slots,
 *               and the NVMe/TCP connection that carries each queue
 *  config       nvmet's configfs as a model; it tells the core what changed ({@code ConfigEvents})
 *  reservation  persistent reservations, decided on host identifiers
 *  auth, pdu    DH-HMAC-CHAP and TLS keys; the PDU codec
 *  wire         NVMe constants: Status, Sqe, AnaState
 * </pre>
 * The core names the commands only through {@link io.iotarget.frontend.nvmetcp.CommandSet},
 * which package command implements; the configuration holds no controller and no connection
 * (the target keeps them: {@link io.iotarget.frontend.nvmetcp.SubsystemControllers}, each port's
 * connections) and calls none; the reservations reach controllers through
 * {@code Reservations.Hosts}.
 *
 * <p>The runtime: the target ({@link io.iotarget.frontend.nvmetcp.NvmeTarget}), its controllers
 * ({@link io.iotarget.frontend.nvmetcp.Controller}) and their queues, each a submission queue
 * ({@link io.iotarget.frontend.nvmetcp.Queue}, nvmet's {@code nvmet_sq}: the
 * {@link io.iotarget.frontend.nvmetcp.CommandSlot}s, routing, the authentication gate, buffer
 * waits) carried by one TCP connection ({@code TcpQueue}, nvmet's {@code nvmet_tcp_queue}: the
 * wire).
 *
 * <h2>1. The model (nvmet's configfs, {@link io.iotarget.frontend.nvmetcp.NvmeTarget#tree()})</h2>
 * <pre>
 *  subsystems/&lt;nqn&gt; ──&lt; namespaces/&lt;nsid&gt; ── device_path: engine device | /path/to/file-or-bdev
 *       │   ▲                     └── cgroup_id / cgroup: the group that pays for its IO
 *       │   └── allowed_hosts/ ──&gt; hosts/&lt;hostnqn&gt;   (or attr_allow_any_host=1)
 *  ports/&lt;id&gt; (tcp, traddr:trsvcid) ── subsystems/ ──&gt; subsystems/&lt;nqn&gt;   first link = listen
 *  controller = (subsystem, host, port): created by an admin Connect, gone with its admin queue
 * </pre>
 * The discovery subsystem answers {@code nvme discover} with the subsystems linked to the
 * port that the host may connect to.
 *
 * <h2>2. A queue is a connection on an event loop ({@code TcpQueue} and its {@link io.iotarget.frontend.nvmetcp.Queue})</h2>
 * <pre>
 *  loop: socket ─► PduDecoder ─► TcpQueue ─► Queue: CommandSlot ─┬─ admin: AdminCommands, inline
 *                                                                └─ IO: IoCommands ─► engine.submit ─► completion (any thread)
 *  loop: socket ◄─ transport output ◄─ TcpQueue's SlotQueue (MPSC) ◄── Queue.respond(slot) ◄──┘  R2T requests too
 * </pre>
 * The transport's event loop owns the queue: it decodes, runs admin commands, submits IO,
 * encodes responses into each slot's own header memory and gives tags back once a response is
 * on the wire. A completion on an engine thread (io.max released it, a file backend finished)
 * pushes its slot and schedules one flush task on the loop: it never touches a socket. Slots
 * and their IoRequests are allocated once per connection; an IO command's data buffer comes
 * from the tenant's share of the buffer pool (an admin slot keeps a buffer of its own, grown to
 * the largest admin transfer), so the steady state allocates nothing. A host that has not
 * finished Connect within 10 s of TCP accept is disconnected.

 * <h2>3. The wire</h2>
 * ICReq/ICResp with header and data digests (CRC32C) as the host asks; capsules with
 * in-capsule data up to {@code param_inline_data_size} (16 KiB; 8 KiB on the admin queue);
 * larger writes through one R2T answered by H2CData PDUs of at most MAXH2CDATA (128 KiB);
 * reads in one C2HData PDU, with DATA_SUCCESS and no response capsule when the queue was
 * connected with SQ flow control disabled. Framing errors end the connection with a
 * C2HTermReq; command errors are NVMe status codes (IoStatus maps to them in {@code Status}).
 *
 * <h2>4. Charging</h2>
 * Read, Write, Flush, Write Zeroes, Dataset Management (deallocate, one request per range),
 * Verify and Compare each become {@link io.iotarget.model.IoRequest}s targeted at the
 * namespace's device and group, as {@link io.iotarget.model.IoOp} classifies them; commands
 * refused before the media (LBA Out of Range, Invalid Opcode, write-protected) are charged
 * nothing. Commands a host sends through its passthrough ioctls arrive as these same opcodes.
 *
 * <h2>5. Authentication</h2>
 * A host with a {@code dhchap_key} in a subsystem's allowed_hosts must run DH-HMAC-CHAP on every
 * queue before anything but fabrics commands runs there ({@link io.iotarget.frontend.nvmetcp.QueueAuthentication},
 * the one hook; the protocol is {@link io.iotarget.frontend.nvmetcp.auth}). A queue that fails,
 * or misses its deadline, closes alone; DH runs on the target's one DH thread, never on a loop.
 * A port with {@code addr_tsas tls1.3} runs its queues over TLS 1.3 with pre-shared keys from
 * the first byte ({@code TcpQueue}; keys: {@code hosts/NQN/tls_key},
 * {@link io.iotarget.frontend.nvmetcp.auth.TlsKey}); DH-HMAC-CHAP then runs inside TLS.
 *
 * <h2>6. Watch</h2>
 * {@link io.iotarget.frontend.nvmetcp.NvmeTcpCounter} through {@code NvmeTarget.counters()}:
 * protocol and digest errors, host terminations, requests aborted by a disconnect, keep-alive
 * expiries and authentication failures; the error
 * log (log page 0x01) and SMART counters per controller. {@code Queue.describe()} gives
 * one line per connection (queue, digests, SQ flow control, auth), which the tests' control
 * server prints.
 */
package io.iotarget.frontend.nvmetcp;
