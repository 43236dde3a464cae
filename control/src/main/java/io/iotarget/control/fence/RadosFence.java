package io.iotarget.control.fence;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.backend.rbd.RbdBackend;
import io.iotarget.cluster.ClusterSettings;
import io.iotarget.cluster.EtcdClient;
import io.iotarget.cluster.StorageFence;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * Fencing on Ceph: every RADOS client this node opens is published in the cluster's store
 * before it serves, and a node that takes over from this one blocklists them all.
 *
 * <pre>
 *   /iotarget/storage-clients/&lt;node&gt;   {"rados": [{"fsid": "&lt;cluster id&gt;", "addr": "v2:10.0.0.5:0/3141592", "lease": 7587...}, ...]}
 * </pre>
 * The key is on no lease: it must outlive the node, since it is read when the node is dead.
 * The node is its only writer; it keeps the last {@link #KEPT} clients it published, across its
 * restarts too, so that a process paused while its successor started is still named. Each
 * client carries the membership lease its process held when it opened it (0: none yet), and
 * keeps it if it is published again.
 *
 * <p>{@link #fence} blocklists each named client through one of this node's own clients of the
 * same Ceph cluster ({@link RbdBackend#blocklist}), then brings every client of this node on
 * that cluster to the latest OSD map: from then on an OSD runs none of the fenced client's IO
 * after any this node sends. A client named on a cluster this node has no client of cannot be
 * fenced from here: {@link #fence} fails, and the caller must not act as if it were. A client
 * whose lease the store still has is left alone: it was opened by a process that holds that
 * lease now, after every lease that ended — the node's next process, which started and
 * published before the fence ran; blocklisting it would only make that process exit 75 at its
 * first IO and start once more. Every client opened before a lease ended carries that lease or
 * an older one (or none), so it is blocklisted.
 *
 * <p>Any thread; {@link #published} and {@link #fence} may run at once.
 */
public final class RadosFence implements StorageFence, AutoCloseable {
    /** Where each node's clients are published: PREFIX + node. */
    public static final String PREFIX = "/iotarget/storage-clients/";
    /** Clients kept per node: far more than a node opens between two restarts of its peers. */
    static final int KEPT = 64;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final EtcdClient store;
    private final String node;
    /** This node's open RBD backends: their clients reach the monitors. */
    private final Supplier<List<RbdBackend>> backends;
    /** The membership lease this node's process holds now, 0 while it has none. */
    private final LongSupplier lease;
    private final boolean ownsStore;

    /** Owns nothing: {@code store} is the caller's. */
    public RadosFence(EtcdClient store, String node, Supplier<List<RbdBackend>> backends, LongSupplier lease) {
        this(store, node, backends, lease, false);
    }

    private RadosFence(EtcdClient store, String node, Supplier<List<RbdBackend>> backends, LongSupplier lease, boolean ownsStore) {
        this.store = store;
        this.node = node;
        this.backends = backends;
        this.lease = lease;
        this.ownsStore = ownsStore;
    }

    /** serve's fence: a client of the cluster's store of its own, closed with the fence. */
    public static RadosFence open(ClusterSettings cluster, Supplier<List<RbdBackend>> backends, LongSupplier lease) throws IOException {
        EtcdClient client = EtcdClient.create(cluster.store(), cluster.access(), Duration.ofMillis(Math.max(1000, cluster.leaseMs())));
        return new RadosFence(client, cluster.node(), backends, lease, true);
    }

    @Override
    public void close() {
        if (ownsStore) store.close();
    }

    /**
     * Adds {@code backend}'s client to this node's entry; returns once the store has it. Called
     * after the backend opened and before any IO reaches it: a client that is not published
     * cannot be fenced, so a failure here must keep the backend from serving.
     */
    public synchronized void published(RbdBackend backend) throws IOException {
        Map<String, JsonNode> clients = new LinkedHashMap<>();         // addr -> entry, oldest first
        for (JsonNode c : read(node)) clients.put(c.path("addr").asText(), c);
        String address = backend.clientAddress();
        JsonNode before = clients.remove(address);
        long openedUnder = before != null ? before.path("lease").asLong(0) : lease.getAsLong();
        clients.put(address, JSON.createObjectNode().put("fsid", backend.clusterFsid()).put("addr", address).put("lease", openedUnder));
        ObjectNode value = JSON.createObjectNode();
        ArrayNode list = value.putArray("rados");
        int skip = Math.max(0, clients.size() - KEPT);
        for (JsonNode c : clients.values()) {
            if (skip-- > 0) continue;
            list.add(c);
        }
        store.put(PREFIX + node, JSON.writeValueAsBytes(value), 0);
    }

    @Override
    public void fence(String other) throws IOException {
        List<RbdBackend> mine = backends.get();
        Map<String, List<RbdBackend>> byCluster = new LinkedHashMap<>();
        for (RbdBackend b : mine) byCluster.computeIfAbsent(b.clusterFsid(), k -> new ArrayList<>()).add(b);
        List<String> fencedOn = new ArrayList<>();
        for (JsonNode c : read(other)) {
            String fsid = c.path("fsid").asText();
            String address = c.path("addr").asText();
            long openedUnder = c.path("lease").asLong(0);
            if (openedUnder != 0 && store.leaseAlive(openedUnder)) continue;      // the node's next process: see the class comment
            List<RbdBackend> via = byCluster.get(fsid);
            if (via == null) {
                throw new IOException("cannot fence node " + other + ": its RADOS client " + address + " is on Ceph cluster " + fsid
                                      + ", which this node has no rbd backend on");
            }
            via.getFirst().blocklist(address);
            if (!fencedOn.contains(fsid)) fencedOn.add(fsid);
        }
        for (String fsid : fencedOn) {
            for (RbdBackend b : byCluster.get(fsid)) b.awaitLatestOsdMap();
        }
    }

    /** The clients {@code someone} published, oldest first; none when it published none. */
    private List<JsonNode> read(String someone) throws IOException {
        String key = PREFIX + someone;
        List<JsonNode> clients = new ArrayList<>();
        for (EtcdClient.KeyValue kv : store.range(key).kvs()) {
            if (!kv.key().equals(key)) continue;                  // a range by prefix: "n1" also finds "n10"
            JsonNode value = JSON.readTree(new String(kv.value(), StandardCharsets.UTF_8));
            for (JsonNode c : value.path("rados")) clients.add(c);
        }
        return clients;
    }
}
