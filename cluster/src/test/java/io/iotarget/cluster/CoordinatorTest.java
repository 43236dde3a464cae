package io.iotarget.cluster;

import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.policy.cost.CostPolicy;
import io.iotarget.iocontrol.policy.latency.LatencyPolicy;
import io.iotarget.iocontrol.policy.throttle.ThrottlePolicy;
import io.iotarget.model.Clock;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The loop on its own time against a scripted store: lease, fallback, the cap after a store that forgot the node. */
class CoordinatorTest {
    private static final long MS = 1_000_000L;
    private static final ClusterSettings SETTINGS = new ClusterSettings("n1", "etcd://unused:1", 3, 200, 1000);

    /** Answers what the test says, or fails while {@link #down}; {@link #answerLost}: takes the report, then fails (a timeout after the store applied it). */
    private static final class ScriptedStore implements ShareStore {
        boolean down;
        boolean answerLost;
        ShareStore.Share answer = new Share(3000, true);
        final List<List<Report>> reports = new ArrayList<>();

        @Override
        public List<Share> exchange(String node, int nodes, long leaseMs, List<Report> r) throws StoreException {
            if (down) throw new StoreException("down", null);
            reports.add(r);
            if (answerLost) throw new StoreException("timed out", null);
            return r.stream().map(x -> answer).toList();
        }

        @Override
        public void close() {
        }
    }

    private final ScriptedStore store = new ScriptedStore();
    private IoController controller;
    private Coordinator coordinator;
    private long nowNs = 1_000 * MS;

    @BeforeEach
    void setUp() throws Exception {
        controller = new IoController(Clock.SYSTEM, List.of(ThrottlePolicy::new, LatencyPolicy::new, CostPolicy::new));
        controller.registerDevice(new Device(0, new DeviceNumber(259, 0), "disk", 1L << 30, 512, false, 1));
        coordinator = new Coordinator(controller, SETTINGS, store, () -> nowNs);
        controller.write("cgroup.subtree_control", "+io");
        controller.mkdir("a");
        controller.write("a/io.max.global", "disk riops=9000");
    }

    private long share() {
        coordinator.tick(nowNs);
        return coordinator.view().getFirst().share();
    }

    @Test
    void shouldReportTheKeyAndApplyTheStoresAnswer() {
        store.answer = new ShareStore.Share(8700, true);
        assertEquals(8700, share());
        ShareStore.Report r = store.reports.getFirst().getFirst();
        assertEquals("iotarget:/a:disk:riops", r.key());
        assertEquals(9000, r.limit());
        assertEquals(150, r.floor(), "limit / nodes / 20");
        assertEquals(150, r.held(), "io.max.global starts at the floor: all the store keeps for a node it has not heard from");
        assertEquals(150, r.demand(), "no rate yet: the share it starts at");
        nowNs += 200 * MS;
        share();
        assertEquals(0, store.reports.getLast().getFirst().demand(), "no IO: no demand");
        assertEquals(8700, store.reports.getLast().getFirst().held());
        assertEquals(new Coordinator.TenantView("/a", "disk", "riops", 9000, 8700, 0), coordinator.view().getFirst());
    }

    @Test
    void shouldSayItStillHoldsTheOldShareWhenAnAnswerWasLost() {
        store.answer = new ShareStore.Share(8700, true);
        assertEquals(8700, share());
        store.answerLost = true;
        store.answer = new ShareStore.Share(150, true);
        nowNs += 200 * MS;
        assertEquals(8700, share(), "no answer: the share stays");
        store.answerLost = false;
        nowNs += 200 * MS;
        assertEquals(150, share());
        assertEquals(8700, store.reports.get(2).getFirst().held(), "the store hears that the node still held 8700: it may not have counted 150 for it");
        nowNs += 200 * MS;
        share();
        assertEquals(150, store.reports.get(3).getFirst().held());
    }

    @Test
    void shouldLetAStartedNodeGrowToLimitOverNodesAtOnce() {
        store.answer = new ShareStore.Share(8700, false);           // the store has not heard of it
        assertEquals(3000, share(), "capped for a lease, but at limit / nodes, not at the floor it started at");
        store.answer = new ShareStore.Share(8700, true);
        nowNs += 1000 * MS;
        assertEquals(8700, share(), "a lease later");
    }

    @Test
    void shouldKeepTheShareForALeaseThenFallBackToLimitOverNodes() {
        store.answer = new ShareStore.Share(8700, true);
        assertEquals(8700, share());
        store.down = true;
        nowNs += 700 * MS;
        assertEquals(8700, share(), "the lease holds past the next interval");
        assertFalse(coordinator.inFallback());
        nowNs += 100 * MS;
        assertEquals(3000, share(), "the lease would run out before the next interval");
        assertTrue(coordinator.inFallback());
        nowNs += 200 * MS;
        assertEquals(3000, share());
        assertEquals(1, coordinator.fallbacks());
        assertEquals(3, coordinator.failures());
    }

    @Test
    void shouldNotGrowForALeaseWhenTheStoreNoLongerKnewTheNode() {
        store.down = true;
        nowNs += 1100 * MS;
        assertEquals(3000, share());
        store.down = false;
        store.answer = new ShareStore.Share(8700, false);           // e.g. a store restarted empty
        nowNs += 200 * MS;
        assertEquals(3000, share(), "capped at what it held when it came back");
        assertFalse(coordinator.inFallback());
        store.answer = new ShareStore.Share(8700, true);
        nowNs += 800 * MS;
        assertEquals(3000, share());
        nowNs += 200 * MS;
        assertEquals(8700, share(), "a lease later");
        store.answer = new ShareStore.Share(150, true);
        nowNs += 200 * MS;
        assertEquals(150, share(), "shrinking is never held back");
    }

    @Test
    void shouldForgetALimitThatWentAway() throws Exception {
        share();
        controller.write("a/io.max.global", "disk riops=max");
        coordinator.tick(nowNs);
        assertEquals(List.of(), coordinator.view());
    }
}
