/**
 * NVMe in-band authentication, DH-HMAC-CHAP (NVMe Base spec, "Authentication"), as Linux's
 * nvmet runs it: the protocol only, with no knowledge of queues or sockets, so that it can run
 * on whichever thread the front end gives it.
 *
 * <h2>1. The problem</h2>
 * A Connect names its host by an NQN string that anyone can type. A host NQN with a secret
 * ({@code hosts/<nqn>/dhchap_key}) must prove it knows the secret on every queue before the
 * queue runs any command that reaches a namespace; with {@code dhchap_ctrl_key} the host can
 * make the controller prove the same in return.
 *
 * <h2>2. Secrets and their transform</h2> {@link io.iotarget.frontend.nvmetcp.auth.DhChapSecret}:
 * {@code DHHC-1:<hh>:<base64(key || CRC-32)>:}; for hh ≠ 00 the key used is
 * {@code Kh = HMAC-hh(key, NQNh || "NVMe-over-Fabrics")} (host key with the host NQN, controller
 * key with the subsystem NQN).
 *
 * <h2>3. The exchange</h2> {@link io.iotarget.frontend.nvmetcp.auth.DhChapExchange}, one per queue:
 * <pre>
 *  host                                             controller
 *  AUTH_Send    Negotiate  T_ID, hashes, DH groups ─►  configured hash and group offered?  else Failure1
 *  AUTH_Receive            ◄─ Challenge  hash, group, S1, C1 (random), g^x mod p
 *  AUTH_Send    Reply      R1, [C2, S2], g^y mod p ─►  R1 = HMAC(Kh, Ca1 || S1 || T_ID || 0 || "HostHost" || NQNh || 0 || NQNc)?
 *                                                      unidirectional: authenticated now
 *  AUTH_Receive            ◄─ Success1  [R2 = HMAC(Kc, Ca2 || S2 || T_ID || 0 || "Controller" || NQNc || 0 || NQNh)]
 *  AUTH_Send    Success2 (only when C2 was sent) ─►    authenticated
 * </pre>
 * With a DH group the challenges are augmented by the session key Ks = g^xy mod p:
 * {@code Ca = HMAC(H(Ks), C)}; with the null group {@code Ca = C}. A failure found in a Negotiate
 * or Reply comes back as a Failure1 message on the next AUTH_Receive; a message out of order,
 * or the host's Failure2, fails at once. Every failure leaves the queue unauthenticated, and the
 * front end then closes that queue (nvmet fails the whole controller: see section 5).
 *
 * <h2>4. Worked example</h2> Host key {@code DHHC-1:00:...} (32 bytes, no transform),
 * {@code dhchap_hash} hmac(sha256), group null: Challenge carries HL=32, S1 and 32 random bytes
 * C1 and no DH value; the host answers R1 = HMAC-SHA-256(key, C1 || LE32(S1) || LE16(T_ID) ||
 * 00 || "HostHost" || its NQN || 00 || the subsystem NQN) and CVALID=0; the controller compares
 * (in constant time), marks the queue authenticated and sends Success1 with RVALID=0.
 * {@code DhChapExchangeTest} runs this and the DH and bidirectional variants with a host built
 * from these rules alone.
 *
 * <h2>5. Departures from nvmet</h2>
 * The configured hash and DH group are required: a host that does not offer them gets
 * Failure1 (hash / DH group unusable) where nvmet would pick another hash, so no host can
 * talk the controller down to a weaker choice than the one configured. Each challenge has a
 * fresh DH key pair (nvmet keeps one per controller). Secrets are checked whole (base64,
 * length, CRC) when they are configured, not first at a Connect. A failed exchange closes its
 * own queue only, and an IO queue joins a controller only with the controller's host NQN and host
 * ID (nvmet fails the controller, and checks the NQN alone: a host knowing another's NQN could end
 * that host's session with one bad message).
 *
 * <h2>6. Tunables and what to watch</h2>
 * {@code dhchap_hash} (default hmac(sha256)), {@code dhchap_dhgroup} (default null; ffdhe8192
 * costs ~16 ms of CPU per queue, key pair and agreement; ffdhe2048 ~2.5 ms). Failures show as the host's
 * "authentication failed" and a failed controller on the target.
 */
package io.iotarget.frontend.nvmetcp.auth;
