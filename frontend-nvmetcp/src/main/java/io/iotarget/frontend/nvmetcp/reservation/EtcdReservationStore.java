package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.cluster.ClusterSettings;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.Fence;
import io.iotarget.cluster.Membership;
import io.iotarget.cluster.StorageFence;
import io.iotarget.model.Clock;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reservations in the cluster's etcd ({@code cluster.store = etcd://...}), shared by every node
 * that serves the namespace:
 *
 * <pre>
 *  /iotarget/resv/&lt;nqn&gt;/&lt;nsid&gt;   lines: the state ({@link ReservationState#encode}, version first), the node
 *                                 that made the change, its notices (HOSTID:TYPE, space-separated),
 *                                 and "abort" after a preempt-and-abort
 * </pre>
 *
 * <h2>1. Compare-and-swap on the key's revision</h2>
 * {@link #read} remembers the key's mod revision; {@link #replace} is one transaction that puts
 * the next state only if the key has not changed since (etcd's revision compare), and then
 * it is committed by a majority of the members, each of which has it in its fsynced WAL:
 * an acknowledged change survives any one member's loss and a restart of all ({@link
 * #persistent} true).
 *
 * <h2>2. Changes heard by a watch</h2>
 * One watch on {@code /iotarget/resv/} from the last revision this node has seen: each other
 * node's change reaches the {@link Listener} in revision order; a watch that ends is started
 * again from the next revision, so none is missed while the store answers.
 *
 * <h2>3. A change holds on every node before it completes</h2>
 * <pre>
 *  /iotarget/resv-ack/&lt;nqn&gt;/&lt;nsid&gt;/&lt;node&gt;   the version this node has installed and drained ("0": opened, not read
 *                                         yet; "closed": no longer followed), on the node's lease
 * </pre>
 * A node opening a namespace puts its key before it reads the state, so a change made meanwhile
 * waits for it. After each copy it installs (and drains, {@link NamespaceReservation#drain}) it
 * puts the version. The node that commits a change waits ({@link #awaitAcknowledged}) until
 * every other node's key holds that version or more, or is gone: its lease expired in etcd or
 * was given up ({@link Membership#relinquish}), and by its own {@link Fence} deadline, which
 * runs out first, it refused the namespace's IO. Nothing else ends the wait with success: a
 * wait that outlasts its bound, or this node's own lease, ends without proof ({@link
 * ReservationStore.Acknowledged}).
 *
 * <p>The waiter learns of the keys from one watch on {@code /iotarget/resv-ack/} (started with
 * {@link #listen}; its events wake the waiters of the key they belong to) on top of one read of
 * its own prefix, merged by mod revision, so an event and a read may arrive in either order.
 * The read is repeated every {@link #ACK_REREAD_NS} while the watch runs (a lost event only
 * delays), and every {@link #ACK_POLL_NS} while it is broken and being started again.
 * A waiter's prefix ends with '/': namespace 1's ({@code .../NQN/1/}) is no prefix of
 * namespace 10's.
 *
 * <h2>4. A stale read fences, it is not installed</h2>
 * Per key the store remembers the highest revision this node has seen (read, heard). A read
 * (linearizable) that returns one older than what was seen before it was sent (a member that
 * fell behind, a restored backup), or no key where this node had seen one (we never delete
 * these keys: a cleared state is a state), throws {@link StaleException}: the caller fences the
 * namespace rather than believe it.
 *
 * <p>A state is read and compared as one exact key (etcd's range without a range end), never
 * as a prefix: {@code .../1} is a prefix of {@code .../10}, and a compare-and-swap of namespace
 * 1 must not fail when namespace 10 changed. Any thread.
 */
public final class EtcdReservationStore implements ReservationStore {
    private static final System.Logger LOG = System.getLogger(EtcdReservationStore.class.getName());
    static final String PREFIX = "/iotarget/resv/";
    static final String ACK_PREFIX = "/iotarget/resv-ack/";
    /** How often a committing node reads the acknowledgements while the watch on them is broken (and being started again). */
    static final long ACK_POLL_NS = TimeUnit.MILLISECONDS.toNanos(10);
    /** How often it reads them anyway while the watch runs: an event lost between a watch's end and the next start only delays. */
    static final long ACK_REREAD_NS = TimeUnit.MILLISECONDS.toNanos(250);
    /** How long after a watch ends it is started again (the members may be electing). */
    static final long REWATCH_MS = 100;

    private final EtcdClient client;
    private final String node;
    /** This node's lease and deadline (Membership's), or null: then nothing is acknowledged nor waited for. */
    private final Fence fence;
    /** The membership the fence belongs to, when given: {@link Reservations} listens to it for a lost lease and a re-join. */
    private final Membership membership;
    /** Per key, the version and lease last acknowledged, so an unchanged copy is not put again every interval. */
    private final Map<String, long[]> acknowledged = new ConcurrentHashMap<>();
    /** The highest mod revision seen per key (section 3), and the one the last read returned, for the next replace. */
    private final Map<String, Long> seen = new ConcurrentHashMap<>();
    private final Map<String, Long> readAt = new ConcurrentHashMap<>();
    /** The highest store revision heard through the watch; the next watch starts after it. */
    private volatile long watchedRevision;
    private final ScheduledExecutorService rewatch = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name("nvmet-resv-etcd").factory());
    private volatile EtcdClient.Watch watch;
    /** The watch on the acknowledgement keys, and whether it runs (false: the waiters poll). */
    private volatile EtcdClient.Watch ackWatch;
    private volatile boolean ackWatching;
    /** The committing lanes waiting for acknowledgements ({@link #awaitAcknowledged}); the ack watch's events go to them. */
    private final Set<AckWaiter> waiters = ConcurrentHashMap.newKeySet();
    /** Acknowledgement reads made by waiters (tests, the bench: how often the fallback read ran). */
    private final AtomicLong ackReads = new AtomicLong();
    private volatile Listener listener;
    /** Fences a node that vanished during a wait at the storage ({@link #fenceStorageWith}). */
    private volatile StorageFence storageFence = StorageFence.NONE;
    private volatile boolean closed;
    /** What {@link #join} made for this store alone (the membership, the client), closed with it; null when the caller owns them. */
    private AutoCloseable owned;

    /** A read older than what this node has seen for the key, or a key missing that this node has seen. */
    public static final class StaleException extends StoreException {
        private static final long serialVersionUID = 1L;

        StaleException(String message) {
            super(message, null);
        }
    }

    /**
     * @param client the cluster's etcd client (this store does not close it)
     * @param node   this node's id, which its changes carry so that it skips its own
     * @param fence  this node's membership lease and deadline (acknowledgements hang on the lease), or null for none
     */
    public EtcdReservationStore(EtcdClient client, String node, Fence fence) {
        this(client, node, fence, null);
    }

    /**
     * As {@link #EtcdReservationStore(EtcdClient, String, Fence)} with {@code membership}'s fence;
     * the reservations also hear at once when the lease ends and when the node re-joins (without
     * it their timer notices, an interval later).
     */
    public static EtcdReservationStore following(EtcdClient client, String node, Membership membership) {
        return new EtcdReservationStore(client, node, membership.fence(), membership);
    }

    private EtcdReservationStore(EtcdClient client, String node, Fence fence, Membership membership) {
        this.client = client;
        this.node = node;
        this.fence = fence;
        this.membership = membership;
    }

    /**
     * The server's store ({@code cluster.store = etcd://...}): a client of its own and this
     * node's {@link Membership} (its lease, keep-alives and {@link Fence}), started here and
     * closed with the store. Returns at once: until the first lease is granted the fence does
     * not hold, so IO on reservation namespaces gets ANA Inaccessible. Each call to etcd is
     * bounded by a third of the lease (at least 100 ms): a keep-alive that took longer would
     * leave no time to try another member before the deadline.
     */
    public static EtcdReservationStore join(ClusterSettings cluster) throws IOException {
        EtcdClient client = EtcdClient.create(cluster.store(), cluster.access(), Duration.ofMillis(Math.max(100, cluster.leaseMs() / 3)));
        Membership membership = new Membership(client, cluster.node(), cluster.leaseMs(), Clock.SYSTEM);
        membership.start();
        EtcdReservationStore store = following(client, cluster.node(), membership);
        store.owned = () -> {
            membership.close();
            client.close();
        };
        return store;
    }

    /** The membership whose lease and re-joins the reservations follow, or null. */
    public Membership membership() {
        return membership;
    }

    /** The lease fence the IO path also checks, or null. */
    public Fence fence() {
        return fence;
    }

    private String ackKey(String key) {
        return ACK_PREFIX + key + "/" + node;
    }

    private void putAck(String key, String value) throws StoreException {
        long lease = fence.lease();
        if (lease == 0) throw new StoreException("no membership lease (fenced): cannot acknowledge " + key, null);
        try {
            client.put(ackKey(key), value.getBytes(StandardCharsets.UTF_8), lease);
        } catch (IOException e) {
            throw new StoreException(e.getMessage(), e);
        }
    }

    @Override
    public void opened(String key) throws StoreException {
        if (fence == null) return;
        acknowledged.remove(key);
        putAck(key, "0");
    }

    @Override
    public void acknowledge(String key, long version) throws StoreException {
        if (fence == null) return;
        long lease = fence.lease();
        long[] last = acknowledged.get(key);
        if (last != null && last[0] == version && last[1] == lease) return;
        putAck(key, Long.toString(version));
        acknowledged.put(key, new long[] {version, lease});
    }

    @Override
    public void closed(String key) {
        if (fence == null) return;
        acknowledged.remove(key);
        try {
            putAck(key, "closed");
        } catch (StoreException e) {
            // Its lease ends anyway; until then a change waits for it at most its timeout.
        }
    }

    @Override
    public Acknowledged awaitAcknowledged(String key, long version, long timeoutNs) throws StoreException {
        if (fence == null) return Acknowledged.ALL;
        long lease = fence.lease();
        if (lease == 0 || !fence.holds()) return Acknowledged.FENCED;
        AckWaiter w = new AckWaiter(ACK_PREFIX + key + "/", Thread.currentThread());
        waiters.add(w);                                   // before the read: an event may come first
        try {
            long nowNs = System.nanoTime();
            long deadlineNs = nowNs + timeoutNs;
            long readNs = nowNs;
            for (;;) {
                if (nowNs - readNs >= 0) {
                    EtcdClient.Range acks;
                    try {
                        acks = client.range(w.prefix);
                    } catch (IOException e) {
                        throw new StoreException(e.getMessage(), e);
                    }
                    ackReads.incrementAndGet();
                    w.read(acks);
                    nowNs = System.nanoTime();
                    readNs = nowNs + (ackWatching ? ACK_REREAD_NS : ACK_POLL_NS);
                }
                if (!w.pending(node, version)) return fenceGone(key, version, w.gone(node));
                if (fence.lease() != lease || !fence.holds(nowNs)) return Acknowledged.FENCED;
                if (nowNs - deadlineNs >= 0) return Acknowledged.TIMED_OUT;
                long untilNs = Math.min(Math.min(readNs, deadlineNs), fence.validUntilNs());
                java.util.concurrent.locks.LockSupport.parkNanos(this, Math.max(1, untilNs - nowNs));
                nowNs = System.nanoTime();
            }
        } finally {
            waiters.remove(w);
        }
    }

    /**
     * The nodes whose keys vanished while this change waited for them (their leases ended) are
     * fenced at the storage before the change is answered: a write such a node had passed its
     * own fence with, and that paused on its way to the backend, cannot land after the answer.
     */
    private Acknowledged fenceGone(String key, long version, Set<String> gone) {
        for (String other : gone) {
            try {
                storageFence.fence(other);
            } catch (IOException e) {
                LOG.log(System.Logger.Level.WARNING, "reservation change on " + key + " (version " + version + "): node " + other
                                                     + " is gone but cannot be fenced at the storage: " + e.getMessage());
                return Acknowledged.UNFENCED;
            }
        }
        return Acknowledged.ALL;
    }

    /**
     * Sets how a node whose lease ended while a change waited for it is fenced at the storage
     * (serve: Ceph's blocklist, docs/rbd.md); {@link StorageFence#NONE} until then.
     */
    public void fenceStorageWith(StorageFence fence) {
        this.storageFence = java.util.Objects.requireNonNull(fence);
    }

    /** Acknowledgement reads the waiters made so far (the fallback to the watch, and each wait's first read). Any thread. */
    public long acknowledgementReads() {
        return ackReads.get();
    }

    /**
     * One committing lane's view of one namespace's acknowledgement keys: per node, the newest
     * value seen (null: deleted) and its mod revision, from its reads and the ack watch's events,
     * merged by revision so that their order does not matter. Written by the waiter and the watch
     * thread.
     */
    private static final class AckWaiter {
        final String prefix;
        final Thread thread;
        private final Map<String, Ack> acks = new ConcurrentHashMap<>();

        /** A key's value ({@code null}: deleted) at its mod revision. */
        private record Ack(String value, long revision) {
        }

        AckWaiter(String prefix, Thread thread) {
            this.prefix = prefix;
            this.thread = thread;
        }

        /** A read of the prefix: its keys, and every key it lacks deleted as of its revision. */
        void read(EtcdClient.Range range) {
            Set<String> present = new java.util.HashSet<>();
            for (EtcdClient.KeyValue kv : range.kvs()) {
                present.add(kv.key());
                merge(kv.key(), text(kv), kv.modRevision());
            }
            for (String k : acks.keySet()) if (!present.contains(k)) merge(k, null, range.revision());
        }

        /** The watch's event, if it is one of this prefix's keys (a node's, not a deeper key): wakes the waiter. */
        void heard(EtcdClient.Event e) {
            String k = e.kv().key();
            if (!k.startsWith(prefix) || k.indexOf('/', prefix.length()) >= 0) return;
            merge(k, e.put() ? text(e.kv()) : null, e.kv().modRevision());
            java.util.concurrent.locks.LockSupport.unpark(thread);
        }

        private void merge(String k, String value, long revision) {
            acks.merge(k, new Ack(value, revision), (old, now) -> now.revision() >= old.revision() ? now : old);
        }

        /** The nodes other than {@code self} whose keys were seen in this wait and then deleted (their leases ended). */
        Set<String> gone(String self) {
            Set<String> out = new java.util.TreeSet<>();
            for (Map.Entry<String, Ack> a : acks.entrySet()) {
                String other = a.getKey().substring(prefix.length());
                if (a.getValue().value() == null && !other.equals(self) && !other.contains("/")) out.add(other);
            }
            return out;
        }

        /** Whether a node other than {@code self} follows the key and has not acknowledged {@code version}. */
        boolean pending(String self, long version) {
            for (Map.Entry<String, Ack> a : acks.entrySet()) {
                String other = a.getKey().substring(prefix.length());
                String v = a.getValue().value();
                if (other.equals(self) || other.contains("/") || v == null || v.equals("closed")) continue;
                try {
                    if (Long.parseLong(v) >= version) continue;
                } catch (NumberFormatException e) {
                    continue;                            // not one of ours
                }
                return true;
            }
            return false;
        }
    }

    @Override
    public ReservationState read(String key) throws StoreException {
        String full = PREFIX + key;
        // What was seen before the read is sent: a linearizable read must return at least that.
        // (A change heard while the read is on its way may be newer than what it returns.)
        long seenRevision = seen.getOrDefault(key, 0L);
        EtcdClient.Range range;
        try {
            range = client.get(full);
        } catch (IOException e) {
            throw new StoreException(e.getMessage(), e);
        }
        EtcdClient.KeyValue kv = null;
        for (EtcdClient.KeyValue k : range.kvs()) if (k.key().equals(full)) kv = k;   // the one key, or none
        if (kv == null) {
            if (seenRevision > 0) throw new StaleException(full + " is missing, but this node has seen it at revision " + seenRevision);
            readAt.put(key, 0L);
            return ReservationState.EMPTY;
        }
        if (kv.modRevision() < seenRevision) {
            throw new StaleException(full + " read at revision " + kv.modRevision() + ", older than the " + seenRevision + " this node has seen");
        }
        try {
            ReservationState s = ReservationState.decode(text(kv).split("\n", -1)[0]);
            seen.merge(key, kv.modRevision(), Math::max);
            readAt.put(key, kv.modRevision());
            return s;
        } catch (IllegalArgumentException e) {
            throw new StoreException(full + " holds no reservation state: " + e.getMessage(), e);
        }
    }

    @Override
    public boolean replace(String key, ReservationState next, List<ReservationState.Notice> notices) throws StoreException {
        return replace(key, next, notices, false);
    }

    @Override
    public boolean replace(String key, ReservationState next, List<ReservationState.Notice> notices, boolean abort) throws StoreException {
        Long revision = readAt.get(key);
        if (revision == null) return false;              // never read here: read first (the caller retries)
        HexFormat hex = HexFormat.of();
        StringBuilder value = new StringBuilder(next.encode()).append('\n').append(node).append('\n');
        for (ReservationState.Notice n : notices) {
            value.append(hex.toHexDigits(n.hostHigh())).append(hex.toHexDigits(n.hostLow())).append(':').append(n.type()).append(' ');
        }
        if (abort) value.append("\nabort");
        try {
            // The one key, compared exactly: a change of a key it prefixes (namespace 10 of 1) does not fail it.
            return client.txn(List.of(EtcdClient.Compare.unchanged(PREFIX + key, revision)),
                              List.of(new EtcdClient.Put(PREFIX + key, value.toString().getBytes(StandardCharsets.UTF_8), 0)), List.of()) >= 0;
        } catch (IOException e) {
            throw new StoreException(e.getMessage(), e);
        }
    }

    @Override
    public boolean shared() {
        return true;
    }

    /** etcd commits a change on a majority of members, each fsyncing its WAL first: it outlives a member's loss and a restart. */
    @Override
    public boolean persistent() {
        return true;
    }

    @Override
    public void listen(Listener listener) {
        this.listener = listener;
        startWatch();
        if (fence != null) startAckWatch();
    }

    /**
     * The watch on every acknowledgement key, from now on (what was before, each waiter reads):
     * its events go to the waiters; when it ends, the waiters poll until it runs again.
     */
    private void startAckWatch() {
        if (closed) return;
        ackWatching = true;
        ackWatch = client.watch(ACK_PREFIX, 0, e -> {
            for (AckWaiter w : waiters) w.heard(e);
        }, why -> {
            ackWatching = false;
            for (AckWaiter w : waiters) java.util.concurrent.locks.LockSupport.unpark(w.thread);   // to poll now
            if (!closed) rewatch.schedule(this::startAckWatch, REWATCH_MS, TimeUnit.MILLISECONDS);
        });
    }

    private void startWatch() {
        if (closed) return;
        long from = watchedRevision + 1;
        if (watchedRevision == 0) {
            try {
                from = client.range(PREFIX).revision() + 1;     // what is there now is read by the namespaces themselves
            } catch (IOException e) {
                if (!closed) rewatch.schedule(this::startWatch, REWATCH_MS, TimeUnit.MILLISECONDS);
                return;
            }
        }
        watch = client.watch(PREFIX, from, this::heard, why -> {
            if (!closed) rewatch.schedule(this::startWatch, REWATCH_MS, TimeUnit.MILLISECONDS);
        });
    }

    /** One change the watch saw: remembered as seen; another node's passed on with its notices. The watch's thread. */
    private void heard(EtcdClient.Event e) {
        EtcdClient.KeyValue kv = e.kv();
        watchedRevision = Math.max(watchedRevision, kv.modRevision());
        if (!e.put() || !kv.key().startsWith(PREFIX)) return;
        String key = kv.key().substring(PREFIX.length());
        String[] lines = text(kv).split("\n", -1);
        try {
            ReservationState s = ReservationState.decode(lines[0]);
            seen.merge(key, kv.modRevision(), Math::max);
            if (lines.length >= 2 && lines[1].equals(node)) return;
            List<ReservationState.Notice> notices = new ArrayList<>();
            if (lines.length >= 3) {
                for (String n : lines[2].split(" ")) {
                    if (n.length() < 34 || n.charAt(32) != ':') continue;
                    notices.add(new ReservationState.Notice(HexFormat.fromHexDigitsToLong(n, 0, 16), HexFormat.fromHexDigitsToLong(n, 16, 32),
                                                            Integer.parseInt(n.substring(33))));
                }
            }
            Listener l = listener;
            if (l != null) l.changed(key, s.version(), notices, lines.length >= 4 && lines[3].equals("abort"));
        } catch (IllegalArgumentException ignored) {
            // Not one of ours: the next interval's re-read still sees any change.
        }
    }

    private static String text(EtcdClient.KeyValue kv) {
        return new String(kv.value(), StandardCharsets.UTF_8);
    }

    @Override
    public void close() {
        closed = true;
        rewatch.shutdownNow();
        EtcdClient.Watch w = watch;
        if (w != null) w.close();
        EtcdClient.Watch a = ackWatch;
        if (a != null) a.close();
        if (owned != null) {
            try {
                owned.close();
            } catch (Exception e) {
                // closing: the lease runs out in etcd by itself
            }
        }
    }
}
