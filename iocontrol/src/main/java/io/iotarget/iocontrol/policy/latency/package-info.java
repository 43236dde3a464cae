/**
 * io.latency: a latency target per group, protected by throttling its siblings' queue depth,
 * as the kernel's blk-iolatency (block/blk-iolatency.c) does.
 *
 * <h2>1. Targets and windows</h2>
 * {@code io.latency} gives a group a target per device ({@code 259:0 target=2000}, µs). A
 * request's latency runs from the moment it is past io.max (the kernel's {@code bio_issue}
 * stamp, so time waiting here and in iocost counts) to its completion. A group with a target
 * judges its latencies over windows of 16 targets, clamped to 100 ms..1 s; a window closes on
 * the first completion after its end. Verdict, by the device's kind:
 * <ul>
 *   <li>non-rotational (the default): the window misses when 10% or more of its IOs reached
 *   the target ({@code missed >= max(total / 10, 1)}) — a p90 rule: the 90th percentile must
 *   stay under the target, so a few slow IOs are tolerated, and with fewer than 20 IOs a
 *   single one at the target is a miss;</li>
 *   <li>rotational: the window misses when its mean latency is above the target.</li>
 * </ul>
 *
 * <h2>2. Siblings pay: the parent's scale cookie</h2>
 * Groups are only compared with their siblings. Each parent has a <i>scale cookie</i>, a
 * counter that starts at 1,000,000 (nobody throttled). A child whose window misses moves it
 * down and becomes the parent's <i>victim</i> if its target is the tightest that missed; the
 * victim alone moves it back up once its windows (at least 5 samples) are fine again. Moves
 * are at least 500 ms apart per parent, so each shows in the latencies before the next; the
 * windows in between are summed and judged together. Down is by qd/4, up by qd/16 (qd: the
 * device's queue depth); more than qd below the start the cookie moves by 1, and it never goes
 * more than 2 qd below.
 *
 * <h2>3. Depth: how a sibling follows the cookie</h2>
 * Every group below the root has a depth, unlimited until throttled: requests of its subtree
 * in flight past its level. On each request a group compares the parent's cookie with the one
 * it saw last and takes one step if it moved: down halves its depth (from at most qd, to 1 at
 * least), up raises it by qd/16 up to qd, back at the start it is unlimited again. A group
 * with a target as tight as the victim's is not stepped down, nor one that did 5% or less of
 * the parent's samples. A request takes a slot at its group and at every ancestor below the
 * root; where none is free it waits, in arrival order, until a completion frees one.
 * Metadata ({@code IoFlags.META}, the kernel's issue-as-root) never waits.
 *
 * <h2>4. The timer and recovery</h2>
 * A timer fires 1 s after a request finds it unarmed. For every parent whose cookie is down:
 * with no victim it steps the cookie up; a victim that caused no move for 5 s is forgotten.
 * So when the protected group goes idle its siblings recover: 5 s later the cookie starts
 * climbing by qd/16 a second (by 1 while more than qd down), and each sibling climbs with it.
 *
 * <h2>5. Delay when depth 1 is not enough</h2>
 * A step down that finds the depth at 1 counts {@code use_delay} up instead (a step up counts
 * it down first). Metadata a throttled group completes under its target is owed as delay
 * (target − latency). While {@code use_delay} is non-zero, each completion of the group is
 * held back from its issuer for the delay owed on its way to the root, at most 250 ms. Once a
 * second, what was already owed at the previous such point is forgiven (at least half of it
 * when {@code use_delay} went down meanwhile), so delay lasts one to two seconds. The kernel delays the issuing task on its way back to user
 * space; here the tenant's queue that issued the request (an NBD connection, an NVMe/TCP IO
 * queue) takes no new command for the delay ({@code IoCallback.delayIssuer}), and where the
 * issuer cannot pause (the embedded API) the engine holds the completion instead (see
 * docs/decisions.md). The front ends send no metadata, so a tenant over NBD or NVMe/TCP is
 * held by its depth alone, as a kernel group that only issues its own IO is.
 *
 * <h2>6. Worked example</h2>
 * qd 256, {@code a} target=2000 (window 100 ms), its sibling {@code b} without a target with
 * 300 requests in flight. {@code a}'s IOs take 5 ms: its first window (20 IOs, all missed)
 * moves the root's cookie to 1,000,000 − 64, and {@code b}'s next request halves its depth to
 * 128 (256 halved) and waits. The next move can come 500 ms later: the windows in between are
 * summed and the one closing at +600 ms moves the cookie to − 128, {@code b} to 64. When
 * {@code a}'s IOs take 1 ms again, the window closing 500 ms after that moves the cookie up
 * by 16 and {@code b}'s depth to 80. If {@code a} goes idle instead, the timer forgets it 5 s
 * after its last move and then steps the cookie up 16 a second: {@code b} climbs by 16 per
 * step and is unlimited again when the cookie is back at 1,000,000.
 *
 * <h2>7. Tunables</h2>
 * {@link io.iotarget.iocontrol.policy.latency.LatencyTunables}, the kernel's values. The device's queue depth is
 * its dispatch queue's ({@code backends/NAME/queue_depth}).
 *
 * <h2>8. Watch</h2>
 * With {@code -Diotarget.blkcg_debug_stats=true} io.stat shows, per device,
 * {@code missed= total= depth=} (the window running now; rotational: {@code depth= avg_lat=
 * win=}) and, while a delay is in use, {@code use_delay= delay_nsec=}.
 *
 * <p>Threads: every hook runs under the device's lock ({@code DevicePolicy}); io.latency is
 * written under the tree lock.
 */
package io.iotarget.iocontrol.policy.latency;
