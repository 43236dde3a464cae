package io.iotarget.frontend.nvmetcp;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static io.iotarget.frontend.nvmetcp.EtcdNodes.WE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A seeded randomized run against the invariant of docs/reservations.md, checked on the data
 * (issue 31, item 5): two nodes over one file, hosts A and B each writing through both nodes
 * all along, every block stamped with (host, round, sequence). Each round the test either moves
 * Write Exclusive to the other host (preempt or preempt-and-abort, or an acquire when none
 * holds), releases it, cuts one node off from etcd for up to 1.5 leases (with a change through
 * the other node meanwhile, mostly), or just lets the hosts write.
 *
 * <p>A host's access ends when the command that took it away completes; it begins again when
 * a command that gives it back (a release, its own acquire) is sent. While a host has no
 * access, the file must not hold a stamp of a write it sent after its access ended, nor any
 * stamp of it on a block that the new holder overwrote after the change completed (that write
 * landed after the change); and no write it sent after its access ended and that was answered
 * before access came back may have been answered success. The seed is printed; run one again
 * with {@code -Diotarget.chaos.seed=N}.
 */
class ReservationChaosTest {
    private static final int ROUNDS = Integer.getInteger("iotarget.chaos.rounds", 200);
    private static final long LEASE_MS = 1000, INTERVAL_MS = 100;
    private static final int BLOCKS = 16;
    private static final int[] ID = {0xA1, 0xB2};
    private static final long[] KEY = {0xAAAA, 0xBBBB};
    private static final String[] NAME = {"A", "B"};
    private static final long NONE = Long.MAX_VALUE;

    @TempDir
    Path dir;
    private EtcdNodes cluster;
    private final ExecutorService pool = Executors.newCachedThreadPool();

    /** One write: set before it is sent; its answer once answered (status -1 until then). */
    private static final class Sent {
        final int host;
        final int node;
        final int round;
        final long seq;
        final long sentNs;
        volatile long answeredNs;
        volatile int status = -1;

        Sent(int host, int node, int round, long seq, long sentNs) {
            this.host = host;
            this.node = node;
            this.round = round;
            this.seq = seq;
            this.sentNs = sentNs;
        }

        @Override
        public String toString() {
            return NAME[host] + "'s write " + seq + " (round " + round + ", node " + (node + 1) + ", status 0x" + Integer.toHexString(status) + ")";
        }
    }

    private final Map<Long, Sent> sent = new ConcurrentHashMap<>();
    private final AtomicLong seqs = new AtomicLong();
    private volatile int round;

    // The model, the test's thread only.
    private final EtcdNodes.Node[] nodes = new EtcdNodes.Node[2];
    /** Reservation commands and the new holder's overwrite, per host and node. */
    private final ReservationHost[][] ctl = new ReservationHost[2][2];
    private int holder = -1;
    private final boolean[] registered = new boolean[2];
    /** When each host's access ended (NONE while it has access). */
    private final long[] endedNs = {NONE, NONE};
    /** Blocks the holder overwrote after the other host's access ended. */
    private final boolean[] overwritten = new boolean[BLOCKS];
    /** Closed windows without access, per host: {end, next grant sent}. */
    private final List<List<long[]>> windows = List.of(new ArrayList<>(), new ArrayList<>());
    private final List<String> violations = new ArrayList<>();
    private int ambiguous;

    @AfterEach
    void stop() {
        pool.shutdownNow();
        if (cluster != null) cluster.close();
    }

    private static byte[] stamp(int host, int round, long seq) {
        ByteBuffer b = ByteBuffer.allocate(512);
        b.put(0, (byte) ID[host]).putInt(4, round).putLong(8, seq);
        return b.array();
    }

    /** Host {@code host}'s write of a stamped block through {@code via}, recorded. */
    private int write(int host, int node, ReservationHost via, long lba) throws Exception {
        long seq = seqs.incrementAndGet();
        Sent s = new Sent(host, node, round, seq, System.nanoTime());
        sent.put(seq, s);
        int status = EtcdNodes.write(via, lba, stamp(host, s.round, seq));
        s.answeredNs = System.nanoTime();
        s.status = status;
        return status;
    }

