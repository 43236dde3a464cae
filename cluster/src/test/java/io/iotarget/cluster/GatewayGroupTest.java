package io.iotarget.cluster;

import io.iotarget.model.Clock;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.TcpRelay;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Gateway groups (controller-ID ranges, ANA group owners) against a real three-member etcd cluster on loopback. */
class GatewayGroupTest {
    private static final Duration TIMEOUT = Duration.ofMillis(300);
    private static final long INTERVAL_MS = 100;
    private static final Set<Integer> SIX = Set.of(1, 2, 3, 4, 5, 6);

    @TempDir
    Path dir;
    private EtcdCluster etcd;
    private EtcdClient observer;
    private final List<AutoCloseable> closing = new CopyOnWriteArrayList<>();

    @BeforeEach
    void start() throws Exception {
        etcd = EtcdCluster.start(dir.resolve("etcd"));
        observer = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofSeconds(2));
    }

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : closing.reversed()) c.close();
        observer.close();
        etcd.close();
    }

    /** A node's NVMe side as the group sees it: what it was told to present, and when. */
    static final class Node implements GatewayGroup.Local {
        final String name;
        volatile Set<Integer> served;
        volatile Set<Integer> optimized = Set.of();
        /** "T_NS +G" when a group became optimized here, "T_NS -G" when it stopped. */
        final List<String> history = new CopyOnWriteArrayList<>();
        Membership membership;
        GatewayGroup group;
        /** Whether this node's fence held each time it was told to present a group optimized (must be all true). */
        final List<Boolean> fenceHeldWhenOptimized = new CopyOnWriteArrayList<>();
        /** Per gained group: whether the node it came from was fenced then (must be all true for failovers). */
        volatile Runnable onGain = () -> { };

        Node(String name, Set<Integer> served) {
            this.name = name;
            this.served = served;
        }

        @Override
        public Set<Integer> anaGroups() {
            return served;
        }

        @Override
        public void present(Set<Integer> served, Set<Integer> optimized) {
            long now = System.nanoTime();
            for (int g : optimized) {
                if (!this.optimized.contains(g)) {
                    history.add(now + " +" + g);
                    fenceHeldWhenOptimized.add(membership.fence().holds(now));
                    onGain.run();
                }
            }
            for (int g : this.optimized) if (!optimized.contains(g)) history.add(now + " -" + g);
            this.optimized = optimized;
        }

        List<Long> gainTimesNs() {
            List<Long> out = new ArrayList<>();
            for (String h : history) if (h.contains("+")) out.add(Long.parseLong(h.substring(0, h.indexOf(' '))));
            return out;
        }
    }

    private Node node(String name, String uri, Set<Integer> served) throws Exception {
        return node(name, uri, served, StorageFence.NONE);
    }

    private Node node(String name, String uri, Set<Integer> served, StorageFence storage) throws Exception {
        Node n = new Node(name, served);
        EtcdClient client = EtcdClient.create(uri, EtcdClient.Access.NONE, TIMEOUT);
        closing.add(client);
        n.membership = new Membership(client, name, 1000, Clock.SYSTEM);
        closing.add(n.membership);
        n.membership.start();
        n.group = new GatewayGroup(client, n.membership, "g", TimeUnit.MILLISECONDS.toNanos(INTERVAL_MS), Clock.SYSTEM, n);
        n.group.fenceStorageWith(storage);
        closing.add(n.group);
        n.group.join(TimeUnit.SECONDS.toNanos(20));
        n.group.start();
        return n;
    }

    /** Each node's optimized groups, by name. */
    private static Map<String, Set<Integer>> optimized(Node... nodes) {
        Map<String, Set<Integer>> out = new TreeMap<>();
        for (Node n : nodes) out.put(n.name, n.optimized);
        return out;
    }

    /** Every group of {@code groups} optimized on exactly one of {@code nodes}, each holding {@code each}. */
    private static boolean spread(Set<Integer> groups, int each, Node... nodes) {
        Set<Integer> seen = new TreeSet<>();
        for (Node n : nodes) {
            if (n.optimized.size() != each) return false;
            for (int g : n.optimized) if (!seen.add(g)) return false;
        }
        return seen.equals(groups);
    }

    private boolean memberKeyPresent(String name) {
        for (int i = 0; i < 2 * etcd.size(); i++) {
            try {
                return !observer.range(GatewayGroup.PREFIX + "g/members/" + name).kvs().isEmpty();
            } catch (java.io.IOException e) {
                // the next member
            }
        }
        throw new AssertionError("no etcd member answered");
    }

    @Test
    void membersGetDisjointControllerIdRangesTheSameAcrossARestart() throws Exception {
        Node a = node("a", etcd.uri(), SIX);
        Node b = node("b", etcd.uri(), SIX);
        Node c = node("c", etcd.uri(), SIX);
        List<int[]> ranges = List.of(a.group.range(), b.group.range(), c.group.range());
        for (int i = 0; i < ranges.size(); i++) {
            for (int j = i + 1; j < ranges.size(); j++) {
                assertTrue(ranges.get(i)[1] < ranges.get(j)[0] || ranges.get(j)[1] < ranges.get(i)[0],
                           "ranges overlap: " + ranges.get(i)[0] + ".." + ranges.get(i)[1] + " and " + ranges.get(j)[0] + ".." + ranges.get(j)[1]);
            }
            assertEquals(GatewayGroup.RANGE_SIZE, ranges.get(i)[1] - ranges.get(i)[0] + 1);
        }
        int[] before = b.group.range();
        b.group.close();
        b.membership.close();
        Node b2 = node("b", etcd.uri(), SIX);
        assertEquals(before[0], b2.group.range()[0], "b restarted with another range");
        Await.until(Duration.ofSeconds(10), () -> a.group.view().members().keySet().equals(Set.of("a", "b", "c"))
                                                  && a.group.view().members().get("b").lease() == b2.membership.fence().lease()
                                                  && a.group.view().members().get("b").cntlidMin() != 0,
                    () -> "members " + a.group.view().members());
        GatewayGroup.MemberView mb = a.group.view().members().get("b");
        assertEquals(before[0], mb.cntlidMin());
        assertEquals(before[1], mb.cntlidMax());
        assertEquals(b2.membership.fence().lease(), mb.lease());
    }

    @Test
    void aRangeIsTakenFromANodeOnlyWhenItsLeaseIsGone() throws Exception {
        // Every slot held: slot 7 by "live7", whose member key hangs on a lease kept alive here;
        // the others by nodes with no member key (their leases gone).
        EtcdClient.Lease lease = observer.grant(30);
        for (int s = 0; s < GatewayGroup.SLOTS; s++) {
            String owner = s == 7 ? "live7" : "gone" + s;
            observer.put(GatewayGroup.PREFIX + "g/ranges/" + s, ("{\"node\":\"" + owner + "\"}").getBytes(StandardCharsets.UTF_8), 0);
        }
        observer.put(GatewayGroup.PREFIX + "g/members/live7", "{\"node\":\"live7\"}".getBytes(StandardCharsets.UTF_8), lease.id());
        // Make slot 0..6 owners live as well, so that the first reclaimable slot is 8 and slot 7 is skipped.
        for (int s = 0; s < 7; s++) {
            observer.put(GatewayGroup.PREFIX + "g/members/gone" + s, ("{\"node\":\"gone" + s + "\"}").getBytes(StandardCharsets.UTF_8), lease.id());
        }
        Node n = node("new", etcd.uri(), SIX);
        assertEquals(GatewayGroup.cntlidMin(8), n.group.range()[0], "took a range whose owner's lease lives, or not the first free one");
        String slot7 = observer.range(GatewayGroup.PREFIX + "g/ranges/7").kvs().getFirst().valueText();
        assertTrue(slot7.contains("live7"), slot7);
        observer.revoke(lease.id());
    }

    @Test
    void sixGroupsSpreadTwoOverEachOfThreeMembers() throws Exception {
        Node a = node("a", etcd.uri(), SIX);
        Node b = node("b", etcd.uri(), SIX);
        Node c = node("c", etcd.uri(), SIX);
        Await.until(Duration.ofSeconds(20), () -> spread(SIX, 2, a, b, c), () -> "not 2 each: " + optimized(a, b, c));
        Thread.sleep(5 * INTERVAL_MS);                               // and it stays so
        assertTrue(spread(SIX, 2, a, b, c), optimized(a, b, c).toString());
        GatewayGroup.View v = c.group.view();
        for (String n : List.of("a", "b", "c")) assertEquals(2, v.members().get(n).owns().size(), v.toString());
    }

    @Test
    void aCutOffMembersGroupsMoveOnlyAfterItsLeaseIsGoneAndComeBackOneAtATimeWhenItRejoins() throws Exception {
        try (TcpRelay relay = TcpRelay.start("127.0.0.1", etcd.clientPort(0))) {
            Node a = node("a", etcd.uri(), SIX);
            Node b = node("b", etcd.uri(), SIX);
            Node cut = node("z", "etcd://" + relay.hostPort(), SIX);     // sorts last: never the leader
            Await.until(Duration.ofSeconds(20), () -> spread(SIX, 2, a, b, cut), () -> "not 2 each: " + optimized(a, b, cut));
            Set<Integer> itsGroups = Set.copyOf(cut.optimized);
            // Every group the survivors gain from now on must find the cut node fenced and its key gone.
            List<String> violations = new CopyOnWriteArrayList<>();
            Runnable check = () -> {
                if (cut.membership.fence().holds()) violations.add("gained while the cut node's fence held");
                if (memberKeyPresent("z")) violations.add("gained while the cut node's member key was in etcd");
            };
            a.onGain = check;
            b.onGain = check;
            long cutNs = System.nanoTime();
            relay.cut();
            Await.until(Duration.ofSeconds(20), () -> spread(SIX, 3, a, b), () -> "its groups did not move: " + optimized(a, b, cut));
            long movedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - cutNs);
            assertTrue(violations.isEmpty(), violations.toString());
            assertTrue(cut.optimized.isEmpty(), "the cut node still presents " + cut.optimized);
            assertFalse(memberKeyPresent("z"));
            Set<Integer> survivorsNow = new TreeSet<>(a.optimized);
            survivorsNow.addAll(b.optimized);
            assertTrue(survivorsNow.containsAll(itsGroups));
            System.out.printf("cut-off member: its %s moved %d ms after the cut%n", itsGroups, movedMs);
            a.onGain = () -> { };
            b.onGain = () -> { };

            int gainsBefore = cut.gainTimesNs().size();
            relay.restore();
            Await.until(Duration.ofSeconds(30), () -> spread(SIX, 2, a, b, cut), () -> "not rebalanced: " + optimized(a, b, cut));
            List<Long> gains = cut.gainTimesNs().subList(gainsBefore, cut.gainTimesNs().size());
            assertEquals(2, gains.size(), "the re-joined node gained " + cut.history);
            long apartMs = TimeUnit.NANOSECONDS.toMillis(gains.get(1) - gains.get(0));
            System.out.printf("re-joined member: gained its 2 groups %d ms apart (interval %d ms)%n", apartMs, INTERVAL_MS);
            assertTrue(apartMs >= INTERVAL_MS / 2, "two groups moved within one interval: " + apartMs + " ms apart");
            // A move is handed over: the old owner stopped presenting a group before the new one started.
            for (Node n : List.of(a, b, cut)) assertFalse(n.fenceHeldWhenOptimized.contains(false), n.name + " presented a group optimized while fenced");
            assertHandedOver(a, b, cut);
        }
    }

    @Test
    void aDeadMembersGroupsGetNewOwnersOnlyOnceItsClientsAreFencedAtTheStorage() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean storageAnswers = new java.util.concurrent.atomic.AtomicBoolean();
        java.util.concurrent.atomic.AtomicInteger refusedAttempts = new java.util.concurrent.atomic.AtomicInteger();
        List<String> fenced = new CopyOnWriteArrayList<>();
        StorageFence storage = dead -> {
            if (!storageAnswers.get()) {
                refusedAttempts.incrementAndGet();
                throw new java.io.IOException("the monitors do not answer");
            }
            fenced.add(dead);
        };
        try (TcpRelay relay = TcpRelay.start("127.0.0.1", etcd.clientPort(0))) {
            Node a = node("a", etcd.uri(), SIX, storage);
            Node b = node("b", etcd.uri(), SIX, storage);
            Node cut = node("z", "etcd://" + relay.hostPort(), SIX, storage);
            Await.until(Duration.ofSeconds(20), () -> spread(SIX, 2, a, b, cut), () -> "not 2 each: " + optimized(a, b, cut));
            Set<Integer> itsGroups = Set.copyOf(cut.optimized);
            List<String> violations = new CopyOnWriteArrayList<>();
            Runnable check = () -> {
                if (!fenced.contains("z")) violations.add("a group was gained before z's clients were fenced at the storage");
            };
            a.onGain = check;
            b.onGain = check;
            relay.cut();
            // The leader tries to fence z once its key is gone, and while the storage does not answer, nothing moves.
            Await.until(Duration.ofSeconds(20), () -> refusedAttempts.get() >= 3, () -> "the leader never tried to fence z: " + optimized(a, b, cut));
            Set<Integer> survivors = new TreeSet<>(a.optimized);
            survivors.addAll(b.optimized);
            for (int g : itsGroups) assertFalse(survivors.contains(g), "group " + g + " moved while z could not be fenced: " + optimized(a, b, cut));
            storageAnswers.set(true);
            Await.until(Duration.ofSeconds(20), () -> spread(SIX, 3, a, b), () -> "its groups did not move once z was fenced: " + optimized(a, b, cut));
            assertTrue(violations.isEmpty(), violations.toString());
            assertTrue(fenced.contains("z"), fenced.toString());
            assertFalse(fenced.contains("a") || fenced.contains("b"), "only the dead member is fenced: " + fenced);
        }
    }

    @Test
    void aMemberThatOwnedNoGroupIsFencedAtTheStorageOnceEachTimeItsLeaseEnds() throws Exception {
        List<String> fenced = new CopyOnWriteArrayList<>();
        StorageFence storage = fenced::add;
        try (TcpRelay relay = TcpRelay.start("127.0.0.1", etcd.clientPort(0))) {
            Node a = node("a", etcd.uri(), SIX, storage);
            Node b = node("b", etcd.uri(), SIX, storage);
            // z serves no shared namespace: it never owns an ANA group, but a host may still write through it
            Node z = node("z", "etcd://" + relay.hostPort(), Set.of(), storage);
            Await.until(Duration.ofSeconds(20), () -> spread(SIX, 3, a, b) && memberKeyPresent("z"), () -> "not 3 each: " + optimized(a, b, z));
            assertEquals(List.of(), fenced, "no member's lease ended yet");

            relay.cut();
            Await.until(Duration.ofSeconds(20), () -> fenced.contains("z"), () -> "z's lease ended but it was never fenced: " + fenced);
            Thread.sleep(10 * INTERVAL_MS);                          // ten more intervals of the leader: z stays dead, and is not fenced again
            assertEquals(List.of("z"), fenced, "z fenced once while it stays dead");
            assertTrue(z.optimized.isEmpty() && spread(SIX, 3, a, b), "nothing moved: " + optimized(a, b, z));

            relay.restore();
            Await.until(Duration.ofSeconds(20), () -> memberKeyPresent("z") && a.group.view().members().containsKey("z"),
                        () -> "z did not re-join");
            relay.cut();
            Await.until(Duration.ofSeconds(20), () -> fenced.size() == 2, () -> "z's second lease ended but it was not fenced again: " + fenced);
            assertEquals(List.of("z", "z"), fenced, "only z, once per end of its lease");
        }
    }

    /** For every group, each "+G" of one node comes after the "-G" of the node that presented it before. */
    private static void assertHandedOver(Node... nodes) {
        List<long[]> events = new ArrayList<>();                     // {time, node index, group, +1/-1}
        for (int i = 0; i < nodes.length; i++) {
            for (String h : nodes[i].history) {
                int sp = h.indexOf(' ');
                events.add(new long[] {Long.parseLong(h.substring(0, sp)), i, Integer.parseInt(h.substring(sp + 2)), h.charAt(sp + 1) == '+' ? 1 : -1});
            }
        }
        events.sort((x, y) -> Long.compare(x[0], y[0]));
        Map<Long, Integer> holders = new TreeMap<>();
        for (long[] e : events) {
            int now = holders.merge(e[2], (int) e[3], Integer::sum);
            assertTrue(now <= 1, "group " + e[2] + " optimized on two nodes at once (at " + e[0] + ")");
        }
    }

    @Test
    void aPinnedGroupMovesToItsNode() throws Exception {
        Node a = node("a", etcd.uri(), SIX);
        Node b = node("b", etcd.uri(), SIX);
        Await.until(Duration.ofSeconds(20), () -> spread(SIX, 3, a, b), () -> "not 3 each: " + optimized(a, b));
        int group = a.optimized.iterator().next();
        a.group.pin(group, "b");
        Await.until(Duration.ofSeconds(20), () -> b.optimized.contains(group) && !a.optimized.contains(group), () -> "pin not followed: " + optimized(a, b));
        assertEquals("b", a.group.view().owners().get(group).pin());
        Thread.sleep(5 * INTERVAL_MS);                               // the rebalance leaves the pinned group where it is
        assertTrue(b.optimized.contains(group), optimized(a, b).toString());
        assertNotEquals(0, a.group.moves() + b.group.moves());
    }
}
