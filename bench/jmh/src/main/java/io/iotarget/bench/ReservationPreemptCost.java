package io.iotarget.bench;

import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.Membership;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.frontend.nvmetcp.reservation.NamespaceReservation;
import io.iotarget.frontend.nvmetcp.reservation.ReservationState;
import io.iotarget.frontend.nvmetcp.reservation.Reservations;
import io.iotarget.model.Clock;
import io.iotarget.testkit.EtcdCluster;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Stream;

/**
 * What a reservation preempt costs with the state in etcd (issue 31; bench/results/reservations-preempt.md):
 * a three-member etcd on loopback (testkit's {@link EtcdCluster}), 2 or 3 nodes' reservations in
 * this JVM, each with its membership lease (2 s) and an {@link EtcdReservationStore} following
 * it; host A (through node 1) and host B (through node 2) take Write Exclusive from each other in
 * turn with Acquire/preempt, the preempted host registering again between them (not timed). The
 * third node only has the namespace open (it must acknowledge). "off" is the same store without
 * acknowledgements (compare-and-swap and the node's own install and drain only).
 *
 * <p>Timed: from handing the Acquire to the namespace's reservations (what a queue's loop does
 * with a host's command) to its answer: every store round trip, the drain and the wait for the
 * other nodes; not the NVMe/TCP exchange around it (tens of microseconds on loopback).
 *
 * <pre>
 *   java -cp iotarget-benchmarks.jar io.iotarget.bench.ReservationPreemptCost [--preempts=200] [--nodes=2,3] [--acks=off,on]
 * </pre>
 * Needs /usr/bin/etcd. One line per run: p50, p99 and max in ms.
 */
public final class ReservationPreemptCost {
    private static final String NQN = "nqn.2026-11.io.iotarget:default";
    private static final long LEASE_MS = 2000, INTERVAL_MS = 100;
    private static final long A = 0xA1, B = 0xB2, KEY_A = 0xAAAA, KEY_B = 0xBBBB;

    private ReservationPreemptCost() {
    }

    public static void main(String[] args) throws Exception {
        int preempts = 200;
        List<Integer> nodeCounts = List.of(2, 3);
        List<Boolean> ackModes = List.of(false, true);
        for (String a : args) {
            if (a.startsWith("--preempts=")) preempts = Integer.parseInt(a.substring("--preempts=".length()));
            else if (a.startsWith("--nodes=")) nodeCounts = Arrays.stream(a.substring("--nodes=".length()).split(",")).map(Integer::parseInt).toList();
            else if (a.startsWith("--acks=")) ackModes = Arrays.stream(a.substring("--acks=".length()).split(",")).map(m -> m.equals("on")).toList();
            else throw new IllegalArgumentException("unknown argument " + a + " (--preempts=N --nodes=2,3 --acks=off,on)");
        }
        Path dir = Files.createTempDirectory("iotarget-preempt-cost");
        try (EtcdCluster etcd = EtcdCluster.start(dir)) {
            for (int nodes : nodeCounts) {
                for (boolean acks : ackModes) run(etcd, nodes, acks, preempts);
            }
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
        System.exit(0);                                       // the membership and etcd clients' daemon threads are done with
    }

    /** One node's reservations with namespace 1 open. */
    private record Node(Reservations reservations, NamespaceReservation ns) {
        int run(Function<ReservationState, ReservationState.Outcome> command) throws Exception {
            CompletableFuture<Integer> status = new CompletableFuture<>();
            reservations.change(status::complete, ns, command);
            return status.get(60, TimeUnit.SECONDS);
        }
    }

    private static void run(EtcdCluster etcd, int count, boolean acks, int preempts) throws Exception {
        List<AutoCloseable> closing = new ArrayList<>();
        try {
            List<Node> nodes = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String name = "n" + i;
                EtcdClient client = EtcdClient.create(etcd.uri(), EtcdClient.Access.NONE, Duration.ofMillis(1000));
                closing.add(client);
                Membership m = new Membership(client, name, LEASE_MS, Clock.SYSTEM);
                closing.add(m);
                m.start();
                await(() -> m.fence().holds(), name + " holds its lease");
                Reservations res = new Reservations((nqn, nsid, notices, abort) -> CompletableFuture.completedFuture(null));
                closing.add(res);
                res.use(acks ? EtcdReservationStore.following(client, name, m) : new EtcdReservationStore(client, name, null), INTERVAL_MS, LEASE_MS);
                NamespaceReservation ns = res.open(NQN, 1);
                await(() -> ns.state() != null, name + " read namespace 1");
                nodes.add(new Node(res, ns));
            }
            Node a = nodes.get(0), b = nodes.get(1);
            check(a.run(s -> s.register(A, A, ReservationState.REGISTER, false, 0, 0, KEY_A, false)), "register A");
            check(a.run(s -> s.acquire(A, A, ReservationState.ACQUIRE, false, ReservationState.WRITE_EXCLUSIVE, KEY_A, 0)), "acquire A");
            long[] ns = new long[preempts];
            for (int i = 0; i < preempts; i++) {
                boolean bTakes = i % 2 == 0;
                Node through = bTakes ? b : a;
                long taker = bTakes ? B : A, takerKey = bTakes ? KEY_B : KEY_A, victimKey = bTakes ? KEY_A : KEY_B;
                check(through.run(s -> s.register(taker, taker, ReservationState.REGISTER, false, 0, 0, takerKey, false)), "register " + i);
                long startNs = System.nanoTime();
                check(through.run(s -> s.acquire(taker, taker, ReservationState.PREEMPT, false, ReservationState.WRITE_EXCLUSIVE, takerKey, victimKey)),
                      "preempt " + i);
                ns[i] = System.nanoTime() - startNs;
            }
            Arrays.sort(ns);
            System.out.printf(Locale.ROOT, "preempt cost: %d nodes, acknowledgements %s: p50 %.2f ms, p99 %.2f ms, max %.2f ms (%d preempts)%n",
                              count, acks ? "on " : "off", ns[preempts / 2] / 1e6, ns[preempts * 99 / 100] / 1e6, ns[preempts - 1] / 1e6, preempts);
        } finally {
            for (int i = closing.size() - 1; i >= 0; i--) closing.get(i).close();
        }
    }

    private static void check(int status, String what) {
        if (status != 0) throw new IllegalStateException(what + ": status 0x" + Integer.toHexString(status));
    }

    private static void await(java.util.function.BooleanSupplier condition, String what) throws InterruptedException {
        long deadlineNs = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadlineNs > 0) throw new IllegalStateException("not within 20 s: " + what);
            Thread.sleep(5);
        }
    }
}
