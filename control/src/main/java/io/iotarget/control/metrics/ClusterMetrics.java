package io.iotarget.control.metrics;

import io.iotarget.cluster.Coordinator;
import io.iotarget.cluster.Coordinator.TenantView;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Unit;

import java.util.ArrayList;
import java.util.List;

/**
 * This node's side of the cluster (io.iotarget.cluster), as of the coordinator's last
 * interval: per tenant limit its share, demand and global limit; the store's round trip,
 * exchanges, failures and fallbacks. A collector of its own beside {@link ServerMetrics},
 * registered only when the config has a cluster section (docs/metrics.md). Any thread.
 */
public final class ClusterMetrics implements MultiCollector {
    private final Coordinator coordinator;

    public ClusterMetrics(Coordinator coordinator) {
        this.coordinator = coordinator;
    }

    @Override
    public MetricSnapshots collect() {
        List<MetricSnapshot> out = new ArrayList<>();
        GaugeSnapshot.Builder share = GaugeSnapshot.builder().name("iotarget_cluster_share")
                .help("this node's share of the group's io.max.global limit, per second in the limit's unit (bytes or IOs)");
        GaugeSnapshot.Builder demand = GaugeSnapshot.builder().name("iotarget_cluster_demand")
                .help("what this node last reported it wants of the limit: the whole limit when it used 90 % of its share, else its use + 25 %");
        GaugeSnapshot.Builder global = GaugeSnapshot.builder().name("iotarget_cluster_global_limit")
                .help("the group's io.max.global limit, held by all nodes together");
        for (TenantView t : coordinator.view()) {
            Labels labels = Labels.of("group", t.group(), "device", t.device(), "limit", t.limit());
            share.dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(t.share()).build());
            demand.dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(t.demand()).build());
            global.dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(t.globalLimit()).build());
        }
        out.add(share.build());
        out.add(demand.build());
        out.add(global.build());
        long rtt = coordinator.roundTripNs();
        GaugeSnapshot.Builder roundTrip = GaugeSnapshot.builder().name("iotarget_cluster_store_round_trip_seconds").unit(Unit.SECONDS)
                .help("how long the last successful exchange with the store took (absent before the first)");
        if (rtt >= 0) roundTrip.dataPoint(GaugeDataPointSnapshot.builder().value(rtt / 1e9).build());
        out.add(roundTrip.build());
        out.add(GaugeSnapshot.builder().name("iotarget_cluster_fallback")
                .help("1 while this node holds limit / nodes because it has not reached the store for longer than the lease")
                .dataPoint(GaugeDataPointSnapshot.builder().value(coordinator.inFallback() ? 1 : 0).build()).build());
        out.add(counter("iotarget_cluster_fallbacks", "times this node fell back to limit / nodes", coordinator.fallbacks()));
        out.add(counter("iotarget_cluster_exchanges", "exchanges with the store that succeeded", coordinator.exchanges()));
        out.add(counter("iotarget_cluster_store_failures", "exchanges with the store that failed (unreachable, timed out, refused)",
                        coordinator.failures()));
        return new MetricSnapshots(out);
    }

    private static CounterSnapshot counter(String name, String help, long value) {
        return CounterSnapshot.builder().name(name).help(help).dataPoint(CounterDataPointSnapshot.builder().value(value).build()).build();
    }
}
