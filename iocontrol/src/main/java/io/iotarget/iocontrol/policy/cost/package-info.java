/**
 * iocost: io.weight proportional control of a device, with io.cost.qos and io.cost.model,
 * and io.min's guaranteed minimums on top (section 12), after the kernel's blk-iocost ({@code block/blk-iocost.c}; names in {@code code} are the
 * kernel's, so the two read side by side).
 *
 * <h2>The problem</h2>
 * Tenants sharing a device should get it in proportion to their io.weight when they compete,
 * and all of it when they do not. Bytes and IOPS are poor measures of "the device": a random
 * 4 KiB read can cost as much device time as a sequential megabyte. iocost therefore charges
 * every IO its estimated <em>device time</em>, gives each group a clock that runs at its share,
 * and watches the device to correct the estimates.
 *
 * <h2>1. Cost model (io.cost.model)</h2>
 * Per direction, the device's sequential bandwidth and its sequential and random 4 KiB IOPS
 * give three coefficients ({@link io.iotarget.iocontrol.policy.cost.LinearModel}): an IO's
 * absolute cost is a per-IO part (random when it starts more than 16 MiB from where the
 * group's previous IO ended, else sequential) plus a per-4-KiB-page part. Costs are in vtime:
 * 2^37 per second of device time. Only reads and writes that move data are costed, as the
 * kernel costs only REQ_OP_READ/REQ_OP_WRITE bios with data: READ, WRITE, CACHE, VERIFY,
 * COMPARE and (as seed 000's patch maps them) PASSTHROUGH_IN/OUT; FLUSH (an empty bio),
 * DISCARD and WRITE_ZEROES cost nothing. FUA and PREFLUSH flags change nothing.
 *
 * <h2>2. vtime, vrate and hweight</h2>
 * The device has a virtual clock, {@code vnow}, advancing {@code vrate} vtime per µs; at
 * 100% that is 2^37/10^6, one second of modeled device time per second. Each active group has
 * a cursor, {@code vtime}; an IO may go when {@code vtime + cost ≤ vnow}, and then advances
 * vtime by {@code cost = abs_cost / hweight_inuse}. The hweight is the group's share of the
 * whole device: its weight over its active siblings', times its parent's hweight, and so on to
 * the root. A group at 1/3 pays three times the absolute cost, so the groups together never
 * spend more than vnow advances.
 * <pre>
 *   root ─┬─ x (100) ─┬─ x1 (100)     x1: 100/300 × 100/400 = 1/12
 *         │           └─ x2 (300)     x2: 100/300 × 300/400 = 1/4
 *         └─ y (200)                  y:  200/300           = 2/3
 * </pre>
 * Only groups that issued recently are active; only leaves of the active tree issue (IO of a
 * group with active children goes out uncontrolled, as root IO does). The weight arithmetic —
 * hweights, a weight change going up the tree, donation (section 5) — is
 * {@link io.iotarget.iocontrol.policy.cost.HierarchicalWeights}, which knows nothing of time.
 *
 * <h2>3. Budget and margins</h2>
 * {@code vnow − vtime} is a group's budget. A group activates with half a period's worth
 * (margin.target, 50%), so a short burst rides it; at each period end budget above the target
 * is thrown away and handed back to the device as a faster clock for the next period
 * ({@code vtime_err}), so trimming never wastes the device. The period is twice the larger
 * latency target (10× at p50), within [1 ms, 1 s]: 50 ms with the defaults.
 *
 * <h2>4. Waiting, debt and delay</h2>
 * An IO over budget waits in its group's FIFO ({@link io.iotarget.iocontrol.policy.cost.CostGroup#waiters}),
 * never a thread: the group's wait timer is set for when the first waiter fits, and the
 * engine's releaser calls {@code releaseDue} then. Passthrough waits like any write, as in
 * seed 000's patch, where the submitter sleeps on the iocost waitqueue. An IO that must not
 * wait — META, the kernel's {@code bio_issue_as_root_blkg}, since metadata queued behind its
 * group's data inverts priorities — goes out at once and its cost becomes debt: the group
 * donates all its weight (inuse 1) until it has repaid the debt from its budget, and nothing
 * of it waits less than the debt. A debt running more than 5 periods ahead of vnow delays the
 * issuer: 250 µs rising linearly to 250 ms at 250 periods, halving every second. The kernel
 * makes the issuing task sleep on its way back to user space; iotarget holds the request's
 * completion callback that long (the request itself is done), which is what an initiator
 * waiting for its reply experiences. When the device has been at most half used for 100 ms,
 * debts and delays are halved (forgiveness).
 *
 * <h2>5. Work conservation: donation</h2>
 * A group that does not use its share lowers its {@code inuse} weight (its {@code active}
 * weight, the configured one, is unchanged) so that its budget would end the next period at
 * the target, and the others' hweight_inuse rises accordingly. Donors are found at each period
 * end; "Andy's method" ({@code transfer_surpluses}) sets their inuse so that every donor keeps
 * exactly its after-donation share while the non-donors keep their shares relative to each
 * other, at every level of the tree. A donor whose budget drops below 20% of a period takes
 * weight back at once, 25% of its active weight per step; a group with waiters always runs at
 * its full weight. An idle group (nothing issued for a whole period, nothing in flight) is
 * deactivated, and its siblings' hweights grow at once.
 *
 * <h2>6. The QoS period loop (io.cost.qos)</h2>
 * Each completion of a costed read or write is a sample: from reaching the device's dispatch
 * queue ({@code IoRequest.admitNs}, the kernel's rq alloc time) to completion, minus the transfer
 * time the model predicts for its size, against rlat/wlat; the time it waited for a queue
 * slot ({@code issueNs − admitNs}) adds to rq_wait. At each period end, in this order:
 * <ol>
 *   <li>missed ppm per direction and rq_wait as % of the period;</li>
 *   <li>groups with waiters or debt are kicked (vrate may have risen), idle ones deactivated;</li>
 *   <li>usage per group, donors and shortages; donors' surplus transferred;</li>
 *   <li>busy level: up by one when rq_wait &gt; 5% or more than (100 − rpct)% of reads (wpct:
 *       writes) missed; down by one when well below (75% of those thresholds) while someone
 *       is short of budget and no IO has been in flight for over a period; else 0;</li>
 *   <li>vrate moves by {@code vrate_adj_pct[|busy level|]} (0% for the first 3 periods, then
 *       1, 2, 4, 8, 16%), within [min, max]; outside them it walks back 4% per period;</li>
 *   <li>the built-in parameter set may switch; debts may be forgiven;</li>
 *   <li>the next period starts, or the device goes idle when no group is active.</li>
 * </ol>
 * With no latency targets (rpct = wpct = 0, the default) rq_wait is the only sign of
 * saturation.
 *
 * <h2>7. Worked example</h2>
 * Model {@code wbps=4294967296 wseqiops=65536 wrandiops=1024}: page = 2^17, seqio = 2^21 − 2^17,
 * randio = 2^27 − 2^17; a sequential 4 KiB write costs 2^21 vtime (15.26 µs), a random one 2^27
 * (976.6 µs). Default QoS: period 50 ms, margin.target = 25000 µs × 137438 = 3435950000.
 * <ul>
 *   <li>a (weight 100) and b (200) active: hweights ⌊65536·100/300⌋ = 21845 and 43690. A write
 *       by a costs ⌈2^21·65536/21845⌉ = 6291553; 546 of them fit in a's starting budget
 *       (3435950000 / 6291553), the 547th waits ⌈shortage / 137438⌉ µs + 1% of the period.</li>
 *   <li>Donation: a (100) floods, b (100) writes 160 × 4 KiB in the first period. At its end
 *       b's usage is 160 × 2^21 vtime = 2441 µs, {@code ⌈2441·65536/50000⌉ = 3200} of the
 *       period; its budget above the target (6202908512) is thrown away, so it keeps
 *       hweight 3200 (4.9%). gamma = ⌈(65536 − 3200)·65536 / (65536 − 32768)⌉ = 124672,
 *       the root's adjusted child sum ⌈200·65536 · 32768 / 62336⌉ = 6890028, b's inuse
 *       ⌈6890028 · 3200 / 65536⌉ = 336428 (5.13 against a's 100): a now gets 62335/65536 =
 *       95.1% of the device. The discarded budget, at b's hweight (3101454256), comes back
 *       as a clock of 137438 + 3101454256/50000 = 199467 per µs during the next period.</li>
 *   <li>Seed 000: {@code min=1.00 max=1.00} pins vrate to 1%; a model of 1 GiB/s makes a
 *       sequential 128 KiB write cost 1/8192 s, so 128 MiB takes 0.125 s at 100% and 12.5 s
 *       at 1%, whether written with WRITE or PASSTHROUGH_OUT.</li>
 * </ul>
 * {@code HierarchicalWeightsTest} checks the weight numbers on the weight arithmetic alone,
 * {@code CostArithmeticTest} all of them through the controller on a manual clock;
 * {@code CostSimulationTest} checks the shares on a simulated device of known capacity.
 *
 * <h2>8. Configuration and choices</h2>
 * <ul>
 *   <li>io.cost.qos / io.cost.model: root only; the first successful write for a device sets
 *       iocost up there (disabled until {@code enable=1}). io.weight: non-root, 1..10000,
 *       default 100; a per-device line needs iocost set up on the device first, else
 *       EOPNOTSUPP, as the kernel's {@code blkg_conf_prep} refuses a policy not active on the
 *       queue (a configuration restore must write the root's io.cost.* before groups' per-device
 *       weights; "default" lines work any time).</li>
 *   <li>Defaults: iotarget devices report neither rotation nor a queue depth of 1, so they
 *       start on the kernel's SSD_DFL set (rlat = wlat = 25 ms, min 1%, max 10000%) and step to
 *       SSD_FAST and back as the kernel does ({@link io.iotarget.iocontrol.policy.cost.AutoParams}).</li>
 *   <li>Stricter than the kernel: numbers are decimal only (the kernel also takes 0x.. and
 *       0..), nothing may trail a number, rlat/wlat above 2^32 − 1 are refused rather than
 *       truncated, and a write that fails changes nothing (the kernel sets iocost up before
 *       parsing the rest of the line).</li>
 *   <li>Kinder than the kernel: {@code enable=0} releases the waiting requests at once (the
 *       kernel lets them drain at vrate); a removed group's waiters go out at once.</li>
 *   <li>Not modeled: request merging (iotarget does not merge, so {@code ioc_rqos_merge} has
 *       nothing to do), and the HDD and SSD_QD1 built-in sets.</li>
 * </ul>
 *
 * <h2>9. Tunables</h2>
 * The kernel's constants, with units and reasons, are in
 * {@link io.iotarget.iocontrol.policy.cost.CostTunables}; the knobs are io.cost.qos (rpct,
 * rlat, wpct, wlat, min, max), io.cost.model and io.weight. The system property
 * {@value io.iotarget.iocontrol.policy.IoPolicy#DEBUG_STATS_PROPERTY}{@code =true}
 * adds the kernel's debug fields to io.stat, as the blkcg_debug_stats module parameter does.
 *
 * <h2>10. What to watch</h2>
 * <ul>
 *   <li>io.stat, root line: {@code cost.vrate=} — far above 100% means the model underrates
 *       the device (or nobody saturates it); far below, it overrates it.</li>
 *   <li>io.stat, every line: {@code cost.usage=} — µs of device time used, as vrate paces the
 *       device; with debug stats also {@code cost.wait=}, {@code cost.indebt=},
 *       {@code cost.indelay=} (µs with waiters, in debt, delayed).</li>
 *   <li>{@link io.iotarget.iocontrol.policy.cost.CostCounter} per device
 *       ({@code IoController.policyCounters}): requests waiting for budget now, and ever; and
 *       why vrate moves, per period (section 6): periods ended, busy by rq_wait, by read or by
 *       write latency, lagging, vrate lowered or raised at their end, and the busy level now
 *       (the kernel's {@code iocost_ioc_vrate_adj} tracepoint, counted; docs/metrics.md).</li>
 *   <li>Without latency targets, a group alone whose queue depth fits the device's never
 *       makes requests wait for a slot, so vrate climbs while it is throttled; when a sibling
 *       returns, vrate needs several periods (1% steps after 3 periods) to come back and the
 *       shares are off meanwhile. Latency targets (wpct/wlat) let the loop see saturation
 *       directly.</li>
 *   <li>Shares apply between groups that compete: a group that cannot use its share (it is
 *       latency-bound with few requests outstanding, or capped by io.max) donates it.</li>
 * </ul>
 *
 * <h2>11. Reading the code</h2>
 * <ul>
 *   <li>{@link io.iotarget.iocontrol.policy.cost.CostDevice}: the kernel's {@code ioc} — the
 *       device clock, activation, the IO path, waiting and debt, the timers (sections 1, 3,
 *       4). Its methods carry the kernel's function names.</li>
 *   <li>{@link io.iotarget.iocontrol.policy.cost.PeriodLoop}: section 6, what a period's end
 *       does ({@code ioc_timer_fn}), with the QoS samples, the busy level and debt
 *       forgiveness; its decisions are functions of numbers ({@code PeriodLoopTest}).</li>
 *   <li>{@link io.iotarget.iocontrol.policy.cost.Debts}: section 4's debt — incurred by a
 *       request that must not wait, paid from the budget — and the issuer delay it brings.</li>
 *   <li>{@link io.iotarget.iocontrol.policy.cost.HierarchicalWeights}: sections 2 and 5's
 *       arithmetic ({@code propagate_weights}, {@code current_hweight},
 *       {@code transfer_surpluses}), on the {@link io.iotarget.iocontrol.policy.cost.CostGroup}
 *       nodes, the kernel's {@code ioc_gq}.</li>
 *   <li>{@link io.iotarget.iocontrol.policy.cost.Minimums}: section 12, io.min's tags, what
 *       they take off the device clock, and their scale.</li>
 *   <li>Time: nothing here reads a clock; every entry point of {@code CostDevice} gets the
 *       engine's {@code nowNs}. Those that use the device clock — admit, the timers
 *       ({@code releaseDue}), an io.weight change, a group removed, a cancel — turn it once
 *       into a {@link io.iotarget.iocontrol.policy.cost.DeviceNow} (ns, µs and vnow, the
 *       kernel's {@code struct ioc_now}) and pass that to every method that needs the time,
 *       as the kernel passes {@code now}; a completion and the io.cost.* writes need only
 *       {@code nowNs}, as the kernel's reads its clock there. No method reads the time from a
 *       field (the device reuses one {@code DeviceNow}, so as to allocate nothing, and only
 *       the entry points fill it).</li>
 * </ul>
 *
 * <h2>12. Guaranteed minimums (io.min)</h2>
 * io.max is a ceiling and io.weight a share: neither promises a tenant anything when a
 * neighbour floods the device. io.min ({@code MAJ:MIN rbps=N wbps=N riops=N wiops=N}, 0 =
 * none) does: a group gets its minimum whenever it asks for it, whatever its siblings' weights
 * and demand, as long as the device (as iocost's model and vrate see it) can deliver it. The
 * design is dmClock's (mClock, Gulati et al., OSDI 2010; Ceph's dmclock): a reservation tag per
 * client served before the weights, with iocost's device clock as the capacity
 * ({@link io.iotarget.iocontrol.policy.cost.Minimums}).
 * <ol>
 *   <li><b>Tags.</b> Each (group, device, direction) with a minimum has a tag, the time its next
 *       request may go on it. A request of {@code len} bytes moves the tag on by its interval,
 *       {@code min(⌈10^9 / iops⌉, ⌈len · 10^9 / bps⌉)} ns (either minimum is met: {@code riops=3000
 *       rbps=40960000} is at least 3000 reads/s or 40 MB/s, whichever is more), from at most a
 *       timer slack (1% of the period) ago: a request released a little late loses nothing, an
 *       idle group banks nothing more. A request may go on the minimums when some group from
 *       its own up to the root's child has a minimum for its direction and every such group's
 *       tag has come: a parent's minimum covers its children and bounds theirs together, as
 *       io.max's limits nest. A child's own minimum comes first: below it, the parent's tag may
 *       run one interval and a timer slack ahead (t {@code riops=5000} with y {@code riops=4000}
 *       and x without: y 4000, x 1000, whoever asks first). This is checked first (dmClock's
 *       constraint phase), on admission and for the head of the group's FIFO; a waiter's timer
 *       is set to its tag to the ns.</li>
 *   <li><b>Capacity.</b> A request on a minimum does not advance its group's vtime: its absolute
 *       cost comes off the device clock instead (vnow moves back by it), so every active group's
 *       budget loses it in proportion to its hweight, and the weights share exactly what the
 *       minimums leave. Donation looks at what a group used beyond its minimum. io.max still
 *       caps (it runs first); io.latency is untouched.</li>
 *   <li><b>Overcommit.</b> A minimum claims the device time of its requests over their interval:
 *       {@code ⌈absCost · 1000 / vrate⌉} ns per request (vrate in vtime per µs) over the interval,
 *       in ppm. The claims of the groups that count — a minimum, no ancestor with one, requests
 *       on it this period or the last — add up to S. A group none of whose requests waited for
 *       its tag in a period asked for less than its minimum and claims only what it used (so
 *       a quiet minimum does not shrink the others). While S &gt; 10^6 every interval is
 *       stretched by S / 10^6: each group gets the same fraction, 10^6 / S, of its minimum
 *       (iotarget.io.stat's {@code min_pct}). When vrate falls, requests cost more device time,
 *       the claims grow, and the minimums follow the device.</li>
 * </ol>
 * Worked example, as {@code MinimumsSimulationTest} runs it: io.cost.model {@code rbps=40960000
 * rseqiops=10000 rrandiops=10000}, vrate pinned at 100% ({@code min=100 max=100}): a 4 KiB read
 * costs ⌈2^37 / 10000⌉ = 13743896 vtime, ⌈13743896 · 1000 / 137438⌉ = 100001 ns of device;
 * the device does 10,000 a second. Every group floods with 4 KiB reads at queue depth 32.
 * <ul>
 *   <li>a {@code riops=3000} (weight 1) against b (weight 1000): a's interval ⌈10^9 / 3000⌉ =
 *       333334 ns, its claim ⌈100001 · 10^6 / 333334⌉ = 300003 ppm, which fits. a's 3000
 *       reads/s take 30% of vnow; the weights share the other 7000: a ⌊65536 / 1001⌋ = 65 of
 *       65536 (7 reads/s), b the rest. a gets 3007 reads/s, b 6993 (measured: 3006.8, 6993.0).</li>
 *   <li>a {@code riops=8000} and b {@code riops=6000}: claims ⌈100001 · 10^6 / 125000⌉ = 800008
 *       and ⌈100001 · 10^6 / 166667⌉ = 600005, S = 1400013: the intervals become ⌈125000 ·
 *       1.400013⌉ = 175002 and ⌈166667 · 1.400013⌉ = 233336 ns, 5714.2 and 4285.7 reads/s, 8/14
 *       and 6/14 of the device; min_pct = ⌊10^12 / 1400013⌋ = 714279 ppm, shown 71.42. Their
 *       reads take all of vnow, so their weights add nothing.</li>
 *   <li>t {@code riops=5000} (weight 1) with children x (none) and y {@code riops=4000}, against
 *       c (weight 1000): y 4000, x 1000; the weights share the 5000 left, t 1/1001 of it (5 a
 *       second, split by x and y), c the rest: x 1002.5, y 4002.5, c 4995 (measured: 1002.5,
 *       4002.5, 4995.8).</li>
 *   <li>a {@code riops=3000} alone: 3000 on its minimum and, at hweight 1, the 7000 left by
 *       weight: the whole device (work conserving). A group with {@code riops=8000} that reads
 *       nothing leaves b (no minimum) the whole device.</li>
 * </ul>
 * Not Linux: the kernel has no io.min for block IO. blk-throttle's io.low
 * (CONFIG_BLK_DEV_THROTTLING_LOW, removed from the kernel) was a best-effort low limit: it held
 * every group to its io.low until all of them reached theirs, then let them up to io.max; it
 * promised nothing while a sibling without io.low flooded. io.min needs iocost set up on the
 * device (EOPNOTSUPP otherwise), since the model is the capacity; it does nothing while iocost
 * is disabled. Watch iotarget.io.stat's {@code min_pct} (below 100.00: the minimums in use
 * claim more than the device) and {@code min_ios} (requests that went on a minimum), and the
 * time requests waited for their tag in {@code cost_usec}. Like the weights, minimums hold only
 * while the device keeps up with vnow: a model that overrates the device with vrate pinned
 * leaves a standing queue in the device, which serves requests in arrival order whatever
 * iocost decided; let the QoS loop find vrate (latency targets) instead.
 *
 * <p>Threads: all state of a device lives under the device's lock (the kernel's ioc lock and
 * waitq locks in one); io.stat and the io.cost.* reads take published snapshots.
 */
package io.iotarget.iocontrol.policy.cost;
