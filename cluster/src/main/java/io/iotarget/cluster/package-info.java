/**
 * Scale-out: one tenant's limit held across several iotarget nodes (issue 13, docs/cluster.md).
 *
 * <h2>1. Local enforcement, a share per node</h2>
 * A tenant is a group path; the same path on every node is the same tenant, and a device is
 * known by its backend's name. A group's {@code io.max.global} holds the limit all nodes hold
 * together, in io.max's syntax. No IO waits for the network: each node enforces its
 * <em>share</em> of each global limit with io.max's own buckets (the smaller of io.max and
 * the share, {@code iocontrol.policy.throttle}, section 8). The {@link
 * io.iotarget.cluster.Coordinator} moves the shares once per {@code interval_ms}.
 *
 * <h2>2. One exchange per interval, rebalanced in the store</h2>
 * Each interval a node reads io.stat of every group with a global limit, turns the counters'
 * growth into a rate per limit (rbps from rbytes, wbps from wbytes, riops from rios, wiops
 * from wios) and reports a <em>demand</em>: the whole global limit when it used at least
 * {@code SATURATED_PCT} (90 %) of its share (it would take more), else its use plus a quarter
 * ({@code HEADROOM_PCT}), so that a node below its share is not taken for a saturated one
 * next time, together with the share it enforces now. The store records the demand with a
 * lease and answers the share, atomically for all of the node's limits: in etcd
 * ({@link io.iotarget.cluster.EtcdShareStore}) a read at one revision, the same computation in Java, and a transaction that writes only if
 * no entry changed since:
 * <ol>
 *   <li>entries whose lease ran out (a node that stopped reporting) are dropped, so their share
 *       goes to the others;</li>
 *   <li>every configured node keeps a floor of limit / nodes / 20, live or not, so an idle or
 *       starting node can start at once; a node holds its floor from its start (or from a new
 *       io.max.global) until its first answer;</li>
 *   <li>the rest is water-filled: wants (demand − floor) are met smallest first, at most an even
 *       split of what remains each; what is left over is spread evenly;</li>
 *   <li>the answer is at most the limit minus what the other live nodes may hold. The store
 *       counts for a node the larger of its last answer and the share the node said it held
 *       then: an answer may reach the node late or never (an exchange that timed out after
 *       the store applied it), and until the node says it applied one, it may still enforce the
 *       share before. So no more than the limit is ever enforced in sum. A node whose share
 *       must shrink applies the answer at once, and the store counts it at the node's next
 *       exchange; the node that grows takes it at its own next one, within three intervals.</li>
 * </ol>
 * Leases run on the store's clock (etcd's leases), so the nodes' clocks
 * need not agree. etcd's leases are whole seconds, and it removes expired ones every 500 ms: an
 * entry goes up to half a second after its lease.
 *
 * <h2>2a. Membership and the fence</h2>
 * {@link io.iotarget.cluster.Membership} keeps a lease per node life and a
 * {@link io.iotarget.cluster.Fence} that is false before the store can expire it (docs/ha.md).
 *
 * <h2>3. Without the store</h2>
 * A failed exchange keeps the shares: they still add up to at most the limit. At the last
 * interval before its lease runs out (the store drops its entry then) the node holds
 * limit / nodes (a fallback, counted), which holds the limit during a partition of the store
 * from everyone. When the
 * store answers again but no longer knew the node (the node's entry expired), the others' holdings it reports are incomplete: for one lease the node
 * does not grow above what it held when it came back (or limit / nodes, which it would hold
 * without the store, if that is more: a node just started holds only its floor), by which
 * time every live node has reported again.
 *
 * <h2>4. Worked example</h2>
 * riops=9000 global, 3 nodes, interval 200 ms, lease 1000 ms. Floors are 150. All three
 * saturated: each demands 9000, wants 8850, the rest (8550) splits 2850 each: 3000 each. Only
 * node 1 loaded: it wants 8850, the others want 0: node 1 gets 150 + 8550 = 8700 (96.7 %),
 * the others 150. The store dies: every node keeps its share until 800-1000 ms after its last
 * exchange (the last interval before its lease ends), then holds 3000: at most 9000 together. Node 3 dies: after its lease its entry is dropped and nodes 1
 * and 2 split the limit but node 3's floor: 4425 each.
 *
 * <h2>5. What it does not guarantee</h2>
 * A node cut off from the store while the others still reach it holds limit / nodes while
 * the store has dropped its entry, so the others may hold the whole limit: the sum may reach
 * limit × (1 + 1/nodes) for as long as that partition lasts; a node whose exchanges keep
 * timing out (a store slower than {@code interval_ms}) is such a partition. A node starting
 * while the store cannot be reached holds its floor, then limit / nodes once the lease would
 * have run out: the same.
 *
 * <h2>6. Watch</h2>
 * /metrics: every tenant limit's share, demand and global limit, the store's round-trip time,
 * exchanges and failures, fallbacks and whether the node is in one (docs/metrics.md).
 */
package io.iotarget.cluster;
