package io.iotarget.control.http;

import io.iotarget.control.http.ConnectionBudget.Shown;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The caps make room by closing the lowest-ranked connection (silent, engaged, then a session's
 * least recently used), of the peer or of all, and never one that showed the token; sessions
 * hold at most their own caps.
 */
class ConnectionBudgetTest {
    private static final Shown S = new Shown.Session("S");
    private static final Shown T = new Shown.Session("T");
    private final List<String> closed = new ArrayList<>();
    /** 4 in all, 2 per peer, 2 per session, 3 for all sessions. */
    private final ConnectionBudget<String> budget = new ConnectionBudget<>(4, 2, 2, 3, closed::add);
    private final InetAddress a = InetAddress.getLoopbackAddress();
    private final InetAddress b = address(127, 0, 0, 2);
    private final InetAddress c = address(127, 0, 0, 3);

    @Test
    void shouldCloseThePeersOldestUnprovenConnectionAtThePerPeerCap() {
        assertTrue(budget.admit("a1", a));
        assertTrue(budget.admit("a2", a));
        assertTrue(budget.admit("a3", a));
        assertEquals(List.of("a1"), closed);
        assertEquals(2, budget.total());
        assertEquals(1, budget.evicted());
    }

    @Test
    void shouldCloseTheOldestUnprovenConnectionOfAllAtTheTotalCap() {
        budget.admit("a1", a);
        budget.admit("b1", b);
        budget.admit("b2", b);
        budget.admit("a2", a);
        budget.request("a1", Shown.TOKEN);
        assertTrue(budget.admit("c1", c));
        assertEquals(List.of("b1"), closed, "a1 showed the token: b1 is the oldest unproven");
        assertEquals(4, budget.total());
    }

    @Test
    void shouldCloseAConnectionThatNeverSentAWholeRequestBeforeOneThatAskedForTheProof() {
        budget.admit("cli", a);
        budget.request("cli", Shown.NOTHING);       // the CLI asked for the server's proof; its token comes next
        budget.admit("stalled1", a);
        assertTrue(budget.admit("stalled2", a));
        assertEquals(List.of("stalled1"), closed, "the CLI's connection is older but engaged");
        budget.request("stalled2", Shown.NOTHING);
        assertTrue(budget.admit("stalled3", a));
        assertEquals(List.of("stalled1", "cli"), closed, "among the engaged, the oldest goes first");
        assertEquals(2, budget.unproven());
    }

    @Test
    void shouldRefuseWhenEveryConnectionAtTheCapShowedTheToken() {
        budget.admit("a1", a);
        budget.admit("a2", a);
        budget.request("a1", Shown.TOKEN);
        budget.request("a2", Shown.TOKEN);
        assertFalse(budget.admit("a3", a), "a's two showed the token");
        assertTrue(closed.isEmpty());
        assertTrue(budget.admit("b1", b), "another peer still has room");
    }

    @Test
    void shouldCloseASessionConnectionForANewcomerOnlyWhenNothingUnprovenIsThere() {
        ConnectionBudget<String> wide = new ConnectionBudget<>(8, 3, 4, 4, closed::add);
        wide.admit("s1", a);
        wide.admit("s2", a);
        wide.request("s1", S);
        wide.request("s2", S);
        wide.admit("x", a);
        wide.request("x", Shown.NOTHING);
        assertTrue(wide.admit("y", a));
        assertEquals(List.of("x"), closed, "an engaged connection goes before a session's");
        wide.request("s1", S);                                  // s2 is now S's least recently used
        wide.request("y", Shown.TOKEN);
        assertTrue(wide.admit("cli", a), "the owner's newcomer closes a session connection");
        assertEquals(List.of("x", "s2"), closed);
        assertTrue(wide.proven("s1"));
        assertFalse(wide.proven("cli"));
    }

