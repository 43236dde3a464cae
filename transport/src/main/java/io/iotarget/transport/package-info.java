/**
 * TCP for the front ends: event loops that carry every connection without a thread each.
 *
 * <h2>1. Why loops</h2> A thread per connection costs a stack and a scheduler entry whether the
 * connection works or idles, and thousands of tenants' connections are mostly idle. A few
 * {@link io.iotarget.transport.EventLoop}s (one per core) each own a selector and the
 * connections registered with it; a connection costs a {@link io.iotarget.transport.Connection}
 * and a selection key, and holds read memory only while it is mid-request.
 *
 * <h2>2. The pieces</h2>
 * <pre>
 *   Transport ── Listener (accept, limits) ──► EventLoop[i] ── Connection ── ConnectionHandler
 *                                               selector        kept input     (the protocol:
 *                                               tasks, timeouts  OutputQueue    NBD, NVMe/TCP)
 *                                               Clock, per pass  TlsLayer
 * </pre>
 * A {@link io.iotarget.transport.Protocol} gives each accepted connection its
 * {@link io.iotarget.transport.ConnectionHandler}; the handler consumes input, queues output and
 * may pause input (backpressure). Engine completions on other threads come back to a connection
 * through {@link io.iotarget.transport.EventLoop#execute}.
 *
 * <h2>3. TLS</h2> A connection can switch to TLS in place for STARTTLS protocols
 * ({@link io.iotarget.transport.Connection#startTls}); its handler keeps seeing and sending
 * plaintext. {@link io.iotarget.transport.TlsLayer} is that whole path (engine, ciphertext buffers,
 * wrap and unwrap); handshake computations run on the transport's few TLS threads, not on the loops.
 * Engines: the JDK's for certificates ({@link io.iotarget.transport.Pem} reads the PEM files),
 * and for pre-shared keys ({@link io.iotarget.transport.PskKeys}: NBD's psktool files in
 * {@link io.iotarget.transport.TlsPsk}, NVMe/TCP's derived host keys) one over Bouncy Castle's TLS 1.3,
 * whose single X25519 agreement runs on the loop; with both, the client's ClientHello picks.
 *
 * <h2>4. What one client can hold</h2> At most {@link io.iotarget.transport.EventLoop#READ_BUFFER_BYTES}
 * of unconsumed input; queued output only as long as it takes some of it within the send timeout;
 * one connection slot of the server-wide and per-host limits; in the kernel, its socket's send
 * buffer (Transport.Settings#sendBufferBytes, 512 KiB by default instead of auto-tuning's 4 MiB).
 * Data buffers are the protocols' (taken from the tenant's share of the buffer pool).
 *
 * <h2>5. Sleeping and polling</h2> A loop sleeps in select when it has nothing to do. With
 * Transport.Settings#poll it first busy-polls for that long after its last work, which saves a
 * queue-depth-1 request the wake-up of a sleeping thread at the price of CPU (off by default).
 *
 * <h2>6. Time</h2> Every deadline — the send timeout, {@link io.iotarget.transport.EventLoop#schedule}d
 * tasks (the front ends' handshake and Connect limits), an {@link io.iotarget.transport.IssuerDelay}
 * — is measured on the transport's {@link io.iotarget.model.Clock}, read once per pass of a loop;
 * tests drive it with a manual clock.
 *
 * <h2>7. Watch</h2> a loop that spends its time in one handler starves the others: handlers never
 * block (no disk IO, no locks held across IO, no long computation on the loop).
 */
package io.iotarget.transport;
