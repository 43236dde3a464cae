package io.iotarget.control.http;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.function.Consumer;

/**
 * How many connections the control endpoint keeps: at most {@code max} in all and
 * {@code maxPerPeer} from one peer address, of which web sessions hold at most
 * {@code maxSessionConnections} together and {@code maxPerSession} each.
 *
 * <h2>1. Rank: what a connection's requests have shown</h2>
 * From the lowest:
 * <ol>
 *   <li><em>silent</em>: admitted, no whole request yet;
 *   <li><em>engaged</em>: sent a whole request without the token or a session ({@link #request}
 *       with {@link Shown#NOTHING}); the CLI is here for one round trip, between asking the
 *       server for its proof and showing the token;
 *   <li><em>session</em>: a request showed a live web session, which may only read
 *       ({@link WebView}); a session is granted by the owner but may be held by anyone the
 *       browser's cookie reaches;
 *   <li><em>token</em>: a request showed the token: the owner.
 * </ol>
 * A connection's rank only rises. Opening a connection needs nothing, so a peer without the
 * token or a session can only ever hold silent and engaged ones.
 *
 * <h2>2. At a cap the newcomer makes room</h2>
 * A newcomer is not yet ranked (it is silent), so at a cap it is not refused while a
 * connection below the token is there to make room: the lowest-ranked one of that peer (at
 * the per-peer cap) or of all (at the total cap) is closed instead: the oldest silent one, else
 * the oldest engaged one, else the session connection used least recently. A connection that
 * showed the token is never closed for a newcomer; only when every connection at the cap did
 * is the newcomer refused (closed at once).
 * <p>
 * So a flood of stalled connections, from any number of processes or users behind one address
 * (every local user is 127.0.0.1), holds at most the caps and never locks out the CLI: its new
 * connection closes a stalled one, and while it is engaged the flood's newcomers close silent
 * ones first, then engaged ones older than the CLI's.
 *
 * <h2>3. Sessions have caps of their own</h2>
 * Ranking alone does not keep the owner in: the CLI's new connection is engaged, below every
 * session connection, for a round trip, so if sessions held a whole cap the next newcomer would
 * close it (and ranking that moment above sessions would let anyone without the token close a
 * browser's connections). Sessions therefore hold far less
 * than any cap: when a connection first shows a session that already has {@code maxPerSession}
 * connections, that session's least recently used connection is closed; when sessions together
 * already hold {@code maxSessionConnections}, the least recently used connection of the session
 * holding the most is closed (the first to join among equals), so one holder with many
 * sessions cannot push out another browser's few. A browser reconnects to replace a closed
 * idle keep-alive connection on its own. With the endpoint's numbers (a quarter of one
 * address's cap for all sessions, {@link ControlEndpoint#MAX_SESSION_CONNECTIONS}) three
 * quarters or more of every cap are always silent, engaged or the owner's: the situation of
 * section 2, where the CLI is safe.
 *
 * <h2>4. Worked example</h2>
 * maxPerPeer 4, maxPerSession 1, maxSessionConnections 2, one address:
 * <pre>
 *   b1 shows S; b2 shows S           S is at its cap: b1 closed           holds b2
 *   t1 shows T; t2 shows T           T is at its cap: t1 closed           holds b2 t2
 *   the CLI connects, asks proof     room (2 of 4): admitted, engaged     holds b2 t2 cli
 *   t3 connects, shows T             room; T at its cap: t2 closed        holds b2 cli t3
 *   t4, t5 connect (silent)          t5 finds the cap: t4 closed (silent) holds b2 cli t3 t5
 *   the CLI shows the token          token: never closed for a newcomer
 * </pre>
 * Before sessions had caps of their own, b1, b2, t1, t2 all stayed, the peer was at its cap
 * with nothing below a session, and the CLI was refused: the read-only view locked the owner
 * out (issue 29).
 *
 * <p>Owner: the endpoint's one event loop thread; not thread-safe.
 *
 * @param <C> a connection, which {@link #admit} and {@link #request} may close through {@code close}
 */