    @Test
    void shouldNeverLeaveAWriteOfAHostWithoutAccessOnTheDiskThroughRandomPreemptsReleasesPartitionsAndPauses() throws Exception {
        long seed = Long.getLong("iotarget.chaos.seed", System.nanoTime());
        System.out.println("ReservationChaosTest seed " + seed + " (-Diotarget.chaos.seed=" + seed + ")");
        Random rnd = new Random(seed);
        cluster = new EtcdNodes(dir, LEASE_MS, INTERVAL_MS);
        nodes[0] = cluster.node("n1");
        nodes[1] = cluster.node("n2");
        for (int h = 0; h < 2; h++) for (int n = 0; n < 2; n++) ctl[h][n] = cluster.host(nodes[n], ID[h]);

        AtomicBoolean writing = new AtomicBoolean(true);
        List<Future<?>> writers = new ArrayList<>();
        for (int h = 0; h < 2; h++) {
            for (int n = 0; n < 2; n++) {
                int host = h, node = n;
                ReservationHost via = cluster.host(nodes[n], ID[h]);
                writers.add(pool.submit(() -> {
                    ThreadLocalRandom r = ThreadLocalRandom.current();
                    while (writing.get()) {
                        write(host, node, via, r.nextInt(BLOCKS));
                        Thread.sleep(r.nextInt(2, 10));
                    }
                    return null;
                }));
            }
        }

        long startNs = System.nanoTime();
        int[] counts = new int[5];
        for (int r = 0; r < ROUNDS; r++) {
            round = r;
            check("round " + r);
            double p = rnd.nextDouble();
            if (p < 0.10) {
                counts[0]++;
                partition(rnd);
            } else if (p < 0.20) {
                counts[4]++;
                pause(rnd);
            } else if (p < 0.35) {
                counts[1]++;
                if (holder >= 0) release(rnd.nextInt(2));
                else take(rnd.nextInt(2), rnd.nextInt(2), rnd);
            } else if (p < 0.85) {
                counts[2]++;
                take(holder >= 0 ? 1 - holder : rnd.nextInt(2), rnd.nextInt(2), rnd);
            } else {
                counts[3]++;
            }
            Thread.sleep(rnd.nextInt(10, 60));                   // the hosts write meanwhile
        }
        writing.set(false);
        for (Future<?> w : writers) w.get(30, TimeUnit.SECONDS);
        check("the end");
        statusCheck();
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs);
        long ok = sent.values().stream().filter(s -> s.status == 0).count();
        System.out.printf("ReservationChaosTest seed %d: %d rounds in %d ms (%d partitions, %d pauses, %d releases, %d preempts, %d quiet), %d writes"
                          + " (%d succeeded), %d ambiguous outcomes, %d violations%n",
                          seed, ROUNDS, tookMs, counts[0], counts[4], counts[1], counts[2], counts[3], sent.size(), ok, ambiguous, violations.size());
        assertTrue(violations.isEmpty(), "seed " + seed + ": " + violations.size() + " violations, the first: "
                                         + String.join("\n", violations.subList(0, Math.min(10, violations.size()))));
    }

    /**
     * The re-join window, aimed at: node 1 is cut off from etcd while host H writes through it
     * all along; the other host preempts H through node 2, which completes once node 1's lease
     * expired; node 1 is restored at once and re-joins with a new lease. No write of H sent after
     * the preempt completed may succeed through node 1 or be on the disk, however the re-join
     * and the copy's re-read race. Ten rounds, the holder alternating.
     */
    @Test
    void shouldRefuseThePreemptedHostsWritesOnANodeThatComesBackWithANewLease() throws Exception {
        cluster = new EtcdNodes(dir, LEASE_MS, INTERVAL_MS);
        nodes[0] = cluster.node("n1");
        nodes[1] = cluster.node("n2");
        for (int h = 0; h < 2; h++) for (int n = 0; n < 2; n++) ctl[h][n] = cluster.host(nodes[n], ID[h]);
        ReservationHost[][] writersOn1 = new ReservationHost[2][3];
        for (int h = 0; h < 2; h++) for (int i = 0; i < 3; i++) writersOn1[h][i] = cluster.host(nodes[0], ID[h]);
        assertEquals(0, ctl[0][1].register(KEY[0]));
        assertEquals(0, ctl[0][1].acquire(0, WE, KEY[0], 0));
        for (int r = 0; r < 10; r++) {
            round = r;
            int h = r % 2, o = 1 - h;
            assertEquals(0, ctl[o][1].register(KEY[o]), NAME[o] + " registers");
            AtomicBoolean writing = new AtomicBoolean(true);
            List<Future<?>> writers = new ArrayList<>();
            for (ReservationHost via : writersOn1[h]) {
                writers.add(pool.submit(() -> {
                    while (writing.get()) write(h, 0, via, ThreadLocalRandom.current().nextInt(BLOCKS));
                    return null;
                }));
            }
            Thread.sleep(50);
            nodes[0].cut();
            int s;
            long doneNs;
            try {
                s = ctl[o][1].acquire(1 + r / 2 % 2, WE, KEY[o], KEY[h]);
                doneNs = System.nanoTime();
            } finally {
                nodes[0].restore();
            }
            assertEquals(0, s, NAME[o] + " preempts " + NAME[h] + " through node 2");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (write(o, 0, ctl[o][0], 0) != 0) {                 // node 1 serves the new holder: it re-joined and read
                assertTrue(System.nanoTime() < deadline, "node 1 serves " + NAME[o] + " again");
                Thread.sleep(10);
            }
            Thread.sleep(100);
            writing.set(false);
            for (Future<?> w : writers) w.get(30, TimeUnit.SECONDS);
            for (Sent w : sent.values()) {
                if (w.host == h && w.round == r && w.status == 0 && w.sentNs - doneNs > 0) {
                    violations.add(w + " succeeded through node 1, sent " + ms(w.sentNs - doneNs) + " ms after " + NAME[h] + " was preempted");
                }
            }
            for (int b = 0; b < BLOCKS; b++) {
                ByteBuffer block = ByteBuffer.wrap(cluster.onDisk(b));
                Sent w = sent.get(block.getLong(8));
                if (block.get(0) == (byte) ID[h] && w != null && w.sentNs - doneNs > 0) violations.add("LBA " + b + " holds " + w + ", sent after the preempt");
            }
        }
        long ok = sent.values().stream().filter(w -> w.status == 0).count();
        System.out.printf("re-join: 10 preempts across a cut, %d writes through node 1 (%d succeeded), %d violations%n", sent.size(), ok, violations.size());
        assertTrue(violations.isEmpty(), violations.size() + " violations, the first: " + String.join("\n", violations.subList(0, Math.min(10, violations.size()))));
    }

    /**
     * The re-join window without the race: node 1's reservation store has a client of its own.
     * Both are cut off; B preempts A through node 2, which completes once node 1's lease expired;
     * then only node 1's membership is healed, so it re-joins with a new lease while its copy of
     * the reservation is still the one from before the preempt. A's writes through node 1 must
     * not succeed: a node whose lease ended must re-read every state before serving again.
     */
    @Test
    void shouldServeNothingFromTheCopyBeforeALostLeaseOnceTheNodeRejoins() throws Exception {
        rejoinWithTheStoreStillCut(LEASE_MS);
    }

    /**
     * The same with the store's contact fence out of the way (its lease 60 s, as
     * ReservationAcknowledgementTest sets it): only the membership lease fences. Before a
     * re-join re-read every copy, every write of A through node 1 after it re-joined succeeded
     * (50 of 50; re-joined 32 ms after B's preempt completed); under serve's settings (the test
     * above) the contact fence hid it, but only by timing.
     */
    @Test
    void shouldServeNothingFromTheCopyBeforeALostLeaseOnceTheNodeRejoinsWithOnlyTheMembershipFence() throws Exception {
        rejoinWithTheStoreStillCut(60_000);
    }

    private void rejoinWithTheStoreStillCut(long contactLeaseMs) throws Exception {
        cluster = new EtcdNodes(dir, LEASE_MS, INTERVAL_MS, contactLeaseMs);
        EtcdNodes.Node node1 = cluster.node("n1", true), node2 = cluster.node("n2");
        ReservationHost a = cluster.host(node2, ID[0]), b = cluster.host(node2, ID[1]), aOn1 = cluster.host(node1, ID[0]);
        assertEquals(0, a.register(KEY[0]));
        assertEquals(0, a.acquire(0, WE, KEY[0], 0));
        assertEquals(0, b.register(KEY[1]));
        long joins = node1.membership().joins();
        node1.cut();
        try {
            assertEquals(0, b.acquire(1, WE, KEY[1], KEY[0]), "B preempts A through node 2");
            long doneNs = System.nanoTime();
            node1.restoreMembership();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (node1.membership().joins() == joins || !node1.membership().fence().holds()) {
                assertTrue(System.nanoTime() < deadline, "node 1 re-joins");
                Thread.sleep(5);
            }
            long rejoinedMs = ms(System.nanoTime() - doneNs);
            for (int i = 0; i < 50; i++) {
                long sentNs = System.nanoTime();
                int s = write(0, 0, aOn1, i % BLOCKS);
                if (s == 0) violations.add("A's write sent " + ms(sentNs - doneNs) + " ms after B's preempt completed succeeded through node 1"
                                           + " (re-joined " + rejoinedMs + " ms after it)");
                if (i == 0) System.out.printf("re-join: node 1 re-joined %d ms after B's preempt; A's first write through it: 0x%x%n", rejoinedMs, s);
                Thread.sleep(10);
            }
        } finally {
            node1.restore();
        }
        assertTrue(violations.isEmpty(), violations.size() + " violations, the first: " + String.join("\n", violations.subList(0, Math.min(5, violations.size()))));
    }

    // ---------------------------------------------------------------- the rounds

    /** Cuts one node off from etcd for up to 1.5 leases; mostly a change through the other node meanwhile. */
    private void partition(Random rnd) throws Exception {
        int k = rnd.nextInt(2);
        nodes[k].cut();
        try {
            meanwhile(k, rnd);
        } finally {
            nodes[k].restore();
        }
    }

    /**
     * Pauses one node (its loop and its etcd traffic: {@link EtcdNodes.Node#freeze}) for up to 1.5
     * leases while its hosts go on sending to it; mostly a change through the other node
     * meanwhile. What they sent runs when it resumes: against a fence that no longer holds, or a
     * state read again after a re-join.
     */
    private void pause(Random rnd) throws Exception {
        int k = rnd.nextInt(2);
        java.util.concurrent.CountDownLatch resume = nodes[k].freeze();
        try {
            meanwhile(k, rnd);
        } finally {
            nodes[k].thaw(resume);
        }
    }

    /** While node {@code k} is cut off or paused (up to 1.5 leases): mostly a change through the other node. */
    private void meanwhile(int k, Random rnd) throws Exception {
        long cutMs = rnd.nextLong(100, LEASE_MS * 3 / 2);
        long cutNs = System.nanoTime();
        Thread.sleep(rnd.nextLong(0, cutMs / 2 + 1));
        int change = rnd.nextInt(3);
        if (change == 0 && holder >= 0) release(1 - k);
        else if (change <= 1) take(holder >= 0 ? 1 - holder : rnd.nextInt(2), 1 - k, rnd);
        long leftNs = cutNs + TimeUnit.MILLISECONDS.toNanos(cutMs) - System.nanoTime();
        if (leftNs > 0) TimeUnit.NANOSECONDS.sleep(leftNs);
    }

    /** Host {@code x} takes Write Exclusive through node {@code via} (registering first if it must). */
    private void take(int x, int via, Random rnd) throws Exception {
        if (holder == x) return;
        int other = 1 - x;
        if (!registered[x]) {
            int s = command(via, n -> ctl[x][n].register(KEY[x]), () -> registered[x]);
            assertEquals(0, s == AMBIGUOUS ? 0 : s, NAME[x] + " registers");
            registered[x] = true;
        }
        boolean preempt = holder == other;
        int action = preempt ? 1 + rnd.nextInt(2) : 0;
        long sentNs = System.nanoTime();
        grant(x, sentNs);                                        // x may write from the moment it asks
        int s = command(via, n -> ctl[x][n].acquire(action, WE, KEY[x], preempt ? KEY[other] : 0), () -> holder == x);
        long doneNs = System.nanoTime();
        if (s == AMBIGUOUS) {
            ended(other, doneNs + 3 * TimeUnit.MILLISECONDS.toNanos(LEASE_MS), -1);
        } else {
            assertEquals(0, s, NAME[x] + (preempt ? " preempts " + NAME[other] : " acquires") + " (action " + action + ")");
            holder = x;
            if (preempt) registered[other] = false;
            ended(other, doneNs, via);
        }
    }

    /** The holder releases through {@code via}: both hosts may write from the moment it asks. */
    private void release(int via) throws Exception {
        int h = holder;
        grant(1 - h, System.nanoTime());
        int s = command(via, n -> ctl[h][n].release(0, WE, KEY[h]), () -> holder == -1);
        assertTrue(s == 0 || s == AMBIGUOUS, NAME[h] + " releases: 0x" + Integer.toHexString(s));
        holder = -1;
    }

    /** {@code x} may write again from {@code sentNs}: its window without access closes. */
    private void grant(int x, long sentNs) {
        if (endedNs[x] == NONE) return;
        windows.get(x).add(new long[] {endedNs[x], sentNs});
        endedNs[x] = NONE;
    }

    /** {@code x}'s access ended at {@code atNs}; the holder overwrites every block through node {@code via} (none with -1). */
    private void ended(int x, long atNs, int via) throws Exception {
        endedNs[x] = atNs;
        Arrays.fill(overwritten, false);
        if (via < 0) return;
        for (int b = 0; b < BLOCKS; b++) overwritten[b] = write(holder, via, ctl[holder][via], b) == 0;
    }

    // ---------------------------------------------------------------- commands through either node

    private static final int AMBIGUOUS = -2;

    interface Cmd {
        int on(int node) throws Exception;
    }

    interface Goal {
        boolean reached();
    }

    /**
     * Sends {@code cmd} through node {@code via}; on a path error (that node is fenced, or
     * re-joining) reads the state back: if the change happened anyway, AMBIGUOUS (when it took
     * effect everywhere is unknown), else tries again through the other node, for up to 30 s.
     */
    private int command(int via, Cmd cmd, Goal goal) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int n = via; ; n = 1 - n) {
            int s = cmd.on(n);
            if (!EtcdNodes.pathError(s)) return s;
            resync();
            if (goal.reached()) {
                ambiguous++;
                return AMBIGUOUS;
            }
            assertTrue(System.nanoTime() < deadline, "a reservation command keeps failing with 0x" + Integer.toHexString(s));
            Thread.sleep(50);
        }
    }

    /** Reads the holder and the registrants back from whichever node answers. */
    private void resync() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (int n = 0; ; n = 1 - n) {
            ByteBuffer r = ctl[0][n].report(4096, true);
            if (r != null) {
                int registrants = r.getShort(5) & 0xFFFF;
                holder = -1;
                registered[0] = registered[1] = false;
                for (int i = 0; i < registrants; i++) {
                    long key = r.getLong(64 + 64 * i + 8);
                    int h = key == KEY[0] ? 0 : 1;
                    registered[h] = true;
                    if ((r.get(64 + 64 * i + 2) & 1) != 0) holder = h;
                }
                return;
            }
            assertTrue(System.nanoTime() < deadline, "no node answers a report");
            Thread.sleep(50);
        }
    }

    // ---------------------------------------------------------------- the invariant

    /** The data: no block holds a stamp of a host without access that it wrote after its access ended. */
    private void check(String when) throws Exception {
        for (int x = 0; x < 2; x++) {
            long end = endedNs[x];
            if (end == NONE) continue;
            for (int b = 0; b < BLOCKS; b++) {
                ByteBuffer block = ByteBuffer.wrap(cluster.onDisk(b));
                if (block.get(0) != (byte) ID[x]) continue;
                Sent w = sent.get(block.getLong(8));
                if (w == null) {
                    violations.add(when + ": LBA " + b + " holds an unknown stamp of " + NAME[x]);
                } else if (w.sentNs - end > 0) {
                    violations.add(when + ": LBA " + b + " holds " + w + ", sent " + ms(w.sentNs - end) + " ms after " + NAME[x] + "'s access ended");
                } else if (overwritten[b]) {
                    violations.add(when + ": LBA " + b + " holds " + w + ", which landed after the holder's overwrite, after " + NAME[x] + "'s access ended");
                }
            }
        }
    }

    /** The answers: no write sent after its host's access ended and answered before access came back succeeded. */
    private void statusCheck() {
        for (int x = 0; x < 2; x++) {
            List<long[]> all = new ArrayList<>(windows.get(x));
            if (endedNs[x] != NONE) all.add(new long[] {endedNs[x], NONE});
            for (Sent w : sent.values()) {
                if (w.host != x || w.status != 0) continue;
                for (long[] win : all) {
                    if (w.sentNs - win[0] > 0 && (win[1] == NONE || win[1] - w.answeredNs > 0)) {
                        violations.add(w + " succeeded, sent " + ms(w.sentNs - win[0]) + " ms after " + NAME[x] + "'s access ended");
                    }
                }
            }
        }
    }

    private static long ms(long ns) {
        return TimeUnit.NANOSECONDS.toMillis(ns);
    }
}