    @Test
    void shouldNeverCloseAConnectionThatShowedTheTokenEvenForTheOwner() {
        budget.admit("s1", a);
        budget.request("s1", S);
        budget.admit("cli", a);
        budget.request("cli", Shown.TOKEN);
        assertTrue(budget.admit("cli2", a));
        assertEquals(List.of("s1"), closed);
        budget.request("cli2", Shown.TOKEN);
        assertFalse(budget.admit("s2", a), "the peer's two showed the token");
        assertEquals(List.of("s1"), closed);
    }

    @Test
    void shouldCloseTheSessionsLeastRecentlyUsedConnectionPastItsOwnCap() {
        budget.admit("s1", a);
        budget.admit("s2", b);
        budget.admit("s3", c);
        budget.request("s1", S);
        budget.request("s2", S);
        budget.request("s1", S);                                // s2 is S's least recently used
        budget.request("s3", S);
        assertEquals(List.of("s2"), closed, "S holds at most 2, whatever address they come from");
        assertEquals(2, budget.sessionConnections());
        budget.request("s3", Shown.TOKEN);                      // a connection's rank rises: s3 leaves S
        assertEquals(1, budget.sessionConnections());
        budget.request("s3", S);
        assertTrue(budget.proven("s3"));
        assertEquals(1, budget.sessionConnections(), "rank never falls: s3 stays the owner's");
    }

    @Test
    void shouldCloseTheBusiestSessionsConnectionWhenSessionsTogetherAreAtTheirShare() {
        ConnectionBudget<String> wide = new ConnectionBudget<>(16, 16, 3, 4, closed::add);
        for (String s : List.of("h1", "h2", "h3", "b1", "h4")) wide.admit(s, a);
        wide.request("h1", T);
        wide.request("h2", T);
        wide.request("h3", T);
        wide.request("b1", S);                                  // sessions hold 4: their share
        wide.request("h4", S);
        assertEquals(List.of("h1"), closed, "T holds the most: its least recently used goes, not S's one");
        assertEquals(4, wide.sessionConnections());
        wide.admit("b2", a);
        wide.request("b2", S);
        assertEquals(List.of("h1", "h2"), closed, "T and S hold two each: T joined first");
    }

    @Test
    void shouldKeepTheOwnersNewConnectionWhileASessionKeepsReconnecting() {
        ConnectionBudget<String> endpoint = new ConnectionBudget<>(1024, 256, 16, 64, closed::add);
        int n = 0;
        for (; n < 256; n++) {
            endpoint.admit("s" + n, a);
            endpoint.request("s" + n, n % 2 == 0 ? S : T);
        }
        assertEquals(32, endpoint.sessionConnections(), "each session holds its 16");
        assertTrue(endpoint.admit("cli", a));
        endpoint.request("cli", Shown.NOTHING);                 // asked for the proof
        for (int i = 0; i < 1000; i++, n++) {
            assertTrue(endpoint.admit("s" + n, a));
            if (i % 3 != 0) endpoint.request("s" + n, i % 2 == 0 ? S : T);     // and stalled ones among them
        }
        assertFalse(closed.contains("cli"), "the CLI between its proof and its token");
        endpoint.request("cli", Shown.TOKEN);
        assertTrue(endpoint.proven("cli"));
    }

    @Test
    void shouldForgetAReleasedConnectionOnceAndKeepNothingOfAGonePeer() {
        budget.admit("a1", a);
        budget.request("a1", S);
        budget.release("a1");
        budget.release("a1");
        assertEquals(0, budget.total());
        assertEquals(0, budget.unproven());
        assertEquals(0, budget.sessionConnections());
        assertFalse(budget.proven("a1"));
        for (String s : List.of("a2", "a3")) budget.admit(s, a);
        assertTrue(closed.isEmpty(), "a1's slot was given back");
    }

    private static InetAddress address(int... bytes) {
        try {
            return InetAddress.getByAddress(new byte[]{(byte) bytes[0], (byte) bytes[1], (byte) bytes[2], (byte) bytes[3]});
        } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
        }
    }
}