final class ConnectionBudget<C> {
    /** What one whole request showed. */
    sealed interface Shown {
        /** Neither the token nor a live session. */
        Shown NOTHING = new Nothing();
        /** The token: the owner. */
        Shown TOKEN = new Token();

        record Nothing() implements Shown {
        }

        /** A live web session; {@code key} tells sessions apart (equal for one session). */
        record Session(Object key) implements Shown {
        }

        record Token() implements Shown {
        }
    }

    /** Section 1, from the lowest. */
    private enum Rank { SILENT, ENGAGED, SESSION, TOKEN }

    private final int max;
    private final int maxPerPeer;
    private final int maxPerSession;
    private final int maxSessionConnections;
    private final Consumer<C> close;
    /** Every admitted connection. */
    private final Map<C, Member> members = new HashMap<>();
    /** Connections below the token, of all peers. */
    private final Evictable all = new Evictable();
    private final Map<InetAddress, Peer> peers = new HashMap<>();
    /** Each session's connections, least recently used first; sessions in the order they joined. */
    private final LinkedHashMap<Object, LinkedHashSet<C>> sessions = new LinkedHashMap<>();
    private int sessionConnections;
    private long evicted;

    private static final class Member {
        final InetAddress peer;
        Rank rank = Rank.SILENT;
        /** The session's key while the rank is SESSION. */
        Object session;

        Member(InetAddress peer) {
            this.peer = peer;
        }
    }

    /** One peer address's connections. */
    private final class Peer {
        int count;
        final Evictable evictable = new Evictable();
    }

    /** Connections below the token in eviction order: silent, engaged (oldest first in each), session (least recently used first). */
    private final class Evictable {
        final LinkedHashSet<C> silent = new LinkedHashSet<>();
        final LinkedHashSet<C> engaged = new LinkedHashSet<>();
        final LinkedHashSet<C> session = new LinkedHashSet<>();

        void remove(C connection) {
            if (!silent.remove(connection) && !engaged.remove(connection)) session.remove(connection);
        }

        void add(C connection, Rank rank) {
            switch (rank) {
                case SILENT -> silent.add(connection);
                case ENGAGED -> engaged.add(connection);
                case SESSION -> session.add(connection);
                case TOKEN -> throw new IllegalArgumentException("a connection that showed the token is never evicted");
            }
        }

        /** The first to close, or null when every connection here showed the token. */
        C first() {
            if (!silent.isEmpty()) return silent.getFirst();
            if (!engaged.isEmpty()) return engaged.getFirst();
            return session.isEmpty() ? null : session.getFirst();
        }
    }

    ConnectionBudget(int max, int maxPerPeer, int maxPerSession, int maxSessionConnections, Consumer<C> close) {
        if (max < 1 || maxPerPeer < 1 || maxPerSession < 1 || maxSessionConnections < 1) {
            throw new IllegalArgumentException("max " + max + ", maxPerPeer " + maxPerPeer + ", maxPerSession " + maxPerSession
                                               + ", maxSessionConnections " + maxSessionConnections + " (expected: >= 1)");
        }
        this.max = max;
        this.maxPerPeer = maxPerPeer;
        this.maxPerSession = maxPerSession;
        this.maxSessionConnections = maxSessionConnections;
        this.close = close;
    }

    /**
     * Counts {@code connection} as silent, making room where a cap is reached by closing the
     * lowest-ranked connection below the token (section 2). False when there is no room: the
     * caller closes it.
     */
    boolean admit(C connection, InetAddress peer) {
        Peer p = peers.get(peer);
        if (p != null && p.count >= maxPerPeer && !evict(p.evictable.first())) return false;
        if (members.size() >= max && !evict(all.first())) return false;
        p = peers.computeIfAbsent(peer, k -> new Peer());
        p.count++;
        p.evictable.silent.add(connection);
        all.silent.add(connection);
        members.put(connection, new Member(peer));
        return true;
    }

