package io.iotarget.control.http;

import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The caps make room by closing the oldest unproven connection, of the peer or of all, and never a proven one. */
class ConnectionBudgetTest {
    private final List<String> closed = new ArrayList<>();
    private final ConnectionBudget<String> budget = new ConnectionBudget<>(4, 2, closed::add);
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
    }

    @Test
    void shouldCloseTheOldestUnprovenConnectionOfAllAtTheTotalCap() {
        budget.admit("a1", a);
        budget.admit("b1", b);
        budget.admit("b2", b);
        budget.admit("a2", a);
        budget.prove("a1");
        assertTrue(budget.admit("c1", c));
        assertEquals(List.of("b1"), closed, "a1 is proven: b1 is the oldest unproven");
        assertEquals(4, budget.total());
    }

    @Test
    void shouldCloseAConnectionThatNeverSentAWholeRequestBeforeOneThatAskedForTheProof() {
        budget.admit("cli", a);
        budget.engage("cli");       // the CLI asked for the server's proof; its token comes next
        budget.admit("stalled1", a);
        assertTrue(budget.admit("stalled2", a));
        assertEquals(List.of("stalled1"), closed, "the CLI's connection is older but engaged");
        budget.engage("stalled2");
        assertTrue(budget.admit("stalled3", a));
        assertEquals(List.of("stalled1", "cli"), closed, "among the engaged, the oldest goes first");
        assertEquals(2, budget.unproven());
    }

    @Test
    void shouldRefuseWhenEveryConnectionAtTheCapIsProven() {
        budget.admit("a1", a);
        budget.admit("a2", a);
        budget.prove("a1");
        budget.prove("a2");
        assertFalse(budget.admit("a3", a), "a's two are proven");
        assertTrue(closed.isEmpty());
        assertTrue(budget.admit("b1", b), "another peer still has room");
    }

    @Test
    void shouldForgetAReleasedConnectionOnceAndKeepNothingOfAGonePeer() {
        budget.admit("a1", a);
        budget.release("a1");
        budget.release("a1");
        assertEquals(0, budget.total());
        assertEquals(0, budget.unproven());
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
