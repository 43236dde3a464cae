package io.iotarget.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.model.Clock;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * This node's membership of a gateway group ({@code cluster.group}): the nodes that serve the
 * {@code shared} NVMe subsystems together (docs/ha.md, "Gateway groups").
 *
 * <h2>1. The group in etcd</h2>
 * <pre>
 *  /iotarget/groups/GROUP/members/NODE   {"node","lease","cntlid_min","cntlid_max","ana_groups":[...]}   on NODE's membership lease
 *  /iotarget/groups/GROUP/ranges/SLOT    {"node":NODE}   controller-ID range SLOT (SLOT*1000+1 .. SLOT*1000+1000), no lease
 *  /iotarget/groups/GROUP/owners/GRPID   {"node":OWNER} or, while a move is under way, {"node":OWNER,"to":NEXT}
 *  /iotarget/groups/GROUP/pins/GRPID     NODE: the operator's choice of owner for ANA group GRPID
 * </pre>
 * A member key exists exactly while its node's membership lease lives in etcd ({@link
 * Membership}): it is put on that lease at every (re-)join. {@code ana_groups} lists the ANA
 * groups of the node's shared namespaces.
 *
 * <h2>2. Controller-ID ranges</h2>
 * At {@link #join} a node takes the slot that already names it (the same range across its
 * restarts), else the lowest slot nobody holds (a compare-and-swap on the slot key's absence),
 * else — all {@link #SLOTS} taken — a slot whose owner has no member key, compared absent in the
 * same transaction, so a range is never taken from a node whose lease lives. The node puts its
 * member key before it takes a slot, so a node that holds a slot and is running always has one.
 *
 * <h2>3. ANA group owners</h2>
 * The groups are the union of the members' {@code ana_groups}. One member decides: the live
 * member whose name sorts first (the <em>leader</em>; any member's compare-and-swap would be safe,
 * one decider keeps moves to one per interval). Each interval it reads the group at one revision
 * and writes, if neither the members nor the owners changed since (a compare on their prefixes).
 * First it fences at the storage ({@link StorageFence}) every member whose lease ended — a node a
 * controller-ID range names that has no member key — once per end of its lease, whether it owned
 * ANA groups or not: a host may have sent it a write on a non-optimized path, and a member that
 * was paused with one could land it after the host, timed out, wrote newer data elsewhere. Then:
 * <ol>
 *   <li><b>failover</b>: a group without an owner, or whose owner has no member key (its lease is
 *       gone from etcd: by its {@link Fence} it stopped before), gets the least-loaded live member
 *       that serves it (its pin, if live) at once, every such group in one transaction — once
 *       the dead owner's clients are fenced at the storage ({@link StorageFence}: Ceph's
 *       blocklist), so that a write it had passed its own fence with cannot land after the new
 *       owner serves;</li>
 *   <li><b>rebalance</b>: otherwise, with no move under way, at most one move: a pinned group to
 *       its live pin, else one group from the member with the most to the one with the fewest,
 *       when they differ by two or more. A move is a <em>handover</em>: the leader writes
 *       {@code {"node":OLD,"to":NEW}}; OLD stops presenting the group optimized on its ports
 *       (and its controllers get the ANA change AEN), <em>then</em> writes {@code {"node":NEW}}
 *       (a compare-and-swap on the key's revision); NEW presents it optimized only when it reads
 *       that. If OLD dies meanwhile, the leader completes the move once OLD's member key is gone
 *       (as in 1); if NEW dies, the leader cancels it.</li>
 * </ol>
 *
 * <h2>4. What a node presents</h2>
 * Each interval every member reads the group (a linearizable range) and presents optimized the
 * groups whose owner key names it with no move under way, non-optimized every other group it
 * serves ({@link Local#present}). While its fence does not hold it presents none optimized: the
 * loop wakes at the fence's deadline for that, which comes before the store can expire the lease,
 * so before any other member can take its groups: a thread of its own sleeps until the deadline
 * and presents nothing optimized then, whatever the loop is doing (a store call may block it for a
 * timeout), and every presentation checks the fence under the same lock. What remains is that
 * thread's scheduling delay, milliseconds against the margin and etcd's expiry sweep; and it
 * is a path preference, not a safety matter: IO on namespaces with reservations is fenced per
 * command.
 *
 * <p>Threads: the loop (store calls, the leader's decisions) and the fence's thread, both calling
 * {@link Local#present} under {@code this}. {@link #view}, {@link #range} and the accessors: any thread.
 */
public final class GatewayGroup implements AutoCloseable {
    /** Every group's keys live under PREFIX + GROUP + "/". */
    public static final String PREFIX = "/iotarget/groups/";
    /** Controller ids per node: a slot's range. nvmet's cntlids are 1..0xFFEF. */
    public static final int RANGE_SIZE = 1000;
    /** Slots of {@link #RANGE_SIZE} within 1..65519: 65 nodes at most per group. */
    public static final int SLOTS = 65519 / RANGE_SIZE;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final System.Logger LOG = System.getLogger(GatewayGroup.class.getName());

    /** What the group needs of this node's NVMe target. Called on the group's thread. */
    public interface Local {
        /** The ANA group ids of this node's namespaces of shared subsystems. */
        Set<Integer> anaGroups();

        /**
         * Present the groups of {@code optimized} optimized on this node's ports of shared
         * subsystems, and the other groups of {@code served} non-optimized, telling the controllers
         * whose state changed (ANA change AEN). Called again with the same sets every interval (ports
         * made since get them): write only what differs.
         */
        void present(Set<Integer> served, Set<Integer> optimized);
    }

    /** A member as the group's keys say: its lease, controller-ID range and the ANA groups it serves and owns. */
    public record MemberView(String node, long lease, int cntlidMin, int cntlidMax, SortedSet<Integer> serves, SortedSet<Integer> owns) {
    }

    /** An ANA group's owner ({@code next} non-null while a move to it is under way) and pin (or null). */
    public record Owner(int grpid, String node, String next, String pin) {
    }

    /** The group as read at one revision. */
    public record View(long revision, Map<String, MemberView> members, Map<Integer, Owner> owners) {
        static final View EMPTY = new View(0, Map.of(), Map.of());
    }

    private final EtcdClient client;
    private final Membership membership;
    private final String group;
    private final String node;
    private final long intervalNs;
    private final Clock clock;
    private final Local local;
    private final Thread thread;
    private final Thread fenceThread;
    private volatile boolean running = true;

    /** This node's slot; -1 until taken. Written once by {@link #start}. */
    private volatile int slot = -1;
    /** The last view read; published by the loop thread. */
    private volatile View view = View.EMPTY;
    /** What was last presented (null: nothing yet). Under {@code this}: the loop and the fence's thread present. */
    private Set<Integer> presentedServed;
    private Set<Integer> presentedOptimized;
    /** The lease and value the member key was last put with. Loop thread. */
    private long putLease;
    private String putValue;
    /** Moves and failovers this node made as the leader; handovers it gave up as the old owner. */
    private volatile long moves;
    private volatile long failovers;
    private volatile long handovers;

    /** Fences a dead member's clients at the storage before a failover ({@link #fenceStorageWith}). */
    private volatile StorageFence storageFence = StorageFence.NONE;
    /**
     * Members whose lease ended that this node fenced at the storage as the leader, until it sees
     * them live again; those it warned it could not fence. Loop thread. A new leader (or this one
     * restarted) starts empty and fences each dead member once more: blocklisting is idempotent.
     */
    private final Set<String> fencedGone = new TreeSet<>();
    private final Set<String> unfenceable = new TreeSet<>();

    /**
     * Sets how a member whose lease ended is fenced at the storage before its groups get new
     * owners (serve: Ceph's blocklist, docs/rbd.md); {@link StorageFence#NONE} until then. Before {@link #start}.
     */
    public void fenceStorageWith(StorageFence fence) {
        this.storageFence = java.util.Objects.requireNonNull(fence);
    }

    /**
     * @param membership this node's membership (its lease carries the member key; its fence decides what is presented)
     * @param interval   how often the group is read and decided, in ns
     */
    public GatewayGroup(EtcdClient client, Membership membership, String group, long intervalNs, Clock clock, Local local) {
        this.client = client;
        this.membership = membership;
        this.group = group;
        this.node = membership.node();
        this.intervalNs = intervalNs;
        this.clock = clock;
        this.local = local;
        this.thread = Thread.ofPlatform().daemon().name("iotarget-gateway-group").unstarted(this::loop);
        this.fenceThread = Thread.ofPlatform().daemon().name("iotarget-gateway-fence").unstarted(this::watchFence);
    }

    private String base() {
        return PREFIX + group + "/";
    }

    public String group() {
        return group;
    }

    public String node() {
        return node;
    }

    /** The first controller id of slot {@code slot}. */
    public static int cntlidMin(int slot) {
        return slot * RANGE_SIZE + 1;
    }

    public static int cntlidMax(int slot) {
        return slot * RANGE_SIZE + RANGE_SIZE;
    }

    /** This node's controller-ID range {min, max}; null before {@link #start} took it. Any thread. */
    public int[] range() {
        int s = slot;
        return s < 0 ? null : new int[] {cntlidMin(s), cntlidMax(s)};
    }

    /** How many members are live as last read (at least 1: this one). Any thread. */
    public int liveMembers() {
        return Math.max(1, view.members().size());
    }

    /** The group as last read (members, their ranges, owners, pins). Any thread. */
    public View view() {
        return view;
    }

    public long moves() {
        return moves;
    }

    public long failovers() {
        return failovers;
    }

    public long handovers() {
        return handovers;
    }

    /**
     * Joins: waits for the membership's lease, puts the member key and takes a controller-ID
     * range (section 2); returns it, {min, max}. {@link #start} then starts the loop.
     *
     * @throws IOException the store did not answer before {@code timeoutNs}, or every slot is held by a live node
     */
    public int[] join(long timeoutNs) throws IOException {
        long deadline = clock.nanoTime() + timeoutNs;
        IOException last = null;
        while (clock.nanoTime() - deadline < 0) {
            long lease = membership.fence().lease();
            if (lease == 0 || !membership.fence().holds()) {
                LockSupport.parkNanos(Membership.RETRY_NS);
                continue;
            }
            try {
                putMember(lease);
                int taken = takeSlot();
                if (taken >= 0) {
                    slot = taken;
                    putMember(lease);
                    EtcdClient.Range now = client.range(base());
                    view = parse(now.revision(), read(now));
                    LOG.log(System.Logger.Level.INFO, "cluster: " + node + " joined gateway group " + group + " with controller ids "
                                                      + cntlidMin(taken) + ".." + cntlidMax(taken));
                    return range();
                }
                last = new IOException("every controller-ID range (" + SLOTS + ") is held by a live member of group " + group);
            } catch (IOException e) {
                last = e;
            }
            LockSupport.parkNanos(Membership.RETRY_NS);
        }
        throw new IOException("could not join gateway group " + group + ": " + (last == null ? "no membership lease" : last.getMessage()), last);
    }

    /** Starts deciding and presenting, once the target's config is in place ({@link #join} first). */
    public void start() {
        if (slot < 0) throw new IllegalStateException("join first");
        thread.start();
        fenceThread.start();
    }

    /** Section 2: the slot to use, or -1 when all are held by live nodes; IOException when the store failed. */
    private int takeSlot() throws IOException {
        for (int attempt = 0; attempt < 10; attempt++) {
            Map<String, EtcdClient.KeyValue> keys = read();
            Integer free = null;
            Integer reclaimable = null;
            long reclaimRevision = 0;
            String reclaimOwner = null;
            for (int s = 0; s < SLOTS; s++) {
                EtcdClient.KeyValue kv = keys.get(base() + "ranges/" + s);
                if (kv == null) {
                    if (free == null) free = s;
                    continue;
                }
                String owner = text(kv, "node");
                if (node.equals(owner)) return s;
                if (reclaimable == null && owner != null && !keys.containsKey(base() + "members/" + owner)) {
                    reclaimable = s;
                    reclaimRevision = kv.modRevision();
                    reclaimOwner = owner;
                }
            }
            byte[] mine = JSON.createObjectNode().put("node", node).toString().getBytes(StandardCharsets.UTF_8);
            if (free != null) {
                String key = base() + "ranges/" + free;
                if (client.txn(List.of(EtcdClient.Compare.absent(key)), List.of(new EtcdClient.Put(key, mine, 0)), List.of()) >= 0) return free;
            } else if (reclaimable != null) {
                String key = base() + "ranges/" + reclaimable;
                if (client.txn(List.of(EtcdClient.Compare.unchanged(key, reclaimRevision), EtcdClient.Compare.absent(base() + "members/" + reclaimOwner)),
                               List.of(new EtcdClient.Put(key, mine, 0)), List.of()) >= 0) {
                    LOG.log(System.Logger.Level.WARNING, "cluster: " + node + " took controller ids " + cntlidMin(reclaimable) + ".." + cntlidMax(reclaimable)
                                                         + " from " + reclaimOwner + ", which is not a live member (every range was held)");
                    return reclaimable;
                }
            } else {
                return -1;
            }
        }
        throw new IOException("the controller-ID ranges kept changing (10 tries)");
    }

    /** Every key of the group, by key. */
    private Map<String, EtcdClient.KeyValue> read() throws IOException {
        return read(client.range(base()));
    }

    private static Map<String, EtcdClient.KeyValue> read(EtcdClient.Range range) {
        Map<String, EtcdClient.KeyValue> keys = new TreeMap<>();
        for (EtcdClient.KeyValue kv : range.kvs()) keys.put(kv.key(), kv);
        return keys;
    }

    private static String text(EtcdClient.KeyValue kv, String field) {
        try {
            JsonNode v = JSON.readTree(kv.valueText());
            return v.hasNonNull(field) ? v.get(field).asText() : null;
        } catch (IOException e) {
            return null;
        }
    }

    /** Puts this node's member key on {@code lease} when it or its content changed. */
    private void putMember(long lease) throws IOException {
        ObjectNode v = JSON.createObjectNode().put("node", node).put("lease", Long.toHexString(lease));
        int s = slot;
        if (s >= 0) v.put("cntlid_min", cntlidMin(s)).put("cntlid_max", cntlidMax(s));
        var groups = v.putArray("ana_groups");
        for (int g : new TreeSet<>(local.anaGroups())) groups.add(g);
        String value = v.toString();
        if (lease == putLease && value.equals(putValue)) return;
        client.put(base() + "members/" + node, value.getBytes(StandardCharsets.UTF_8), lease);
        putLease = lease;
        putValue = value;
    }

    private void loop() {
        while (running) {
            long nowNs = clock.nanoTime();
            step(nowNs);
            long waitNs = nowNs + intervalNs - clock.nanoTime();
            if (waitNs > 0) LockSupport.parkNanos(waitNs);
        }
    }

    /**
     * The fence's thread: at the deadline, presents nothing optimized (section 4), whatever the
     * loop thread is doing then (a store call may block it for a timeout).
     */
    private void watchFence() {
        while (running) {
            Fence fence = membership.fence();
            long nowNs = clock.nanoTime();
            if (!fence.holds(nowNs)) {
                synchronized (this) {
                    if (presentedServed != null && !presentedOptimized.isEmpty()) present(presentedServed, Set.of(), false);
                }
                LockSupport.parkNanos(intervalNs);
            } else {
                LockSupport.parkNanos(Math.min(intervalNs, fence.validUntilNs() - nowNs + 1));
            }
        }
    }

    /** One interval: present nothing optimized while fenced; else read, decide (leader), give up handovers, present. */
    void step(long nowNs) {
        Fence fence = membership.fence();
        long lease = fence.lease();
        if (!fence.holds(nowNs) || lease == 0) {
            synchronized (this) {
                present(presentedServed == null ? local.anaGroups() : presentedServed, Set.of(), false);
            }
            return;
        }
        try {
            putMember(lease);
            EtcdClient.Range range = client.range(base());
            Map<String, EtcdClient.KeyValue> keys = read(range);
            View now = parse(range.revision(), keys);
            view = now;
            fencedGone.removeAll(now.members().keySet());                  // live again: a later end of its lease is fenced anew
            unfenceable.removeAll(now.members().keySet());
            if (leader(now)) decide(now, keys, range.revision(), fenceGone(now, keys));
            handOver(now, keys);
            Set<Integer> served = new TreeSet<>(local.anaGroups());
            Set<Integer> optimized = new TreeSet<>();
            for (Owner o : now.owners().values()) if (node.equals(o.node()) && o.next() == null && served.contains(o.grpid())) optimized.add(o.grpid());
            present(served, optimized, true);                               // checks the fence again: the read took time
        } catch (IOException | RuntimeException e) {
            // The store failed: what is presented stays until the fence's deadline (then nothing optimized).
            LOG.log(System.Logger.Level.DEBUG, "cluster: gateway group " + group + ": " + e.getMessage());
        }
    }

    /**
     * Presents {@code optimized} only while the fence holds (checked under the lock the fence's
     * thread takes). {@code again}: even if unchanged, so that ports made since get the states.
     */
    private synchronized void present(Set<Integer> served, Set<Integer> optimized, boolean again) {
        if (!optimized.isEmpty() && !membership.fence().holds(clock.nanoTime())) optimized = Set.of();
        if (!again && served.equals(presentedServed) && optimized.equals(presentedOptimized)) return;
        local.present(Collections.unmodifiableSet(new TreeSet<>(served)), Collections.unmodifiableSet(new TreeSet<>(optimized)));
        presentedServed = Set.copyOf(served);
        presentedOptimized = Set.copyOf(optimized);
    }

    /** The group's keys as members and owners. */
    View parse(long revision, Map<String, EtcdClient.KeyValue> keys) {
        Map<String, MemberView> members = new TreeMap<>();
        Map<Integer, String[]> owners = new TreeMap<>();
        Map<Integer, String> pins = new TreeMap<>();
        for (EtcdClient.KeyValue kv : keys.values()) {
            String rest = kv.key().substring(base().length());
            int slash = rest.indexOf('/');
            if (slash < 0) continue;
            String kind = rest.substring(0, slash);
            String name = rest.substring(slash + 1);
            try {
                switch (kind) {
                    case "members" -> {
                        JsonNode v = JSON.readTree(kv.valueText());
                        SortedSet<Integer> serves = new TreeSet<>();
                        for (JsonNode g : v.path("ana_groups")) serves.add(g.asInt());
                        members.put(name, new MemberView(name, kv.lease(), v.path("cntlid_min").asInt(0), v.path("cntlid_max").asInt(0),
                                                         Collections.unmodifiableSortedSet(serves), new TreeSet<>()));
                    }
                    case "owners" -> owners.put(Integer.parseInt(name), new String[] {text(kv, "node"), text(kv, "to")});
                    case "pins" -> pins.put(Integer.parseInt(name), kv.valueText().strip());
                    default -> { }
                }
            } catch (IOException | RuntimeException e) {
                // not ours: ignored
            }
        }
        Map<Integer, Owner> result = new TreeMap<>();
        SortedSet<Integer> groups = new TreeSet<>(pins.keySet());
        groups.addAll(owners.keySet());
        for (int g : groups) {
            String[] o = owners.getOrDefault(g, new String[2]);
            result.put(g, new Owner(g, o[0], o[1], pins.get(g)));
            MemberView m = o[0] == null ? null : members.get(o[0]);
            if (m != null && o[1] == null) m.owns().add(g);
        }
        Map<String, MemberView> frozen = new TreeMap<>();
        for (MemberView m : members.values()) {
            frozen.put(m.node(), new MemberView(m.node(), m.lease(), m.cntlidMin(), m.cntlidMax(), m.serves(), Collections.unmodifiableSortedSet(m.owns())));
        }
        return new View(revision, Collections.unmodifiableMap(frozen), Collections.unmodifiableMap(result));
    }

    private boolean leader(View v) {
        return !v.members().isEmpty() && v.members().keySet().iterator().next().equals(node);
    }

    /**
     * A change the leader writes: the owner key of each group to its new value; {@code dead}: the
     * former owners of the groups that fail over, fenced at the storage first.
     */
    record Decision(Map<Integer, String> values, int failovers, int moves, Set<String> dead) {
        Decision(Map<Integer, String> values, int failovers, int moves) {
            this(values, failovers, moves, Set.of());
        }
    }

    /** Section 3, as the leader: the owners to write, or an empty decision. Pure: depends on the view only. */
    static Decision plan(View v) {
        Map<String, MemberView> live = v.members();
        SortedSet<Integer> groups = new TreeSet<>();
        for (MemberView m : live.values()) groups.addAll(m.serves());
        Map<String, Integer> load = new TreeMap<>();
        // Only members that serve a group take part in balancing: one with none would always be "the fewest" and no move could reach it.
        for (MemberView m : live.values()) if (!m.serves().isEmpty()) load.put(m.node(), 0);
        boolean moving = false;
        for (int g : groups) {
            Owner o = v.owners().get(g);
            if (o == null || o.node() == null || !live.containsKey(o.node())) continue;
            if (o.next() != null) moving = true;
            load.merge(o.next() != null && live.containsKey(o.next()) ? o.next() : o.node(), 1, Integer::sum);
        }
        Map<Integer, String> values = new TreeMap<>();
        Set<String> dead = new TreeSet<>();
        int failovers = 0;
        for (int g : groups) {
            Owner o = v.owners().get(g);
            String pin = o == null ? null : o.pin();
            if (o == null || o.node() == null || !live.containsKey(o.node())) {
                // No owner, or its lease is gone: a move under way goes to its target if that lives.
                String to = o != null && o.next() != null && serves(live, o.next(), g) ? o.next() : choose(live, load, g, pin);
                if (to == null) continue;
                if (o != null && o.node() != null) dead.add(o.node());
                values.put(g, owner(to, null));
                load.merge(to, 1, Integer::sum);
                failovers++;
            } else if (o.next() != null && !serves(live, o.next(), g)) {
                values.put(g, owner(o.node(), null));                       // the target died: the move is off
                load.merge(o.next(), -1, Integer::sum);
                load.merge(o.node(), 1, Integer::sum);
            }
        }
        if (!values.isEmpty() || moving) return new Decision(values, failovers, 0, dead);
        // Rebalance: at most one move. A pinned group first, to its live pin.
        for (int g : groups) {
            Owner o = v.owners().get(g);
            if (o != null && o.pin() != null && serves(live, o.pin(), g) && !o.pin().equals(o.node())) {
                return new Decision(Map.of(g, owner(o.node(), o.pin())), 0, 1);
            }
        }
        String most = null;
        String fewest = null;
        for (Map.Entry<String, Integer> e : load.entrySet()) {
            if (most == null || e.getValue() > load.get(most)) most = e.getKey();
            if (fewest == null || e.getValue() < load.get(fewest)) fewest = e.getKey();
        }
        if (most == null || load.get(most) - load.get(fewest) < 2) return new Decision(Map.of(), 0, 0);
        for (int g : groups) {
            Owner o = v.owners().get(g);
            if (o != null && most.equals(o.node()) && (o.pin() == null || !serves(live, o.pin(), g)) && serves(live, fewest, g)) {
                return new Decision(Map.of(g, owner(most, fewest)), 0, 1);
            }
        }
        return new Decision(Map.of(), 0, 0);
    }

    private static boolean serves(Map<String, MemberView> live, String node, int grpid) {
        MemberView m = live.get(node);
        return m != null && m.serves().contains(grpid);
    }

    /** The pin if it is live and serves the group, else the least-loaded live member that serves it (first by name on a tie). */
    private static String choose(Map<String, MemberView> live, Map<String, Integer> load, int grpid, String pin) {
        if (pin != null && serves(live, pin, grpid)) return pin;
        String best = null;
        for (MemberView m : live.values()) {
            if (!m.serves().contains(grpid)) continue;
            if (best == null || load.get(m.node()) < load.get(best)) best = m.node();
        }
        return best;
    }

    private static String owner(String node, String next) {
        ObjectNode v = JSON.createObjectNode().put("node", node);
        if (next != null) v.put("to", next);
        return v.toString();
    }

    /**
     * Section 3's first step, as the leader: fences at the storage every member whose lease ended (a node a
     * controller-ID range names, with no member key) and that this node has not fenced since it
     * was last seen live — owner of ANA groups or not: a host may have sent a write down a
     * non-optimized path too, and the member may have been paused with it. Once per end of a
     * lease ({@link #fencedGone}); one that fails is tried again next interval. Returns the
     * members that could not be fenced.
     */
    private Set<String> fenceGone(View v, Map<String, EtcdClient.KeyValue> keys) {
        Set<String> unfenced = new TreeSet<>();
        for (EtcdClient.KeyValue kv : keys.values()) {
            if (!kv.key().startsWith(base() + "ranges/")) continue;
            String gone = text(kv, "node");
            if (gone == null || gone.equals(node) || v.members().containsKey(gone) || fencedGone.contains(gone)) continue;
            try {
                storageFence.fence(gone);
                fencedGone.add(gone);
                unfenceable.remove(gone);
                LOG.log(System.Logger.Level.INFO, "cluster: gateway group " + group + ": " + gone + "'s lease ended: its clients are fenced at the storage");
            } catch (IOException e) {
                unfenced.add(gone);
                // An ANA owner's groups wait for it (decide); the warning once, while it keeps failing.
                LOG.log(unfenceable.add(gone) ? System.Logger.Level.WARNING : System.Logger.Level.DEBUG,
                        "cluster: gateway group " + group + ": " + gone + "'s lease ended, but its clients cannot be fenced at the storage ("
                        + e.getMessage() + "): tried again every interval; any ANA group it owned gets no new owner until then");
            }
        }
        return unfenced;
    }

    /**
     * Writes the leader's decision if neither members nor owners changed since {@code revision};
     * a failover only once the dead owner is fenced ({@code unfenced}: {@link #fenceGone} failed on them).
     */
    private void decide(View v, Map<String, EtcdClient.KeyValue> keys, long revision, Set<String> unfenced) throws IOException {
        Decision d = plan(v);
        if (d.values().isEmpty()) return;
        for (String dead : d.dead()) {
            if (fencedGone.contains(dead)) continue;
            if (unfenced.contains(dead)) return;          // its groups stay without a live owner (every member non-optimized: still reachable)
            try {
                storageFence.fence(dead);                 // an owner no range names (its slot was taken over)
                fencedGone.add(dead);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "cluster: gateway group " + group + ": " + dead + " is gone, but its clients cannot be fenced"
                                                     + " at the storage (" + e.getMessage() + "): its ANA groups get no new owner until they can be");
                return;
            }
        }
        List<EtcdClient.Put> puts = new ArrayList<>();
        for (Map.Entry<Integer, String> e : d.values().entrySet()) {
            puts.add(new EtcdClient.Put(base() + "owners/" + e.getKey(), e.getValue().getBytes(StandardCharsets.UTF_8), 0));
        }
        if (client.txn(List.of(base() + "members/", base() + "owners/"), revision, puts)) {
            failovers += d.failovers();
            moves += d.moves();
            LOG.log(System.Logger.Level.INFO, "cluster: gateway group " + group + ": ANA group owners " + d.values());
        }
    }

    /** Section 3.2, as the old owner: stop presenting each group this node is handing over, then give it to the next. */
    private void handOver(View v, Map<String, EtcdClient.KeyValue> keys) throws IOException {
        for (Owner o : v.owners().values()) {
            if (!node.equals(o.node()) || o.next() == null) continue;
            synchronized (this) {
                Set<Integer> optimized = new TreeSet<>(presentedOptimized == null ? Set.of() : presentedOptimized);
                if (optimized.remove(o.grpid())) present(presentedServed, optimized, false); // presentedServed is set: it held the group
            }
            String key = base() + "owners/" + o.grpid();
            EtcdClient.KeyValue kv = keys.get(key);
            if (kv != null && client.txn(List.of(EtcdClient.Compare.unchanged(key, kv.modRevision())),
                                         List.of(new EtcdClient.Put(key, owner(o.next(), null).getBytes(StandardCharsets.UTF_8), 0)), List.of()) >= 0) {
                handovers++;
                LOG.log(System.Logger.Level.INFO, "cluster: gateway group " + group + ": ANA group " + o.grpid() + " handed over to " + o.next());
            }
        }
    }

    /**
     * Pins ANA group {@code grpid} to {@code pinNode} (null: unpinned): the leader moves it there
     * (one move, fenced as any) while that node is live and serves it. Any thread.
     */
    public void pin(int grpid, String pinNode) throws IOException {
        String key = base() + "pins/" + grpid;
        if (pinNode == null || pinNode.isEmpty()) client.delete(key);
        else client.put(key, pinNode.getBytes(StandardCharsets.UTF_8), 0);
    }

    /** Stops the loop; the member key goes with the membership's lease (its owner's close revokes it). */
    @Override
    public void close() {
        running = false;
        thread.interrupt();
        fenceThread.interrupt();
        try {
            if (thread.isAlive()) thread.join(5_000);
            if (fenceThread.isAlive()) fenceThread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
