/**
 * io.max: per-group limits on bytes and IOs per second, for reads and writes, after the
 * kernel's blk-throttle (block/blk-throttle.c, the current single-slice form).
 *
 * <h2>1. Budgets in slices</h2>
 * Each (group, device) pair keeps, per direction, a slice {@code [sliceStart, sliceEnd]} and
 * what it dispatched in it ({@code bytesDispatched}, {@code iosDispatched}, signed: negative is
 * credit carried over from a limit change). The budget at time t is
 * {@code limit × roundup(t − sliceStart, SLICE_NS) − dispatched}: budgets grow in whole slices
 * of {@link io.iotarget.iocontrol.policy.throttle.ThrottleGroup#SLICE_NS 100 ms}, so up to one
 * slice worth may go out at once after an idle period — the kernel's "temporary bursts are
 * allowed". Slices are trimmed as time passes (one slice kept as slack) and restarted after idleness.
 *
 * <h2>2. Hierarchy</h2>
 * A request must fit its own group's budget and every ancestor's:
 * <pre>
 *   tenants (wbps=100M) ─┬─ a (wbps=80M)
 *                        └─ b (max)           a + b never exceed 100M/s together
 * </pre>
 * It climbs from its group towards the root, charged at each level where it fits, and is
 * queued at the first level where it does not. A released request climbs on from there.
 *
 * <h2>3. FIFO and fairness</h2>
 * Per group and direction, requests leave in arrival order: once one waits, later ones queue
 * behind it. At a parent, requests from each child (and the parent's own) sit in separate
 * {@code Qnode}s popped round-robin, so no child starves its siblings. One pass takes at most
 * 6 reads and 2 writes from a group (75% reads), as THROTL_GRP_QUANTUM does.
 *
 * <h2>4. Waiting</h2>
 * A group with queued requests has a dispatch time (when its head request fits); all such
 * groups of a device sit in one ordered set, and {@code releaseDue(now)} moves every due
 * request up a level or out to the rest of the chain. No thread waits: the engine calls
 * {@code releaseDue} at the earliest dispatch time.
 *
 * <h2>5. Limit changes</h2>
 * A write to io.max converts what the old limit still owed or allowed into credit or debt
 * under the new one, starts a new slice and recomputes the dispatch time at once, so a new
 * limit applies from the next release (well within one slice).
 *
 * <h2>6. Worked example</h2>
 * riops=20000, QD32 reads from t=0: the first slice allows 2000 IOs at once; request 2001
 * waits for the next 100 ms boundary, when 2000 more are allowed. Over 10 s that is
 * 200000 + one slice of burst = 202000 IOs at most, 20000 IOPS within 1%.
 *
 * <h2>7. Tunables and quirks kept from the kernel</h2>
 * SLICE_NS = 100 ms; a discard is charged 512 bytes against wbps; META requests are never
 * delayed but are charged (they put the group in debt); the root group is never limited;
 * limits of 0 are refused (ERANGE); iops above 2^32 - 1 are clamped to max.
 *
 * <h2>8. Watch</h2>
 * {@code throttle.queued} in the debug view: requests waiting per group.
 */
package io.iotarget.iocontrol.policy.throttle;
