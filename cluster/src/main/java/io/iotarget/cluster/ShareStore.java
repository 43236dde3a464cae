package io.iotarget.cluster;

import java.io.IOException;
import java.time.Duration;
import java.util.List;

/**
 * Where the nodes of a cluster meet: each reports its demand per tenant limit and receives its
 * share, the store rebalancing atomically (package documentation, section 2): etcd
 * ({@link EtcdShareStore}). Called by the coordinator's one thread.
 */
public interface ShareStore extends AutoCloseable {
    /** The store {@code settings} name, every call at most {@code timeout}. */
    static ShareStore open(ClusterSettings settings, Duration timeout) throws IOException {
        return EtcdShareStore.connect(settings.store(), settings.access(), timeout);
    }

    /** Why {@code uri} names no store this build can use; null when it names one. */
    static String problem(String uri) {
        return EtcdClient.problem(uri);
    }

    /**
     * One tenant limit as a node reports it: the store's key, the global limit, this node's
     * demand, the share it enforces now (until it applies the answer, and beyond if the answer
     * is lost), and the floor every configured node keeps; all in the limit's unit per second.
     */
    record Report(String key, long limit, long demand, long held, long floor) {
    }

    /** The answer for one report: this node's share, and whether the store still knew this node for it (false: new, expired or lost). */
    record Share(long share, boolean known) {
    }

    /**
     * Records {@code reports} for {@code node} with a lease of {@code leaseMs} and returns its
     * shares, one per report in order: one round trip, atomic for all of them.
     *
     * @param nodes how many nodes are configured (each keeps its report's floor, live or not)
     * @throws StoreException the store could not be reached or refused the exchange
     */
    List<Share> exchange(String node, int nodes, long leaseMs, List<Report> reports) throws StoreException;

    /** Releases the connection and every thread the client started. */
    @Override
    void close();

    /** The store failed or could not be reached. */
    final class StoreException extends Exception {
        private static final long serialVersionUID = 1L;

        public StoreException(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
