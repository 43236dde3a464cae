package io.iotarget.frontend.nvmetcp.auth;

import io.iotarget.frontend.nvmetcp.auth.DhChapExchange.Outcome;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.security.SecureRandom;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The controller's state machine against {@link TestChapHost}, a host written from the spec's
 * rules alone: every hash, every group, both directions, and every refusal with nvmet's
 * reason code.
 */
class DhChapExchangeTest {
    private static final String HOST = "nqn.2014-08.org.nvmexpress:uuid:0f01fb42-9f7f-4856-b0b3-51e60b8de349";
    private static final String SUBSYSTEM = "nqn.2026-11.io.iotarget:tenant-a";
    private static final SecureRandom RANDOM = new SecureRandom();
    private static final int AL = 4096;                   // what Linux's host asks for

    private final String hostSecret = TestChapHost.newSecret(1, 32);
    private final String controllerSecret = TestChapHost.newSecret(3, 64);
    private final AtomicReference<DhChapCredentials> configured = new AtomicReference<>();
    private DhChapExchange exchange = newExchange();

    private DhChapExchange newExchange() {
        return new DhChapExchange(HOST, SUBSYSTEM, configured::get, RANDOM);
    }

    private void configure(DhChapHash hash, DhGroup group, boolean controllerKey) {
        configured.set(new DhChapCredentials(DhChapSecret.parse(hostSecret), controllerKey ? DhChapSecret.parse(controllerSecret) : null, hash, group));
    }

    private TestChapHost host(boolean bidirectional) {
        return new TestChapHost(HOST, SUBSYSTEM, hostSecret, bidirectional ? controllerSecret : null);
    }

    private Outcome send(byte[] message) {
        return exchange.send(ByteBuffer.wrap(message));
    }

    private byte[] receive() {
        ByteBuffer b = ByteBuffer.allocate(AL);
        for (int i = 0; i < AL; i++) b.put(i, (byte) 0x5A);          // garbage the exchange must clear
        lastReceive = exchange.receive(b);
        return b.array();
    }

    private Outcome lastReceive;

    private void authenticate(TestChapHost h, boolean bidirectional) {
        assertEquals(Outcome.CONTINUE, send(h.negotiate()));
        byte[] challenge = receive();
        assertEquals(Outcome.CONTINUE, lastReceive);
        assertEquals(bidirectional ? Outcome.CONTINUE : Outcome.AUTHENTICATED, send(h.reply(challenge)));
        assertEquals(!bidirectional, exchange.authenticated(), "unidirectional: authenticated by the Reply, as nvmet");
        byte[] success1 = receive();
        assertEquals(Outcome.CONTINUE, lastReceive);
        h.checkSuccess1(success1);
        assertEquals(0, success1[16 + (bidirectional ? success1[6] : 0)], "zeroed after the message");
        if (bidirectional) assertEquals(Outcome.AUTHENTICATED, send(h.success2()));
        assertTrue(exchange.authenticated());
    }

    @Test
    void shouldAuthenticateWithEveryHashWithoutDh() {
        for (DhChapHash hash : DhChapHash.values()) {
            configure(hash, DhGroup.NULL, false);
            exchange = newExchange();
            TestChapHost h = host(false);
            authenticate(h, false);
            assertEquals(hash.id(), h.hashId);
            assertEquals(0, h.groupId);
        }
    }

    @Test
    void shouldAuthenticateBothWaysInEveryGroup() {
        for (DhGroup group : DhGroup.values()) {
            configure(DhChapHash.SHA384, group, true);
            exchange = newExchange();
            TestChapHost h = host(true);
            authenticate(h, true);
            assertEquals(group.id(), h.groupId);
        }
    }

    @Test
    void shouldFailAWrongKeyWithFailure1AndNoAuthentication() {
        configure(DhChapHash.SHA256, DhGroup.FFDHE2048, false);
        TestChapHost h = host(false);
        send(h.negotiate());
        assertEquals(Outcome.CONTINUE, send(h.wrongReply(receive())), "the failure is reported by the next AUTH_Receive");
        assertFalse(exchange.authenticated());
        assertEquals(DhChapExchange.REASON_FAILED, TestChapHost.failure1Reason(receive()));
        assertEquals(Outcome.FAILED, lastReceive);
        assertEquals(Outcome.FAILED, send(h.negotiate()), "a failed exchange stays failed");
    }

