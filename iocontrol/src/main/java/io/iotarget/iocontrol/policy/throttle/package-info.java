/**
 * io.max: per-group limits on bytes and IOs per second, for reads and writes, with the meaning
 * of the kernel's blk-throttle (block/blk-throttle.c) and a smoother timing (section 1); with
 * io.max.burst, a rate above io.max for a while (section 10).
 *
 * <h2>1. Token buckets that release one request at a time</h2>
 * The kernel's meaning is kept — an average rate per (group, device, direction) for bytes and
 * for IOs, enforced at every level of the hierarchy — but not its timing. The kernel grants
 * budget in whole 100 ms slices, so a group that can go faster than its limit sends a slice's
 * worth at once and then waits for the next slice: measured at riops=20000 with QD32, p50 0.2
 * ms but p99 88 ms on the model of {@code ThrottlePacingTest}, 53 ms through NBD with fio.
 * Here each limit is a {@link io.iotarget.iocontrol.policy.throttle.Bucket token bucket} that
 * fills continuously at the limit and starts with
 * {@link io.iotarget.iocontrol.policy.throttle.Bucket#BURST_NS 1 ms} worth: a request fits
 * once the bucket holds its cost, so waiting requests leave one by one, spaced at their cost
 * over the limit. The bucket may fill up to 10 ms worth beyond the burst or the head's cost,
 * so that a client that fell behind for a moment lets its next requests out sooner: no time is
 * lost and the average stays exact. A gap longer than that is idleness and is not made up, so
 * that a group back from idle runs no 100 ms window far above the limit (about 111% at most).
 * While requests wait (and for 10 ms after a release emptied the queue, as completions refill
 * it), the time that passes is the server's, not the group's: a late release, or server threads
 * without a core on a loaded machine, are made up to 100 ms worth (the kernel's throttle slice),
 * so a group held back all along gets its whole average; the 100 ms window after such a stall
 * may then hold up to twice the limit, any 200 ms window no more than the limit and the burst. The arithmetic is integral: a bucket counts
 * what it dispatched since it started, and moves its start on by whole seconds (exactly the
 * limit's worth) so the numbers stay small.
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
 * under the new one, restarts the buckets and recomputes the dispatch time at once, so a new
 * limit applies from the next release.
 *
 * <h2>6. Worked example</h2>
 * riops=20000, QD32 reads from t=0: the bucket holds 20 IOs (1 ms worth), so the first 20 go
 * at once; from then on one request leaves every 50 µs. By t the group has sent at most
 * 20 + 20000 × t IOs: over 10 s (the last release at 9.999 s on a 1 ms clock) exactly
 * 20 + 199980 = 200000. A request waits about QD / limit = 1.6 ms (Little's law), and no 100 ms
 * window holds more than 2000 + 20, or, after a release the server made late by d ms (d at most 100),
 * 2000 + 20 + 20 × d. rbps=100 MiB/s with 128 KiB
 * reads: the bucket holds 104858 bytes (1 ms worth, rounded up), so the first read waits 0.25 ms and the n-th leaves at
 * n × 1.25 ms − 1 ms: 8000 in 10 s.
 *
 * <h2>7. Tunables and quirks kept from the kernel</h2>
 * BURST_NS = 1 ms (rounded up, at least one IO); a discard is charged 512 bytes against wbps; META requests are never
 * delayed but are charged (they put the group in debt); the root group is never limited;
 * limits of 0 are refused (ERANGE), limits of 1 too (EINVAL, as 6.1); iops above 2^32 - 1
 * are clamped to max.
 *
 * <h2>8. A share of a limit held across nodes: io.max.global</h2>
 * io.max.global has io.max's syntax but is keyed by the backend's name, which every node of a
 * cluster shares (the module {@code cluster}, docs/cluster.md). Its limits are never enforced
 * as such: a pair enforces the smaller of its io.max and its <em>share</em> of io.max.global,
 * per limit ({@code bpsEffective}, {@code iopsEffective}), and io.max reads back exactly what
 * was written to it, as in Linux. A newly written global limit starts as limit / a divisor
 * ({@code ThrottlePolicy.startingDivisor}: 1 on a node alone, the whole limit; a cluster's
 * coordinator sets the floor its store keeps for a node it has not heard from, limit / nodes / 20);
 * a coordinator then moves the share with
 * {@code ThrottlePolicy.share}, which is a limit change as in section 5: the buckets carry
 * over, so a share that changes every few hundred milliseconds loses and adds nothing.
 * Example: io.max {@code riops=5000}, io.max.global {@code riops=9000} on 3 nodes: 150 is
 * enforced at first; a share of 8000 then enforces 5000, io.max still reads 5000.
 *
 * <h2>9. The io.max of a host's new child: io.max.per_host</h2>
 * Under {@code cgroup_per_host} each host's IO is charged to a child of the bound group named
 * after the host ({@code GroupTree.bindHostChild}). io.max.per_host on the bound group (io.max's
 * syntax, errors and read format; never enforced there) is the io.max each such child is given
 * when it is made ({@code ThrottlePolicy.hostChildMade}); from then on the child's io.max is its
 * own. A write to io.max.per_host also sets io.max of every child whose io.max on that device
 * still equals the value before the write, so children nobody wrote by hand follow it. The
 * children are then limited as any group is (section 2): each host to its own limit, all of them
 * together to the bound group's io.max. Example: {@code tenants/shared} with io.max.per_host
 * {@code riops=1000} and no io.max: two hosts each run at 1000 IOPS, 2000 together; io.max
 * {@code riops=1500} on tenants/shared would hold the pair to 1500, shared round-robin (section 3).
 *
 * <h2>10. Watch</h2>
 * {@link io.iotarget.iocontrol.policy.throttle.ThrottleCounter} per device
 * ({@code IoController.policyCounters}): requests waiting now (QUEUED) and ever delayed
 * (DELAYED); io.stat shows what each group was charged; io.max.burst.stat, {@code top}'s BURST
 * column and {@code iotarget_io_burst_credit} the burst credit left (section 10).
 *
 * <h2>10. Bursts: io.max.burst</h2>
 * io.max holds a quiet tenant to L even when it boots or compacts after hours of idleness;
 * QEMU's throttle groups ({@code iops-total-max}, {@code -max-length}), nbdkit's rate filter
 * (burstiness) and EBS gp2's credits let it go faster for a while. io.max.burst, in io.max's
 * syntax plus {@code len=SECONDS}, gives a limit L a burst rate R &gt; L: the group may run at
 * R for len seconds, then is held to L. The extra it may spend above L, its <em>credit</em>, is
 * (R − L) × len units (IOs or bytes), refilled by what it leaves unused below L. io.max itself
 * reads and writes exactly as Linux's.
 * <ol>
 * <li>Two buckets per limit. L's bucket holds, besides its burst, the credit: it starts full
 * ({@code burst + credit}) and may fill up to that again while the group uses less than L. Its
 * catch-up (section 1) is held within the credit, not on top of it: a full credit is (R − L) ×
 * len above L, after idle time exactly as for a new group. A second bucket, a plain one at R, holds the group to R while
 * there is credit. A request must fit both (and, as ever, every ancestor's). Running at R drains
 * L's bucket at R − L a second; once it is empty, L's bucket is the one that holds.</li>
 * <li>Credit left is what L's bucket holds, up to the credit; io.max.burst.stat shows it per
 * limit ({@code 259:0 riops=6400/8000}: left/full).</li>
 * <li>Hierarchy: credit is per group. An ancestor's limit still holds, so a burst under a
 * parent runs at most at the parent's rate, and spends its credit that much slower:
 * <pre>
 *   tenants (riops=3000) ── a (riops=1000, burst riops=5000 len=2)
 *   a runs at 3000 for 4 s (credit drains at 2000/s), then at 1000: still 14000 IOs in 6 s
 * </pre>
 * An ancestor's own burst lets the subtree as a whole run above the ancestor's L.</li>
 * <li>Changes. A write to io.max, io.max.burst or the share restarts the changed buckets as in
 * section 5, and the credit left carries over, up to the new credit ((R − L) × len under the
 * new values). A burst that comes into effect (io.max set below R after max, or a burst written
 * where none was) starts with full credit, as a new group does. io.max = max, or L ≥ R, puts a
 * burst out of effect: it keeps its line in io.max.burst and acts again once io.max is below R.
 * A burst for a limit io.max does not set is accepted and kept dormant in the same way, not
 * refused: the two files are written in any order (a saved config replays them in listing
 * order) and io.max can change later anyway; io.max.burst.stat lists only bursts in effect, so
 * a dormant one shows there by its absence. A share of io.max.global below R caps the burst
 * as it caps io.max: the burst rate is min(R, share) and the credit (R − io.max) × len.</li>
 * <li>Tunables: len 1 s when not given (QEMU's default), at most 86400 s; credit at most 2^52 units.</li>
 * </ol>
 * Worked example: io.max riops=1000, io.max.burst riops=5000 len=2; credit (5000 − 1000) × 2 =
 * 8000 IOs. A new group's L bucket holds 1 + 8000 IOs, its R bucket 5 (1 ms of 5000). A QD32
 * reader from t = 0 has sent at most min(5 + 5000 t, 8001 + 1000 t) IOs: the two meet at
 * t = 1.999 s (10000 IOs, 2 s at 5000), after which 1000 a second: over 6 s (last release at
 * 5.999 s on a 1 ms clock) 8001 + 5999 = 14000 = 1000 × 6 + 8000. The credit is then empty;
 * it refills at 1000 a second while the group is idle (4000 after 4 s) and is full after 8 s,
 * and never fuller. Running at 500 a second instead refills it at 500 a second. A burst that
 * lags (the server stalls for 120 ms at 1 s while requests wait: the R bucket makes up 100 ms
 * of it) sends 9895 in its first 2 s and keeps 106 IOs of credit: they are spent at R just
 * after 2 s, and then 1000 a second exactly, 14000 in 6 s all the same. Counted from 2 s the
 * rest reads 4105 / 4 s = 1026 a second; it is 1000 once the credit is spent.
 */
package io.iotarget.iocontrol.policy.throttle;
