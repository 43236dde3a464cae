package io.iotarget.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The store on etcd: the rebalancing of the package documentation's section 2, computed in
 * Java between a read and a conditional write.
 *
 * <h2>Keys</h2>
 * One key per (tenant limit, node): {@code /iotarget/shares/LIMIT/NODE}, LIMIT being the
 * coordinator's key and NODE the node's id, each with {@code %} and {@code /} escaped
 * ({@code %25}, {@code %2F}); the value is {@code "DEMAND HOLDS"}, two integers, HOLDS the most
 * the node may enforce until its next exchange (the larger of the share answered and the share it
 * said it held).
 *
 * <h2>One exchange</h2>
 * <ol>
 *   <li>a keep-alive of the node's share lease (a lease of {@code leaseMs} rounded up to seconds,
 *       granted anew when etcd no longer has it): its entries live as long as it exchanges, and
 *       go one lease after its last exchange, as the package documentation's leases say — plus up to
 *       500 ms, etcd's sweep for expired leases;</li>
 *   <li>one transaction of ranges reads every limit's entries at one revision;</li>
 *   <li>the shares are computed as section 2 says (floors, water-filling, the others' holdings);</li>
 *   <li>one transaction writes the node's entries, on its share lease, if no entry of those limits
 *       changed after that revision; else it reads again ({@link #ATTEMPTS} times at most).</li>
 * </ol>
 * A deleted entry (an expired node) is not a conflict: the computation counted its holding, so it
 * gave less, never more. The share lease is not the membership lease ({@link Membership}): a share
 * must go when the node stops <em>exchanging</em> (its coordinator stuck), not only when the
 * process stops.
 *
 * <p>The coordinator's thread only (one instance may serve several node ids, as tests do).
 */
public final class EtcdShareStore implements ShareStore {
    /** Where the shares live; the store's schema (docs/cluster.md). */
    public static final String PREFIX = "/iotarget/shares/";
    /** Reads and conditional writes before an exchange fails for contention: far more than three nodes per interval need. */
    static final int ATTEMPTS = 8;

    private final EtcdClient client;
    /** Per node id: its share lease and the TTL asked for it, in seconds. */
    private final Map<String, long[]> leases = new HashMap<>();

    /** A store on {@code client}, which it closes on {@link #close}. */
    public EtcdShareStore(EtcdClient client) {
        this.client = client;
    }

    /** A store on {@code uri} ({@code etcd://HOST:PORT,...}), every call at most {@code timeout}. */
    public static EtcdShareStore connect(String uri, EtcdClient.Access access, Duration timeout) throws IOException {
        return new EtcdShareStore(EtcdClient.create(uri, access, timeout));
    }

    /** {@code %} and {@code /} escaped, so no limit's prefix is another's. */
    static String escape(String s) {
        return s.replace("%", "%25").replace("/", "%2F");
    }

    private static String prefix(String key) {
        return PREFIX + escape(key) + "/";
    }

    @Override
    public List<Share> exchange(String node, int nodes, long leaseMs, List<Report> reports) throws StoreException {
        try {
            long lease = lease(node, Math.max(1, (leaseMs + 999) / 1000));
            List<String> prefixes = new ArrayList<>(reports.size());
            for (Report r : reports) prefixes.add(prefix(r.key()));
            String mine = escape(node);
            for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
                List<EtcdClient.Range> ranges = client.ranges(prefixes);
                List<Share> shares = new ArrayList<>(reports.size());
                List<EtcdClient.Put> puts = new ArrayList<>(reports.size());
                for (int i = 0; i < reports.size(); i++) {
                    Report r = reports.get(i);
                    Share s = rebalance(mine, nodes, r, ranges.get(i).kvs(), prefixes.get(i));
                    shares.add(s);
                    String value = r.demand() + " " + Math.max(s.share(), r.held());
                    puts.add(new EtcdClient.Put(prefixes.get(i) + mine, value.getBytes(StandardCharsets.UTF_8), lease));
                }
                if (client.txn(prefixes, ranges.getFirst().revision(), puts)) return shares;
            }
            throw new StoreException("etcd: " + ATTEMPTS + " conflicting writes in a row", null);
        } catch (IOException e) {
            throw new StoreException(e.getMessage(), e);
        }
    }

    /** The node's share lease, kept alive now; a new one when etcd no longer has it or the TTL asked changed. */
    private long lease(String node, long ttlSeconds) throws IOException {
        long[] held = leases.get(node);
        if (held != null && held[1] == ttlSeconds && client.keepAlive(held[0]) > 0) return held[0];
        EtcdClient.Lease granted = client.grant(ttlSeconds);
        leases.put(node, new long[] {granted.id(), ttlSeconds});
        return granted.id();
    }

    /** One limit's rebalancing (package documentation, section 2), from the entries read under {@code prefix}. */
    static Share rebalance(String mine, int nodes, Report r, List<EtcdClient.KeyValue> entries, String prefix) {
        long floor = r.floor();
        record Want(String node, long want) {
        }
        List<Want> wants = new ArrayList<>();
        wants.add(new Want(mine, Math.max(r.demand() - floor, 0)));
        long others = 0;
        boolean known = false;
        for (EtcdClient.KeyValue kv : entries) {
            String name = kv.key().substring(prefix.length());
            String[] fields = kv.valueText().split(" ");
            if (fields.length != 2 || !fields[0].matches("\\d{1,18}") || !fields[1].matches("\\d{1,18}")) continue;   // not ours
            if (name.equals(mine)) {
                known = true;
            } else {
                others += Long.parseLong(fields[1]);
                wants.add(new Want(name, Math.max(Long.parseLong(fields[0]) - floor, 0)));
            }
        }
        // Every configured node keeps its floor, live or not; above the floors, the smallest wants are met first.
        wants.sort(Comparator.comparingLong(Want::want));
        int live = wants.size();
        long absent = Math.max(nodes - live, 0);
        long rest = Math.max(r.limit() - (live + absent) * floor, 0);
        long given = 0;
        for (int k = 0; k < live; k++) {
            Want w = wants.get(k);
            long give = Math.min(w.want(), rest / (live - k));
            rest -= give;
            if (w.node().equals(mine)) given = give;
        }
        long target = floor + given + rest / live;
        long share = Math.max(1, Math.min(target, r.limit() - others - absent * floor));
        return new Share(share, known);
    }

    @Override
    public void close() {
        client.close();
    }
}