    @Test
    void shouldFailAHostWithAnotherKey() {
        configure(DhChapHash.SHA256, DhGroup.NULL, false);
        TestChapHost impostor = new TestChapHost(HOST, SUBSYSTEM, TestChapHost.newSecret(1, 32), null);
        send(impostor.negotiate());
        send(impostor.reply(receive()));
        assertEquals(DhChapExchange.REASON_FAILED, TestChapHost.failure1Reason(receive()));
        assertFalse(exchange.authenticated());
    }

    @Test
    void shouldFailWhenTheHostCannotCheckTheControllerKeyItAskedFor() {
        configure(DhChapHash.SHA256, DhGroup.NULL, false);           // no dhchap_ctrl_key
        TestChapHost h = host(true);
        send(h.negotiate());
        send(h.reply(receive()));
        assertEquals(DhChapExchange.REASON_FAILED, TestChapHost.failure1Reason(receive()));
        assertFalse(exchange.authenticated());
    }

    @Test
    void shouldRefuseNegotiationsItCannotHonour() {
        record Case(String what, java.util.function.Consumer<TestChapHost> change, int reason) {
        }
        Case[] cases = {
                new Case("configured hash not offered", h -> h.hashes = new int[]{1, 3}, DhChapExchange.REASON_HASH_UNUSABLE),
                new Case("configured group not offered", h -> h.groups = new int[]{0, 1, 2}, DhChapExchange.REASON_DHGROUP_UNUSABLE),
                new Case("no hash offered", h -> h.hashes = new int[0], DhChapExchange.REASON_HASH_UNUSABLE)};
        for (Case c : cases) {
            DhChapExchange e = newExchange();
            configure(DhChapHash.SHA384, DhGroup.FFDHE4096, false);
            TestChapHost h = host(false);
            c.change().accept(h);
            assertEquals(Outcome.CONTINUE, e.send(ByteBuffer.wrap(h.negotiate())), c.what());
            ByteBuffer out = ByteBuffer.allocate(AL);
            assertEquals(Outcome.FAILED, e.receive(out), c.what());
            assertEquals(c.reason(), TestChapHost.failure1Reason(out.array()), c.what());
        }
    }

    @Test
    void shouldRefuseMalformedNegotiatesAsNvmet() {
        configure(DhChapHash.SHA256, DhGroup.NULL, false);
        byte[] good = host(false).negotiate();
        int[][] edits = {{6, 1, DhChapExchange.REASON_CONCAT_MISMATCH},     // secure channel concatenation
                         {7, 2, DhChapExchange.REASON_HASH_UNUSABLE},       // two protocol descriptors
                         {8, 2, DhChapExchange.REASON_INCORRECT_PAYLOAD},   // not DH-HMAC-CHAP
                         {10, 31, DhChapExchange.REASON_INCORRECT_PAYLOAD}, // more hash ids than slots
                         {11, 31, DhChapExchange.REASON_INCORRECT_PAYLOAD}};
        for (int[] edit : edits) {
            byte[] m = good.clone();
            m[edit[0]] = (byte) edit[1];
            assertEquals(edit[2], refusedNegotiate(m), "byte " + edit[0]);
        }
        assertEquals(DhChapExchange.REASON_INCORRECT_PAYLOAD, refusedNegotiate(java.util.Arrays.copyOf(good, 71)), "short");
    }

    private int refusedNegotiate(byte[] negotiate) {
        DhChapExchange e = newExchange();
        e.send(ByteBuffer.wrap(negotiate));
        ByteBuffer out = ByteBuffer.allocate(AL);
        assertEquals(Outcome.FAILED, e.receive(out));
        assertFalse(e.authenticated());
        return TestChapHost.failure1Reason(out.array());
    }

    @Test
    void shouldRefuseAHostWithoutCredentialsAsNotUsable() {
        configured.set(null);
        send(host(false).negotiate());
        assertEquals(DhChapExchange.REASON_NOT_USABLE, TestChapHost.failure1Reason(receive()));
    }

    @Test
    void shouldFailAtOnceOnMessagesOutOfSequence() {
        configure(DhChapHash.SHA256, DhGroup.NULL, false);
        TestChapHost h = host(false);
        assertEquals(Outcome.FAILED, send(h.success2()), "Success2 before anything");

        DhChapExchange e = newExchange();
        e.send(ByteBuffer.wrap(h.negotiate()));
        assertEquals(Outcome.FAILED, e.send(ByteBuffer.wrap(h.negotiate()).position(0).limit(72).slice().put(1, (byte) 2)),
                "a Reply-shaped message where the Challenge is to be read");
        assertFalse(e.authenticated());

        DhChapExchange r = newExchange();
        ByteBuffer out = ByteBuffer.allocate(AL);
        assertEquals(Outcome.FAILED, r.receive(out), "a receive where a Negotiate is expected");
        assertEquals(DhChapExchange.REASON_FAILED, TestChapHost.failure1Reason(out.array()));
    }

