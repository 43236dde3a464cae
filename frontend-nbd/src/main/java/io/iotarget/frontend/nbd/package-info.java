/**
 * The NBD front end: a fixed-newstyle NBD server whose exports are engine devices bound to
 * groups of the IO controller, like nvmet namespaces with {@code cgroup_id}.
 *
 * <pre>
 *  transport connection (event loop)
 *    ─► OptionDecoder ─► Negotiation ─(GO / EXPORT_NAME)─► transmission
 *    ─► RequestDecoder ─► NbdCommands.validate/execute ─► IoRequest(device, group) ─► Engine.submit
 *                                                      └─ BLOCK_STATUS ─► Backend.mapExtents (not charged)
 *  completion (loop, releaser or backend completion thread) ─► completed stack ─► loop: gathering write
 * </pre>
 *
 * <h2>Charging</h2> READ, WRITE, TRIM (discard), WRITE_ZEROES, FLUSH and CACHE each become one
 * request charged to the export's group, classified as {@link io.iotarget.model.IoOp} says
 * (FLUSH is one write IO of 0 bytes, CACHE a read of its length). BLOCK_STATUS reads allocation
 * metadata, not data, and is not charged. Refused requests (bad flags, read-only export,
 * out of range) are not charged, as the kernel checks a bio before blk-throttle and io.stat see it.
 *
 * <h2>Choices the protocol leaves open</h2>
 * <ul>
 * <li>Zero-length READ/WRITE/TRIM/WRITE_ZEROES/CACHE/BLOCK_STATUS: EINVAL.</li>
 * <li>READ or WRITE over {@code max_request} (default 64 MiB, advertised in NBD_INFO_BLOCK_SIZE): EINVAL (EOVERFLOW for a DF read); the WRITE's payload is
 * read and dropped so the stream stays in step.</li>
 * <li>The empty export name selects the export named "default".</li>
 * <li>A disabled export, or a closing server, ends its connections like NBD_CMD_DISC:
 * accepted requests are answered, then the socket closes; new options get ERR_SHUTDOWN.</li>
 * <li>TLS (NBD_OPT_STARTTLS; X.509, TLS 1.3 or 1.2 for nbd-client; pre-shared keys, TLS 1.3)
 * when {@code tls/certificates} or {@code tls/psk_file} is set; an export
 * may require it ({@code tls}) and admit only the client certificates and keys it lists
 * ({@code allow_any_client} 0, {@code allowed_clients}, as nvmet's allowed hosts). Exports a client may not open are neither listed to it nor
 * answered differently from unknown ones ({@link io.iotarget.frontend.nbd.Negotiation}).
 * Identities choose exports, never groups: IO is charged to the export's group.
 * Extended headers: ERR_UNSUP.</li>
 * <li>A connection past the server's connection limits (in all, per host) still gets the
 * greeting; every option is then refused with ERR_POLICY and the reason.</li>
 * </ul>
 *
 * <p>Watch: {@link io.iotarget.frontend.nbd.NbdCounter} through {@code NbdServer.counters()}
 * (connections, protocol errors, handshake timeouts, requests aborted by a disconnect).
 */
package io.iotarget.frontend.nbd;
