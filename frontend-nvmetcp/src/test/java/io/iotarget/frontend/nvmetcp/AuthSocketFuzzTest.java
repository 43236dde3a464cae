package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.config.Port;

import io.iotarget.frontend.nvmetcp.auth.DhChapExchange;
import io.iotarget.frontend.nvmetcp.auth.TestChapHost;
import io.iotarget.testkit.FuzzBudget;
import io.iotarget.testkit.ProcessResources;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The authentication state machine across the queues of one controller, over sockets. A victim
 * host keeps an admin and an IO queue, both authenticated (bidirectional, ffdhe2048), for the
 * whole run. In each case one to three connections claim its NQN (mostly with its host ID too)
 * and Connect IO queues to its controller (mostly; sometimes to another id, or as another host
 * ID), then run a random sequence of AUTH_Send (Negotiate, Replies with the right key or another,
 * Success2, Failure2, random bytes, in any order), AUTH_Receive (any AL), IO commands, whole
 * exchanges with the right key, and waits past the authentication deadline (shortened to
 * 200 ms), and end by close or RST.
 *
 * <p>Checked: a queue reads data only after an exchange with the right key; the target answers
 * every command or closes the queue (never leaves one waiting); after every case the victim's
 * two queues are the only connections, authenticated, and move data; at the end threads,
 * descriptors and memory are back near their baseline and nothing failed unexpectedly. Budget
 * as {@link NvmeSocketFuzzTest}'s ({@code -Diotarget.fuzz.cases} / {@code .seconds} / {@code .seed}).
 */
class AuthSocketFuzzTest {
    private static final ProcessResources.Tolerance TOLERANCE = new ProcessResources.Tolerance(4, 4, 8 << 20, 64 << 20, 256L << 20);
    private static final long WARM_UP_CASES = 100;
    private static final int READ = 0x02;
    private static final String SECURE = AuthenticationProtocolTest.SECURE;
    private static final String KEYED = AuthenticationProtocolTest.KEYED;

    private final String hostSecret = TestChapHost.newSecret(1, 32);
    private final String controllerSecret = TestChapHost.newSecret(2, 48);

    @Test
    void misbehavingQueuesAffectOnlyThemselves() throws Exception {
        try (TargetFixture f = new TargetFixture()) {
            String s = "subsystems/" + SECURE;
            f.tree.mkdir(s);
            f.tree.mkdir(s + "/namespaces/1");
            f.tree.write(s + "/namespaces/1/device_path", "default");
            f.tree.write(s + "/namespaces/1/enable", "1");
            f.tree.mkdir("hosts/" + KEYED);
            f.tree.link("hosts/" + KEYED, s + "/allowed_hosts/" + KEYED);
            f.tree.write("hosts/" + KEYED + "/dhchap_key", hostSecret);
            f.tree.write("hosts/" + KEYED + "/dhchap_ctrl_key", controllerSecret);
            f.tree.write("hosts/" + KEYED + "/dhchap_dhgroup", "ffdhe2048");
            f.tree.link(s, "ports/1/subsystems/" + SECURE);
            try (TestHost admin = new TestHost(f.port, false, false); TestHost io = new TestHost(f.port, false, false)) {
                int cntlid = (int) admin.connect(SECURE, KEYED, 0, 0xFFFF, 32, 0, false).result() & 0xFFFF;
                admin.authenticate(chap(true), true);
                assertEquals(0, admin.propertySet(0x14, 0x460001).status());
                assertEquals(0, io.connect(SECURE, KEYED, 1, cntlid, 32, 0, false).status());
                io.authenticate(chap(true), true);
                f.target.authenticationDeadlineMs = 200;            // the victim's queues have authenticated
                Victim victim = new Victim(admin, io, cntlid);
                victim.check(f);

                FuzzBudget budget = new FuzzBudget("AuthSocketFuzzTest", 500);
                Map<String, Integer> kinds = new HashMap<>();
                ProcessResources baseline = null;
                while (budget.another()) {
                    long n = budget.done();
                    try {
                        oneCase(f, victim, budget.random(n), kinds);
                        victim.check(f);
                    } catch (AssertionError | IOException e) {
                        throw new AssertionError("case " + n + " (seed " + budget.seed() + "): " + e.getMessage(), e);
                    }
                    if (n == WARM_UP_CASES) baseline = ProcessResources.now();
                }
                System.out.println("AuthSocketFuzzTest: " + budget.done() + " cases " + kinds);
                if (baseline != null) {
                    ProcessResources quiet = ProcessResources.now();
                    assertNull(ProcessResources.awaitNear(baseline, TOLERANCE, 20_000), "back to the baseline " + baseline + " (now " + quiet + ")");
                }
                assertEquals(0, f.target.transport().unexpectedFailures(), "no handler failed unexpectedly");
                assertEquals(0, f.target.unexpectedErrors(), "no timer or DH thread failed");
                assertEquals(0, f.target.counters().counter(NvmeTcpCounter.KEEP_ALIVE_EXPIRED));
            }
        }
    }

    private TestChapHost chap(boolean bidirectional) {
        return new TestChapHost(KEYED, SECURE, hostSecret, bidirectional ? controllerSecret : null);
    }

