package io.iotarget.control.http;

import java.net.InetAddress;
import java.util.HashMap;
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
 * room: an unproven one (of that peer at the per-peer cap, of all at the total cap) is closed
 * instead — the oldest of those that never sent a whole request, else the oldest of those that
 * did ({@link #engage}). A real client sends its request as soon as it has connected; the CLI
 * first asks the server for its proof and shows the token in its second request, so between the
 * two its connection is engaged but unproven, and a flood of stalled connections from its own
 * address (every local user is 127.0.0.1) must not push it out then. So a flood of stalled
 * connections, from any number of processes or users behind one address, holds at most the caps
 * and never locks out the CLI. Only when every connection at the cap is proven is the newcomer
 * refused (closed at once).
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
    /** Unproven connections of all peers. */
    private final Unproven all = new Unproven();
    private final Map<InetAddress, Peer> peers = new HashMap<>();

    /** One peer address's connections. */
    private final class Peer {
        int count;
        final Unproven unproven = new Unproven();
    }

    /** Unproven connections in eviction order: those that never sent a whole request, then the engaged; oldest first in each. */
    private final class Unproven {
        final LinkedHashSet<C> silent = new LinkedHashSet<>();
        final LinkedHashSet<C> engaged = new LinkedHashSet<>();

        boolean remove(C connection) {
            return silent.remove(connection) | engaged.remove(connection);
        }

        boolean contains(C connection) {
            return silent.contains(connection) || engaged.contains(connection);
        }

        int size() {
            return silent.size() + engaged.size();
        }

        /** Closes the first in eviction order; false when there is none. */
        boolean evictFirst() {
            LinkedHashSet<C> from = silent.isEmpty() ? engaged : silent;
            if (from.isEmpty()) return false;
            C victim = from.getFirst();
            release(victim);
            close.accept(victim);
            return true;
        }
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
        if (p != null && p.count >= maxPerPeer && !p.unproven.evictFirst()) return false;
        if (members.size() >= max && !all.evictFirst()) return false;
        p = peers.computeIfAbsent(peer, k -> new Peer());
        p.count++;
        p.unproven.silent.add(connection);
        all.silent.add(connection);
        members.put(connection, peer);
        return true;
    }

    /**
     * An unproven connection sent a whole request without the token: it is evicted only after
     * every unproven connection that never did. Idempotent; nothing for a proven connection.
     */
    void engage(C connection) {
        InetAddress peer = members.get(connection);
        if (peer == null || !all.silent.remove(connection)) return;
        all.engaged.add(connection);
        Unproven own = peers.get(peer).unproven;
        own.silent.remove(connection);
        own.engaged.add(connection);
    }

    /** A request of this connection carried the token or a session: no newcomer may push it out. */
    void prove(C connection) {
        InetAddress peer = members.get(connection);
        if (peer == null || !all.remove(connection)) return;
        peers.get(peer).unproven.remove(connection);
    }

    /** Whether a request of this connection has shown the token or a session. */
    boolean proven(C connection) {
        return members.containsKey(connection) && !all.contains(connection);
    }

    /** The connection closed (or was never admitted): idempotent. */
    void release(C connection) {
        InetAddress peer = members.remove(connection);
        if (peer == null) return;
        all.remove(connection);
        Peer p = peers.get(peer);
        p.unproven.remove(connection);
        if (--p.count == 0) peers.remove(peer);
    }

    /** Connections counted now. */
    int total() {
        return members.size();
    }

    /** Unproven connections counted now. */
    int unproven() {
        return all.size();
    }
}
