package io.iotarget.frontend.nvmetcp;

import io.iotarget.backend.file.FileBackend;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.Membership;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.reservation.EtcdReservationStore;
import io.iotarget.model.Clock;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.EtcdCluster;
import io.iotarget.testkit.TcpRelay;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The failure tests' cluster: a three-member etcd on loopback and target nodes in this JVM over
 * one file, each configured as {@code serve} configures a cluster node (its membership lease,
 * the reservation store's contact lease equal to it, an interval), each reaching etcd through
 * a {@link TcpRelay} of its own per member so that a test can cut one node off. Namespace 1 of
 * {@link TargetFixture#NQN} has resv_enable. The test's thread drives it; not thread-safe.
 */
final class EtcdNodes implements AutoCloseable {
    static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    static final int WE = 1;

    final EtcdCluster etcd;
    final Path file;
    final long leaseMs;
    final long intervalMs;
    /** The reservation store's own contact lease (Reservations.use); serve gives it leaseMs. */
    final long contactLeaseMs;
    private final List<AutoCloseable> closing = new ArrayList<>();

    /** A node: its target, membership, and the relays between it and each etcd member. */
    record Node(String name, TargetFixture fixture, Membership membership, List<TcpRelay> relays, List<TcpRelay> storeRelays) {
        /** Black-holes this node's every connection to etcd. */
        void cut() {
            for (TcpRelay r : relays) r.cut();
            for (TcpRelay r : storeRelays) r.cut();
        }

        void restore() {
            restoreMembership();
            for (TcpRelay r : storeRelays) r.restore();
        }

        /**
         * Freezes the node as far as a test in its process can, as a GC pause or SIGSTOP would:
         * no keep-alive or read leaves for etcd ({@link #cut}), and its one event loop runs
         * nothing, so its hosts' commands wait in their sockets, until {@link #thaw}. (Its
         * membership and reservation threads still run: they notice the cut by themselves.)
         */
        java.util.concurrent.CountDownLatch freeze() {
            java.util.concurrent.CountDownLatch resume = new java.util.concurrent.CountDownLatch(1);
            cut();
            fixture.stallLoop(resume);
            return resume;
        }

        /** Ends {@link #freeze}: the store reachable again, then the queued commands run. */
        void thaw(java.util.concurrent.CountDownLatch resume) {
            restore();
            resume.countDown();
        }

        /** Heals the membership's connections only (a node whose reservation store has a client of its own). */
        void restoreMembership() {
            for (TcpRelay r : relays) r.restore();
        }

        int port() {
            return fixture.port;
        }
    }

    EtcdNodes(Path dir, long leaseMs, long intervalMs) throws Exception {
        this(dir, leaseMs, intervalMs, leaseMs);
    }

    /** With the store's contact lease {@code contactLeaseMs} instead of serve's (the membership lease). */
    EtcdNodes(Path dir, long leaseMs, long intervalMs, long contactLeaseMs) throws Exception {
        this.leaseMs = leaseMs;
        this.intervalMs = intervalMs;
        this.contactLeaseMs = contactLeaseMs;
        this.etcd = EtcdCluster.start(dir.resolve("etcd"));
        this.file = dir.resolve("disk");
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.allocate(1), TargetFixture.DEVICE_BYTES - 1);
        }
    }

    /** Starts node {@code name}, waits until it holds its lease and has read namespace 1's state. */
    Node node(String name) throws Exception {
        return node(name, false);
    }

    /**
     * {@link #node(String)}; with {@code ownStoreClient} the reservation store has an etcd client
     * (and relays) of its own instead of sharing the membership's, so that a test can heal one
     * before the other.
     */
    Node node(String name, boolean ownStoreClient) throws Exception {
        List<TcpRelay> relays = new ArrayList<>();
        EtcdClient client = client(relays);
        List<TcpRelay> storeRelays = new ArrayList<>();
        EtcdClient storeClient = ownStoreClient ? client(storeRelays) : client;
        Membership membership = new Membership(client, name, leaseMs, Clock.SYSTEM);
        closing.add(membership);
        membership.start();
        Await.until(Duration.ofSeconds(20), () -> membership.fence().holds(), () -> name + " holds its lease");
        TargetFixture f = TargetFixture.oneLoop();
        closing.add(f);
        f.engine.addDevice("file", FileBackend.open(file, 512, false, false), null, Engine.DEFAULT_QUEUE_DEPTH);
        f.target.reservations().use(EtcdReservationStore.following(storeClient, name, membership), intervalMs, contactLeaseMs);
        f.tree.write(NS + "/enable", "0");
        f.tree.write(NS + "/device_path", "file");
        f.tree.write(NS + "/resv_enable", "1");
        f.tree.write(NS + "/enable", "1");
        f.awaitReservationRead();
        return new Node(name, f, membership, relays, storeRelays);
    }

    /** A client reaching every member through a relay of its own, added to {@code relays}. */
    private EtcdClient client(List<TcpRelay> relays) throws Exception {
        List<String> hostPorts = new ArrayList<>();
        for (int i = 0; i < etcd.size(); i++) {
            TcpRelay r = TcpRelay.start("127.0.0.1", etcd.clientPort(i));
            closing.add(r);
            relays.add(r);
            hostPorts.add(r.hostPort());
        }
        // As EtcdReservationStore.join: each call bounded by a third of the lease.
        EtcdClient client = EtcdClient.create("etcd://" + String.join(",", hostPorts), EtcdClient.Access.NONE,
                                              Duration.ofMillis(Math.max(100, leaseMs / 3)));
        closing.add(client);
        return client;
    }

    /** A host connected to {@code node}; closed with the cluster. */
    ReservationHost host(Node node, int id) throws Exception {
        ReservationHost h = new ReservationHost(node.port(), TargetFixture.NQN, id);
        closing.add(h);
        return h;
    }

    /** Block {@code lba} as it is on the file now. */
    byte[] onDisk(long lba) throws Exception {
        return DiskBlocks.onDisk(file, lba);
    }

    /** Writes {@code block} at {@code lba} through {@code host}'s IO queue; the status. */
    static int write(ReservationHost host, long lba, byte[] block) throws Exception {
        return host.io.execute(host.io.lbaCommand(0x01, 1, lba, 1, 0), block, 0, true).status();
    }

    /** Whether {@code status} is a path error (SCT 3): the host retries it on another path. */
    static boolean pathError(int status) {
        return (status >> 8 & 0x7) == 3;
    }

    @Override
    public void close() {
        for (int i = closing.size() - 1; i >= 0; i--) {
            try {
                closing.get(i).close();
            } catch (Exception e) {
                // closing anyway
            }
        }
        etcd.close();
    }
}