    /** The victim's queues: the only connections left after a case, authenticated, and they move data. */
    private record Victim(TestHost admin, TestHost io, int cntlid) {
        void check(TargetFixture f) throws Exception {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (f.target.transport().connectionCount() != 2 && System.nanoTime() < deadline) Thread.sleep(5);
            assertEquals(2, f.target.transport().connectionCount(), "the case's connections are gone, the victim's are not");
            assertEquals(0, admin.identify(1, 0).status(), "the victim's admin queue");
            assertEquals(0, io.execute(io.lbaCommand(READ, 1, 0, 1, 0), null, 512, false).status(), "the victim's IO queue");
            StringBuilder queues = new StringBuilder();
            for (Port p : f.target.ports.values()) for (var c : f.target.connections(p)) queues.append(c.describe()).append('\n');
            assertEquals(2, queues.toString().lines().filter(l -> l.contains("cntlid=" + cntlid + " ") && l.endsWith("auth=ok")).count(), queues.toString());
        }
    }

    /** One attacking connection and what the case knows of it. */
    private static final class Queue {
        final TestHost host;
        boolean open = true;
        boolean rightKeyUsed;
        boolean bidirectional;
        byte[] lastReceived;
        TestChapHost chap;

        Queue(TestHost host) {
            this.host = host;
        }
    }

    private void oneCase(TargetFixture f, Victim victim, Random r, Map<String, Integer> kinds) throws Exception {
        List<Queue> queues = new ArrayList<>();
        try {
            for (int i = 1 + r.nextInt(3); i > 0; i--) {
                Queue q = new Queue(new TestHost(f.port, false, false));
                queues.add(q);
                q.host.timeout(5000);
                byte[] hostId = TestHost.hostId(KEYED);
                if (r.nextInt(8) == 0) hostId[r.nextInt(16)] ^= (byte) (1 + r.nextInt(255));
                int cntlid = r.nextInt(8) == 0 ? r.nextInt(0x10000) : victim.cntlid();
                TestHost.Completion c = q.host.connect(SECURE, KEYED, hostId, 2 + r.nextInt(3), cntlid, 32, 0, false);
                kinds.merge(c.status() == 0 ? "connected" : "connect refused", 1, Integer::sum);
            }
            for (int step = r.nextInt(10); step > 0; step--) {
                Queue q = queues.get(r.nextInt(queues.size()));
                if (!q.open) continue;
                try {
                    kinds.merge(act(q, r), 1, Integer::sum);
                } catch (SocketTimeoutException e) {
                    throw new AssertionError("the target neither answered nor closed the queue", e);
                } catch (IOException e) {
                    q.open = false;                                  // closed by the target
                }
            }
        } finally {
            for (Queue q : queues) {
                if (r.nextBoolean()) q.host.socket().setSoLinger(true, 0);     // RST
                q.host.close();
            }
        }
    }

    /** One random action on one attacking queue; returns its kind. */
    private String act(Queue q, Random r) throws IOException, InterruptedException {
        TestHost h = q.host;
        switch (r.nextInt(9)) {
            case 0 -> {
                boolean right = r.nextInt(3) == 0;
                q.bidirectional = right && r.nextBoolean();
                q.chap = right ? chap(q.bidirectional) : new TestChapHost(KEYED, SECURE, TestChapHost.newSecret(r.nextInt(4), 32), null);
                q.rightKeyUsed |= right;
                h.authSend(q.chap.negotiate());
                return "negotiate";
            }
            case 1 -> {
                int[] lengths = {16, 64, 1024, 4096, 1 + r.nextInt(8192)};
                TestHost.Completion c = h.authReceive(lengths[r.nextInt(lengths.length)]);
                q.lastReceived = c.data();
                return "receive";
            }
            case 2 -> {
                byte[] reply = null;
                try {
                    if (q.chap != null && q.lastReceived != null) reply = q.chap.reply(q.lastReceived);
                } catch (RuntimeException | AssertionError e) {
                    // not a Challenge this host can answer
                }
                h.authSend(reply != null ? reply : random(r, 1 + r.nextInt(300)));
                return reply != null ? "reply" : "random message";
            }
            case 3 -> {
                TestChapHost any = chap(r.nextBoolean());
                h.authSend(r.nextBoolean() ? any.success2() : any.failure2(DhChapExchange.REASON_FAILED));
                return "success2 or failure2";
            }
            case 4 -> {
                TestHost.Completion c = h.execute(h.lbaCommand(READ, 1, 0, 1, 0), null, 512, false);
                assertTrue(c.status() != 0 || q.rightKeyUsed, "a queue that never used the key reads nothing");
                return "read";
            }
            case 5 -> {
                q.bidirectional = r.nextBoolean();
                q.chap = chap(q.bidirectional);
                q.rightKeyUsed = true;
                h.authenticate(q.chap, q.bidirectional);
                assertEquals(0, h.execute(h.lbaCommand(READ, 1, 0, 1, 0), null, 512, false).status(), "authenticated with the key");
                return "whole exchange";
            }
            case 6 -> {
                if (r.nextInt(4) != 0) return "nothing";
                Thread.sleep(250);                                   // past the 200 ms deadline
                return "wait";
            }
            default -> {
                h.authSend(random(r, 1 + r.nextInt(100)));
                return "random message";
            }
        }
    }

    private static byte[] random(Random r, int length) {
        byte[] b = new byte[length];
        r.nextBytes(b);
        if (length > 1 && r.nextBoolean()) b[0] = (byte) r.nextInt(2);  // a valid AUTH_TYPE now and then
        return b;
    }
}
