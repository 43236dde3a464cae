package io.iotarget.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.model.Clock;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * This node's membership of the cluster in etcd, and the {@link Fence} it keeps (docs/ha.md,
 * "Membership and the fence").
 *
 * <h2>1. A lease per life</h2>
 * The node grants an etcd lease of {@code lease_ms} rounded up to whole seconds (etcd's unit; the
 * server may raise it further to its minimum, 1.5 election timeouts, and the fence uses the TTL
 * the server reports), puts {@code /iotarget/members/NODE} on it (value
 * {@code {"node":"NODE","lease":"HEX"}}) and sends a keep-alive every third of the TTL, each one
 * request whose sending time it notes. A keep-alive that succeeds moves the fence's deadline to
 * its sending time + TTL − margin ({@link Fence}); one that fails is retried every
 * {@link #RETRY_NS} until the deadline.
 *
 * <h2>2. Losing it</h2>
 * The lease is lost when a keep-alive answers that it no longer exists (TTL 0) or when the fence's
 * deadline passes without a keep-alive that succeeded. The node is fenced from that moment (the
 * fence turns false by itself at the deadline; the loop notices it at its next step), the
 * listeners are told ({@link Listener#fenced}), the old lease is revoked if the store can be
 * reached (its key goes at once, not at the expiry), and the node joins again with a <em>new</em>
 * lease: a late keep-alive answer of the old one never un-fences it. The listeners hear
 * {@link Listener#joined} with the new lease once the member key is in place and the fence holds
 * again: state read before must be read again before it is trusted.
 *
 * <p>A node may also give its lease up ({@link #relinquish}): a part of it that cannot do what
 * the lease vouches for (the reservations, when a copy cannot be installed and drained in time)
 * fences the node at once, and the lease thread then revokes the lease and joins again, as for
 * a lost one.
 *
 * <h2>3. Live members</h2>
 * A range of {@code /iotarget/members/} and a watch from its revision give the live nodes and
 * their leases ({@link #members}); a broken watch reads and watches again.
 *
 * <p>Threads: one for the lease (grant, keep-alive, re-join), one for the watch; listeners are
 * called on them and must return quickly. {@link #fence}, {@link #members} and the accessors may
 * be called by any thread.
 */
public final class Membership implements AutoCloseable {
    /** Where every member's key lives; the store's schema (docs/cluster.md). */
    public static final String PREFIX = "/iotarget/members/";
    /** How long after a failed keep-alive (or grant) the next try goes: 50 ms, several tries per TTL third. */
    public static final long RETRY_NS = TimeUnit.MILLISECONDS.toNanos(50);
    /** A keep-alive every TTL / this. */
    public static final int KEEPALIVES_PER_TTL = 3;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final System.Logger LOG = System.getLogger(Membership.class.getName());

    /** A live node as the store lists it: its name and the lease its key hangs on. */
    public record Member(String node, long lease) {
    }

    /** Told of this node's lease and of the live members. Called on the membership's threads. */
    public interface Listener {
        /** This node has no valid lease any more ({@code lease} is the one lost): stop serving governed IO. */
        default void fenced(long lease, String why) {
        }

        /** This node holds {@code lease} now; {@code rejoin} when it had one before: re-read every state. */
        default void joined(long lease, boolean rejoin) {
        }

        /** The live members changed. */
        default void membersChanged(Map<String, Member> live) {
        }
    }

    private final EtcdClient client;
    private final String node;
    private final long ttlSeconds;
    private final Clock clock;
    private final Fence fence;
    private final List<Listener> listeners = new CopyOnWriteArrayList<>();
    private final Thread leaseThread;
    private final Thread watchThread;
    private volatile boolean running = true;

    /** A lease given up by {@link #relinquish}, and why, for the lease thread to tell and revoke. */
    private record GivenUp(long lease, String why) {
    }

    /** Set by {@link #relinquish} (any thread), taken by the lease thread. */
    private final AtomicReference<GivenUp> givenUp = new AtomicReference<>();
    /** Published by the watch thread: an immutable map, node name → member. */
    private volatile Map<String, Member> members = Map.of();
    /** Times this node lost its lease; joins (the first and every re-join). Membership thread writes. */
    private volatile long losses;
    private volatile long joins;
    /** The TTL the server gave the current lease, in ns; 0 before the first. */
    private volatile long ttlNs;

    /**
     * @param leaseMs how long the lease lasts without a keep-alive; rounded up to seconds
     */
    public Membership(EtcdClient client, String node, long leaseMs, Clock clock) {
        this.client = client;
        this.node = node;
        this.ttlSeconds = Math.max(1, (leaseMs + 999) / 1000);
        this.clock = clock;
        this.fence = new Fence(clock.nanoTime());
        this.leaseThread = Thread.ofPlatform().daemon().name("iotarget-membership").unstarted(this::leaseLoop);
        this.watchThread = Thread.ofPlatform().daemon().name("iotarget-members-watch").unstarted(this::watchLoop);
    }

    /** The member key of {@code node}. */
    public static String key(String node) {
        return PREFIX + node;
    }

    public void addListener(Listener listener) {
        listeners.add(listener);
    }

    /** Starts joining and watching; returns at once (the fence holds once the first lease is granted). */
    public void start() {
        leaseThread.start();
        watchThread.start();
    }

    public Fence fence() {
        return fence;
    }

    /** The live members as the store last said, by node name. Any thread. */
    public Map<String, Member> members() {
        return members;
    }

    public long losses() {
        return losses;
    }

    public long joins() {
        return joins;
    }

    /** The TTL etcd gave the current lease, in ns (0 before the first grant). */
    public long ttlNs() {
        return ttlNs;
    }

    public String node() {
        return node;
    }

    /**
     * Gives this node's lease up, because something it vouches for cannot be done in time: the
     * fence stops holding before this returns (nothing governed is admitted after it); then the
     * lease thread tells the listeners ({@link Listener#fenced}), revokes the lease so that its
     * keys go at once (when etcd cannot be reached, they go when it expires, after the fence's
     * deadline would have passed anyway), and joins again with a new lease. Any thread; false
     * when no lease was held (fenced already).
     */
    public boolean relinquish(String why) {
        long lease = fence.giveUp(clock.nanoTime());
        if (lease == 0) return false;
        givenUp.set(new GivenUp(lease, why));
        LockSupport.unpark(leaseThread);
        return true;
    }

    private void leaseLoop() {
        long nextKeepAliveNs = 0;
        while (running) {
            GivenUp given = givenUp.getAndSet(null);
            if (given != null) {
                lost(given.lease(), "given up: " + given.why());
                continue;
            }
            long lease = fence.lease();
            if (lease == 0) {
                if (!join()) pause(RETRY_NS);
                else nextKeepAliveNs = clock.nanoTime() + ttlNs / KEEPALIVES_PER_TTL;
                continue;
            }
            long nowNs = clock.nanoTime();
            if (!fence.holds(nowNs)) {
                lose(lease, nowNs, "no keep-alive succeeded before the deadline");
                continue;
            }
            // Wait for the next keep-alive, but look again at the deadline when it passes.
            long waitNs = Math.min(nextKeepAliveNs - nowNs, fence.validUntilNs() - nowNs);
            if (waitNs > 0) {
                pause(waitNs);
                continue;
            }
            long sentNs = clock.nanoTime();
            long ttl;
            try {
                ttl = client.keepAlive(lease);
            } catch (IOException e) {
                nextKeepAliveNs = sentNs + RETRY_NS;
                continue;
            }
            long answeredNs = clock.nanoTime();
            if (fence.lease() != lease) continue;                      // given up meanwhile: told at the top
            if (ttl <= 0) {
                lose(lease, answeredNs, "etcd no longer has the lease");
            } else if (!fence.extend(lease, sentNs, TimeUnit.SECONDS.toNanos(ttl), answeredNs)) {
                lose(lease, answeredNs, "the keep-alive's answer came after the deadline");
            } else {
                ttlNs = TimeUnit.SECONDS.toNanos(ttl);
                nextKeepAliveNs = sentNs + ttlNs / KEEPALIVES_PER_TTL;
            }
        }
    }

    private void pause(long ns) {
        LockSupport.parkNanos(Math.min(ns, TimeUnit.MILLISECONDS.toNanos(100)));
    }

    /** Grants a new lease and puts the member key on it; true when the fence holds with it. */
    private boolean join() {
        long sentNs = clock.nanoTime();
        EtcdClient.Lease lease;
        try {
            lease = client.grant(ttlSeconds);
        } catch (IOException e) {
            return false;
        }
        try {
            String value = JSON.createObjectNode().put("node", node).put("lease", Long.toHexString(lease.id())).toString();
            client.put(key(node), value.getBytes(StandardCharsets.UTF_8), lease.id());
        } catch (IOException e) {
            revokeQuietly(lease.id());
            return false;
        }
        long ttl = TimeUnit.SECONDS.toNanos(lease.ttlSeconds());
        if (clock.nanoTime() - Fence.deadlineNs(sentNs, ttl) >= 0) {           // too slow: the lease may be gone already
            revokeQuietly(lease.id());
            return false;
        }
        ttlNs = ttl;
        fence.renew(lease.id(), sentNs, ttl);
        boolean rejoin = joins > 0;
        joins++;
        LOG.log(System.Logger.Level.INFO, "cluster: " + node + " " + (rejoin ? "re-joined" : "joined") + " with lease " + Long.toHexString(lease.id())
                                          + " (TTL " + lease.ttlSeconds() + " s)");
        for (Listener l : listeners) l.joined(lease.id(), rejoin);
        return true;
    }

    private void lose(long lease, long nowNs, String why) {
        fence.fence(nowNs);
        GivenUp given = givenUp.getAndSet(null);                       // given up meanwhile: told once
        lost(lease, given == null ? why : "given up: " + given.why());
    }

    /** The lease is gone from the fence already: the listeners hear it and etcd is asked to revoke it. The lease thread. */
    private void lost(long lease, String why) {
        losses++;
        LOG.log(System.Logger.Level.WARNING, "cluster: " + node + " fenced, lease " + Long.toHexString(lease) + " lost: " + why);
        for (Listener l : listeners) l.fenced(lease, why);
        revokeQuietly(lease);
    }

    private void revokeQuietly(long lease) {
        try {
            client.revoke(lease);
        } catch (IOException e) {
            // Unreachable: the store expires it by itself.
        }
    }

    private void watchLoop() {
        Semaphore ended = new Semaphore(0);
        while (running) {
            EtcdClient.Range range;
            try {
                range = client.range(PREFIX);
            } catch (IOException e) {
                pause(RETRY_NS);
                continue;
            }
            Map<String, Member> now = new TreeMap<>();
            for (EtcdClient.KeyValue kv : range.kvs()) {
                Member m = member(kv);
                if (m != null) now.put(m.node(), m);
            }
            publish(now);
            Map<String, Member> live = new HashMap<>(now);
            EtcdClient.Watch watch = client.watch(PREFIX, range.revision() + 1, e -> {
                String name = e.kv().key().substring(PREFIX.length());
                if (e.put()) {
                    Member m = member(e.kv());
                    if (m != null) live.put(name, m);
                } else {
                    live.remove(name);
                }
                publish(new TreeMap<>(live));
            }, why -> ended.release());
            try {
                while (running && !ended.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                    // until the watch ends or we close
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                running = false;
            }
            watch.close();
            if (running) pause(RETRY_NS);
        }
    }

    private static Member member(EtcdClient.KeyValue kv) {
        try {
            JsonNode v = JSON.readTree(kv.valueText());
            return new Member(v.path("node").asText(kv.key().substring(PREFIX.length())), kv.lease());
        } catch (IOException | RuntimeException e) {
            return null;                                         // not ours: ignored
        }
    }

    private void publish(Map<String, Member> live) {
        Map<String, Member> copy = Map.copyOf(live);
        if (copy.equals(members)) return;
        members = copy;
        for (Listener l : listeners) l.membersChanged(copy);
    }

    /** Stops both threads and revokes the lease, so the others see this node leave at once. */
    @Override
    public void close() {
        running = false;
        leaseThread.interrupt();
        watchThread.interrupt();
        try {
            leaseThread.join(5_000);
            watchThread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        long lease = fence.lease();
        fence.fence(clock.nanoTime());
        if (lease != 0) revokeQuietly(lease);
    }
}
