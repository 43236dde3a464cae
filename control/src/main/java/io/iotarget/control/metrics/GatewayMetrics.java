package io.iotarget.control.metrics;

import io.iotarget.cluster.Fence;
import io.iotarget.cluster.GatewayGroup;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot.InfoDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Unit;

import java.util.ArrayList;
import java.util.List;

/**
 * This node's gateway group ({@code cluster.group}) as the store last said: the live members with
 * their lease and controller-ID range, who owns each ANA group, and this node's moves. What
 * {@code /cluster} shows (docs/metrics.md, "Gateway group"). Registered only with a group. Any thread.
 */
public final class GatewayMetrics implements MultiCollector {
    private final GatewayGroup group;
    private final Fence fence;

    public GatewayMetrics(GatewayGroup group, Fence fence) {
        this.group = group;
        this.fence = fence;
    }

    @Override
    public MetricSnapshots collect() {
        List<MetricSnapshot> out = new ArrayList<>();
        GatewayGroup.View v = group.view();
        InfoSnapshot.Builder members = InfoSnapshot.builder().name("iotarget_gateway_member")
                .help("one per live member of the gateway group: its etcd lease (hex) and controller-ID range");
        GaugeSnapshot.Builder owned = GaugeSnapshot.builder().name("iotarget_gateway_member_ana_groups")
                .help("how many ANA groups each live member owns (presents optimized)");
        for (GatewayGroup.MemberView m : v.members().values()) {
            members.dataPoint(InfoDataPointSnapshot.builder().labels(Labels.of("gateway_group", group.group(), "node", m.node(),
                    "lease", Long.toHexString(m.lease()), "cntlid_min", Integer.toString(m.cntlidMin()), "cntlid_max", Integer.toString(m.cntlidMax()))).build());
            owned.dataPoint(GaugeDataPointSnapshot.builder().labels(Labels.of("gateway_group", group.group(), "node", m.node())).value(m.owns().size()).build());
        }
        out.add(members.build());
        out.add(owned.build());
        InfoSnapshot.Builder owners = InfoSnapshot.builder().name("iotarget_gateway_ana_group_owner")
                .help("one per ANA group with an owner: the node that presents it optimized (next: the node it is being handed to, else empty)");
        for (GatewayGroup.Owner o : v.owners().values()) {
            if (o.node() == null) continue;
            owners.dataPoint(InfoDataPointSnapshot.builder().labels(Labels.of("gateway_group", group.group(), "ana_group", Integer.toString(o.grpid()),
                    "node", o.node(), "next", o.next() == null ? "" : o.next(), "pin", o.pin() == null ? "" : o.pin())).build());
        }
        out.add(owners.build());
        out.add(GaugeSnapshot.builder().name("iotarget_gateway_fence_remaining_seconds").unit(Unit.SECONDS)
                .help("how long this node's membership lease holds by its own deadline (0: fenced)")
                .dataPoint(GaugeDataPointSnapshot.builder().value(Math.max(0, fence.validUntilNs() - System.nanoTime()) / 1e9).build()).build());
        out.add(counter("iotarget_gateway_failovers", "ANA groups this node gave an owner as the leader: they had none, or their owner's lease was gone", group.failovers()));
        out.add(counter("iotarget_gateway_moves", "ANA group moves this node started as the leader, to rebalance or follow a pin", group.moves()));
        out.add(counter("iotarget_gateway_handovers", "ANA groups this node handed over to another after it stopped presenting them optimized", group.handovers()));
        return new MetricSnapshots(out);
    }

    private static CounterSnapshot counter(String name, String help, long value) {
        return CounterSnapshot.builder().name(name).help(help).dataPoint(CounterDataPointSnapshot.builder().value(value).build()).build();
    }
}
