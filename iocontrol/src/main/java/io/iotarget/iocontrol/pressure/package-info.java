/**
 * io.pressure: PSI for IO, per group, on a target that has no tasks.
 *
 * <h2>1. The problem</h2>
 * io.stat says how much a tenant moved; it does not say how much it was held back. The kernel's
 * pressure stall information does: the share of wall time in which some task of a cgroup was
 * stalled on IO ({@code some}), or all of its non-idle tasks at once ({@code full}), as
 * decaying averages over 10, 60 and 300 s and a total in microseconds. A target has no tasks,
 * only tenant queues that it may hold.
 *
 * <h2>2. Definitions</h2>
 * <ul>
 *   <li>A <b>task</b> is a tenant queue in one group ({@link io.iotarget.iocontrol.pressure.TenantQueue}):
 *       an NBD connection, an NVMe/TCP IO queue (once per group its namespaces charge), a
 *       volume opened with a group. Requests carry it ({@code IoRequest.queue}).</li>
 *   <li>A queue is <b>stalled</b> while at least one of its commands waits in a policy (parked by
 *       io.max, io.latency's depth or iocost's budget: {@code PolicyChain} reports each park
 *       and each release), or while it owes an issuer delay (io.latency's use_delay, iocost's
 *       debt: whether its front end pauses input or the engine holds the completion).</li>
 *   <li>A queue is <b>non-idle</b> while it has commands outstanding or is stalled, and
 *       <b>productive</b> while non-idle and not stalled.</li>
 *   <li>A group is in <b>SOME</b> while at least one queue of it or of its descendants is stalled,
 *       and in <b>FULL</b> while in SOME with no productive queue there (the kernel's
 *       {@code NR_IOWAIT && !NR_RUNNING}, counted hierarchically as cgroup PSI counts).</li>
 * </ul>
 *
 * <h2>3. Counting, and what it costs</h2>
 * <ol>
 *   <li>Each queue keeps two atomic counters, commands outstanding and commands parked. The IO
 *       path steps them; only a 0↔1 change can change what the queue is, and then the tracker
 *       ({@link io.iotarget.iocontrol.pressure.Pressure}, one lock per tree) re-counts it into
 *       every group up to the root ({@link io.iotarget.iocontrol.pressure.PressureGroup}).</li>
 *   <li>FULL needs the productive queues, and a queue at depth 1 goes busy and idle with every
 *       command. So the busy/idle changes are reported only while the tracker is <b>armed</b>:
 *       from the first stall (which counts every busy queue once) until a whole period passes
 *       with no stall. With nothing held, a command costs two atomic steps on its own queue.</li>
 *   <li>Issuer delays end by themselves: the tracker keeps their end times and applies each,
 *       at the time it ended, before anything later.</li>
 * </ol>
 *
 * <h2>4. Averages: the kernel's arithmetic, exact periods</h2>
 * Every {@code PERIOD_NS} (PSI_FREQ, 2*HZ+1 jiffies: 2.004 s at HZ=250) of a group's own clock,
 * which starts at its first event, the period's share of SOME and FULL time updates
 * {@code avg = calc_load(avg, EXP, pct)} with EXP_10s/60s/300s = 1677/1981/2034 (of 2048). A
 * group's state is constant between two of its changes, so whenever it is touched or read the
 * time since its last change is split at each boundary and every period gets exactly its stall
 * time; periods with no stall are zero-filled at once ({@code calc_load_n}), as the kernel fills
 * the periods its worker slept through. Averages thus move every 2 s, totals at once.
 * <p>Worked example: one volume held by {@code riops=1000} at QD32 always has 31 commands parked:
 * SOME and FULL from its first park. After 5 periods avg10 reads 63.18 (100 × (1 − (1677/2048)^5)
 * in fixed point), after 12 periods 90.91; {@code total} is the time since the first park. An
 * unthrottled sibling reads 0.00 and total=0; their parent reads the held one's SOME, and FULL
 * only while the sibling has nothing outstanding.
 *
 * <h2>5. Triggers</h2>
 * {@link io.iotarget.iocontrol.pressure.Trigger}: {@code some|full <stall us> <window us>} as
 * psi_trigger_create reads it (window 500 ms..10 s, stall 1 µs..window, EINVAL otherwise),
 * polled every window/10 by whoever waits for it, firing as update_triggers does: growth over a
 * sliding window interpolated from the previous one, at most one event per window. Removing the
 * group ends its triggers: the watcher sees {@code groupRemoved()} at its next poll and reports
 * ENODEV, where the kernel's poll returns POLLERR.
 *
 * <h2>6. Watch</h2>
 * The root's numbers (every queue of the server), a stall that no policy causes (a slow backend
 * is not pressure here, only holding is), and {@code Pressure.triggerCount()}.
 */
package io.iotarget.iocontrol.pressure;
