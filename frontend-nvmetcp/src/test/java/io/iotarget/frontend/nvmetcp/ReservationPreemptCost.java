package io.iotarget.frontend.nvmetcp;

import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.Membership;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.model.Clock;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * What a preempt costs with reservations in etcd (bench/results/reservations.md): 200 preempts,
 * hosts A (node 1) and B (node 2) taking the reservation from each other in turn, the preempted
 * host registering again between them (not timed); with 2 and 3 nodes (the third only follows the
 * namespace), with and without the acknowledgements. A benchmark, not a test: it runs only with
 * {@code -Diotarget.bench.preempt=true}.
 */
class ReservationPreemptCost {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private static final int PREEMPTS = 200;

    @TempDir
    Path dir;

    @Test
    void measure() throws Exception {
        assumeTrue(Boolean.getBoolean("iotarget.bench.preempt"), "-Diotarget.bench.preempt=true runs it");
        try (EtcdCluster etcd = EtcdCluster.start(dir)) {
            for (int nodes : new int[] {2, 3}) {
                for (boolean acks : new boolean[] {false, true}) run(etcd, nodes, acks);
            }
        }
    }

    private void run(EtcdCluster etcd, int count, boolean acks) throws Exception {
        List<AutoCloseable> closing = new ArrayList<>();
        try {
            List<TargetFixture> nodes = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                EtcdClient client = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofMillis(1000));
                closing.add(client);
                Membership m = new Membership(client, "n" + i, 2000, Clock.SYSTEM);
                closing.add(m);
                m.start();
                Await.until(Duration.ofSeconds(10), () -> m.fence().holds(), () -> "lease");
                TargetFixture f = new TargetFixture();
                closing.add(f);
                f.target.reservations().use(new EtcdReservationStore(client, "n" + i, acks ? m.fence() : null), 100, 60_000);
                f.tree.write(NS + "/enable", "0");
                f.tree.write(NS + "/resv_enable", "1");
                f.tree.write(NS + "/enable", "1");
                f.awaitReservationRead();
                nodes.add(f);
            }
            ReservationHost a = new ReservationHost(nodes.get(0).port, TargetFixture.NQN, 0xA1);
            closing.add(a);
            ReservationHost b = new ReservationHost(nodes.get(1).port, TargetFixture.NQN, 0xB2);
            closing.add(b);
            long keyA = 0xAAAA, keyB = 0xBBBB;
            assertEquals(0, a.register(keyA));
            assertEquals(0, a.acquire(0, 1, keyA, 0));
            long[] ns = new long[PREEMPTS];
            for (int i = 0; i < PREEMPTS; i++) {
                boolean bTakes = i % 2 == 0;
                ReservationHost taker = bTakes ? b : a;
                long takerKey = bTakes ? keyB : keyA, victimKey = bTakes ? keyA : keyB;
                assertEquals(0, taker.register(takerKey), "register " + i);
                long start = System.nanoTime();
                assertEquals(0, taker.acquire(1, 1, takerKey, victimKey), "preempt " + i);
                ns[i] = System.nanoTime() - start;
            }
            Arrays.sort(ns);
            System.out.printf("preempt cost: %d nodes, acknowledgements %s: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d preempts)%n",
                              count, acks ? "on " : "off", ns[PREEMPTS / 2] / 1e6, ns[PREEMPTS * 99 / 100] / 1e6, ns[PREEMPTS - 1] / 1e6, PREEMPTS);
        } finally {
            for (int i = closing.size() - 1; i >= 0; i--) closing.get(i).close();
        }
    }
}
