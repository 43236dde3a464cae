package io.iotarget.control.http;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.function.Consumer;

/**
 * How many connections the control endpoint keeps: at most {@code max} in all and
 * {@code maxPerPeer} from one peer address.
 *
 * <p>A connection is <em>unproven</em> until one of its requests carries the token or a web
 * session; opening one needs nothing, so a peer without the token can only ever hold unproven
 * ones. At a cap the newcomer is not refused while an unproven connection is there to make
 * room: the oldest unproven one (of that peer at the per-peer cap, of all at the total cap) is
 * closed instead. A real client sends its request as soon as it has connected and is proven
 * within a loop turn; a stalled one is the oldest soon after. So a flood of stalled
 * connections, from any number of processes or users behind one address (every local user is
 * 127.0.0.1), holds at most the caps and never locks out the CLI. Only when every connection
 * at the cap is proven is the newcomer refused (closed at once).
 *
 * <p>Owner: the endpoint's one event loop thread; not thread-safe.
 *
 * @param <C> a connection, which {@link #admit} may close through {@code close}
 */
final class ConnectionBudget<C> {
    private final int max;
    private final int maxPerPeer;
    private final Consumer<C> close;
    /** Every admitted connection, with its peer. */
    private final Map<C, InetAddress> members = new HashMap<>();
    /** Unproven connections of all peers, oldest first. */
    private final LinkedHashSet<C> unproven = new LinkedHashSet<>();
    private final Map<InetAddress, Peer> peers = new HashMap<>();

    /** One peer address's connections. */
    private final class Peer {
        int count;
        /** Its unproven connections, oldest first. */
        final LinkedHashSet<C> unproven = new LinkedHashSet<>();
    }

    ConnectionBudget(int max, int maxPerPeer, Consumer<C> close) {
        if (max < 1 || maxPerPeer < 1) throw new IllegalArgumentException("max " + max + ", maxPerPeer " + maxPerPeer + " (expected: >= 1)");
        this.max = max;
        this.maxPerPeer = maxPerPeer;
        this.close = close;
    }

    /**
     * Counts {@code connection} as unproven, making room by closing the oldest unproven
     * connection where a cap is reached. False when there is no room: the caller closes it.
     */
    boolean admit(C connection, InetAddress peer) {
        Peer p = peers.get(peer);
        if (p != null && p.count >= maxPerPeer && !evictOldest(p.unproven.iterator())) return false;
        if (members.size() >= max && !evictOldest(unproven.iterator())) return false;
        p = peers.computeIfAbsent(peer, k -> new Peer());
        p.count++;
        p.unproven.add(connection);
        unproven.add(connection);
        members.put(connection, peer);
        return true;
    }

    /** A request of this connection carried the token or a session: no newcomer may push it out. */
    void prove(C connection) {
        InetAddress peer = members.get(connection);
        if (peer == null || !unproven.remove(connection)) return;
        peers.get(peer).unproven.remove(connection);
    }

    /** Whether a request of this connection has shown the token or a session. */
    boolean proven(C connection) {
        return members.containsKey(connection) && !unproven.contains(connection);
    }

    /** The connection closed (or was never admitted): idempotent. */
    void release(C connection) {
        InetAddress peer = members.remove(connection);
        if (peer == null) return;
        unproven.remove(connection);
        Peer p = peers.get(peer);
        p.unproven.remove(connection);
        if (--p.count == 0) peers.remove(peer);
    }

    private boolean evictOldest(Iterator<C> oldestFirst) {
        if (!oldestFirst.hasNext()) return false;
        C victim = oldestFirst.next();
        release(victim);
        close.accept(victim);
        return true;
    }

    /** Connections counted now. */
    int total() {
        return members.size();
    }

    /** Unproven connections counted now. */
    int unproven() {
        return unproven.size();
    }
}