    /**
     * A whole request of {@code connection} showed {@code shown}: its rank rises to what that
     * proves (never falls), and a session connection becomes its session's most recently used.
     * The first time a connection shows a session, a connection of a session at its cap may be
     * closed (section 3).
     */
    void request(C connection, Shown shown) {
        Member m = members.get(connection);
        if (m == null) return;
        switch (shown) {
            case Shown.Nothing nothing -> {
                if (m.rank == Rank.SILENT) rank(connection, m, Rank.ENGAGED);
            }
            case Shown.Token token -> {
                if (m.rank == Rank.SESSION) leaveSession(connection, m);
                if (m.rank != Rank.TOKEN) rank(connection, m, Rank.TOKEN);
            }
            case Shown.Session session -> {
                if (m.rank == Rank.SESSION) {
                    rank(connection, m, Rank.SESSION);           // to the end: most recently used
                    LinkedHashSet<C> own = sessions.get(m.session);
                    own.remove(connection);
                    own.add(connection);
                } else if (m.rank != Rank.TOKEN) {
                    joinSession(connection, m, session.key());
                }
            }
        }
    }

    private void joinSession(C connection, Member m, Object key) {
        LinkedHashSet<C> own = sessions.get(key);
        if (own != null && own.size() >= maxPerSession) evict(own.getFirst());
        else if (sessionConnections >= maxSessionConnections) evict(busiestSession().getFirst());
        sessions.computeIfAbsent(key, k -> new LinkedHashSet<>()).add(connection);
        sessionConnections++;
        m.session = key;
        rank(connection, m, Rank.SESSION);
    }

    /** The session holding the most connections; the first to join among equals. */
    private LinkedHashSet<C> busiestSession() {
        LinkedHashSet<C> busiest = null;
        for (LinkedHashSet<C> s : sessions.values()) if (busiest == null || s.size() > busiest.size()) busiest = s;
        return busiest;
    }

    private void leaveSession(C connection, Member m) {
        LinkedHashSet<C> own = sessions.get(m.session);
        own.remove(connection);
        if (own.isEmpty()) sessions.remove(m.session);
        sessionConnections--;
        m.session = null;
    }

    /** Moves {@code connection} to {@code rank}, at the end of its order. */
    private void rank(C connection, Member m, Rank rank) {
        Evictable own = peers.get(m.peer).evictable;
        all.remove(connection);
        own.remove(connection);
        m.rank = rank;
        if (rank == Rank.TOKEN) return;
        all.add(connection, rank);
        own.add(connection, rank);
    }

    /** Closes {@code victim} (counted as evicted); false when there is none. */
    private boolean evict(C victim) {
        if (victim == null) return false;
        release(victim);
        close.accept(victim);
        evicted++;
        return true;
    }

    /** Whether a request of this connection has shown the token or a session. */
    boolean proven(C connection) {
        Member m = members.get(connection);
        return m != null && m.rank.compareTo(Rank.SESSION) >= 0;
    }

    /** The connection closed (or was never admitted): idempotent. */
    void release(C connection) {
        Member m = members.remove(connection);
        if (m == null) return;
        all.remove(connection);
        Peer p = peers.get(m.peer);
        p.evictable.remove(connection);
        if (m.rank == Rank.SESSION) leaveSession(connection, m);
        if (--p.count == 0) peers.remove(m.peer);
    }

    /** Connections counted now. */
    int total() {
        return members.size();
    }

    /** Connections counted now that no request has shown the token or a session. */
    int unproven() {
        return all.silent.size() + all.engaged.size();
    }

    /** Connections counted now that a session proved. */
    int sessionConnections() {
        return sessionConnections;
    }

    /** Connections closed to make room, since the start. */
    long evicted() {
        return evicted;
    }
}
