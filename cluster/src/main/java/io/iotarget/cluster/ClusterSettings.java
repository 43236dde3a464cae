package io.iotarget.cluster;

/**
 * The config's {@code cluster} section (docs/cluster.md).
 *
 * @param node       this node's id, the same on every restart and different on every node
 * @param store      where the nodes meet: {@code etcd://HOST:PORT[,HOST:PORT...]}
 * @param nodes      how many nodes share every io.max.global; limit / nodes is what each holds without the store;
 *                   0 with a {@code group} that does not say: the group's live members are the count
 * @param intervalMs how often a node reports its demand and takes its shares, in ms
 * @param leaseMs    how long a share holds without the store, in ms; then limit / nodes
 * @param access     etcd's TLS files and user ({@link EtcdClient.Access#NONE}: plain, no authentication)
 * @param group      the gateway group this node serves shared subsystems with (docs/ha.md), or null for none
 */
public record ClusterSettings(String node, String store, int nodes, long intervalMs, long leaseMs, EtcdClient.Access access, String group) {
    public static final long DEFAULT_INTERVAL_MS = 200;
    public static final long DEFAULT_LEASE_MS = 1000;

    /** Settings without TLS, authentication or a gateway group. */
    public ClusterSettings(String node, String store, int nodes, long intervalMs, long leaseMs) {
        this(node, store, nodes, intervalMs, leaseMs, EtcdClient.Access.NONE, null);
    }
}