    @Test
    void shouldFailWhenTheHostGivesUp() {
        configure(DhChapHash.SHA256, DhGroup.NULL, false);
        TestChapHost h = host(false);
        send(h.negotiate());
        receive();
        assertEquals(Outcome.FAILED, send(h.failure2(DhChapExchange.REASON_FAILED)));
        assertFalse(exchange.authenticated());
    }

    @Test
    void shouldRefuseAReplyOfAnotherTransaction() {
        configure(DhChapHash.SHA256, DhGroup.NULL, false);
        TestChapHost h = host(false);
        send(h.negotiate());
        byte[] reply = h.reply(receive());
        reply[4] ^= 1;
        assertEquals(Outcome.CONTINUE, send(reply));
        assertEquals(DhChapExchange.REASON_INCORRECT_PAYLOAD, TestChapHost.failure1Reason(receive()));
    }

    @Test
    void shouldRefuseBadDhValues() {
        configure(DhChapHash.SHA256, DhGroup.FFDHE2048, false);
        TestChapHost h = host(false);
        send(h.negotiate());
        byte[] reply = h.reply(receive());
        java.util.Arrays.fill(reply, 16 + 64, reply.length, (byte) 0);
        reply[reply.length - 1] = 1;                                  // g^y = 1
        send(reply);
        assertEquals(DhChapExchange.REASON_DHGROUP_UNUSABLE, TestChapHost.failure1Reason(receive()));

        DhChapExchange e = newExchange();
        e.send(ByteBuffer.wrap(h.negotiate()));
        ByteBuffer challenge = ByteBuffer.allocate(AL);
        e.receive(challenge);
        byte[] noValue = java.util.Arrays.copyOf(h.reply(challenge.array()), 16 + 64);
        noValue[10] = 0;
        noValue[11] = 0;                                              // DHVLEN 0 with a DH group
        e.send(ByteBuffer.wrap(noValue));
        ByteBuffer out = ByteBuffer.allocate(AL);
        e.receive(out);
        assertEquals(DhChapExchange.REASON_INCORRECT_PAYLOAD, TestChapHost.failure1Reason(out.array()));
    }

    @Test
    void shouldRefuseReplyLengthsThatDoNotAddUp() {
        configure(DhChapHash.SHA256, DhGroup.NULL, false);
        TestChapHost h = host(false);
        send(h.negotiate());
        byte[] reply = h.reply(receive());
        send(java.util.Arrays.copyOf(reply, reply.length - 1));
        assertEquals(DhChapExchange.REASON_INCORRECT_PAYLOAD, TestChapHost.failure1Reason(receive()));
    }

    @Test
    void shouldLeaveTheExchangeAsItWasWhenTheBufferIsTooSmall() {
        configure(DhChapHash.SHA512, DhGroup.FFDHE3072, false);
        TestChapHost h = host(false);
        send(h.negotiate());
        assertEquals(Outcome.TOO_SHORT, exchange.receive(ByteBuffer.allocate(16 + 64 + 384 - 1)));
        byte[] challenge = receive();
        assertEquals(Outcome.AUTHENTICATED, send(h.reply(challenge)));
    }

    @Test
    void shouldReauthenticateWithTheConfigurationOfThatMoment() {
        configure(DhChapHash.SHA256, DhGroup.NULL, false);
        authenticate(host(false), false);
        configure(DhChapHash.SHA512, DhGroup.FFDHE2048, true);
        TestChapHost h = host(true);
        assertEquals(Outcome.CONTINUE, send(h.negotiate()));
        assertTrue(exchange.authenticated(), "the queue keeps its authentication while it re-authenticates");
        send(h.reply(receive()));
        h.checkSuccess1(receive());
        assertEquals(Outcome.AUTHENTICATED, send(h.success2()));
        assertEquals(DhChapHash.SHA512.id(), h.hashId);
    }

    @Test
    void shouldLoseTheAuthenticationWhenAReauthenticationFails() {
        configure(DhChapHash.SHA256, DhGroup.NULL, false);
        authenticate(host(false), false);
        TestChapHost impostor = new TestChapHost(HOST, SUBSYSTEM, TestChapHost.newSecret(0, 48), null);
        send(impostor.negotiate());
        send(impostor.reply(receive()));
        assertFalse(exchange.authenticated(), "unusable at once, before the Failure1 is read");
        assertEquals(DhChapExchange.REASON_FAILED, TestChapHost.failure1Reason(receive()));
    }
}
