package io.iotarget.control.metrics;

import io.iotarget.buffer.BufferAccount;
import io.iotarget.buffer.BufferCounter;
import io.iotarget.buffer.BufferPool;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nbd.NbdServer;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.iocontrol.DeviceGroup;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.GroupTree;
import io.iotarget.iocontrol.IoController;
import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.throttle.ThrottlePolicy;
import io.iotarget.iocontrol.pressure.Pressure;
import io.iotarget.iocontrol.stat.DeviceStats;
import io.iotarget.iocontrol.stat.HeldTime;
import io.iotarget.iocontrol.stat.LatencyStats;
import io.iotarget.iocontrol.stat.StatField;
import io.iotarget.iocontrol.stat.StatFlusher;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.CounterDescriptor;
import io.iotarget.model.Counters;
import io.iotarget.model.Device;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.ClassicHistogramBuckets;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot.HistogramDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot.InfoDataPointSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import io.prometheus.metrics.model.snapshots.Unit;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The server's metrics, read from the counters it keeps whenever Prometheus scrapes (package
 * doc). This is the only class that knows where each counter lives; every metric's name,
 * labels and meaning are in docs/metrics.md.
 *
 * <p>Any thread; scrapes may overlap (each takes the locks an io.stat read takes).
 */
public final class ServerMetrics implements MultiCollector {
    /** io.stat fields by metric: op label, then the field for ops and for bytes. */
    private static final List<OpFields> OPS = List.of(
            new OpFields("read", StatField.RIOS, StatField.RBYTES),
            new OpFields("write", StatField.WIOS, StatField.WBYTES),
            new OpFields("discard", StatField.DIOS, StatField.DBYTES));
    /** iocost's io.stat fields (CostDevice.appendStat): the root's vrate in percent, every group's usage in µs. */
    private static final String VRATE_FIELD = "cost.vrate";
    private static final String USAGE_FIELD = "cost.usage";
    /** io.min's iotarget.io.stat fields (CostDevice.appendIotargetStat). */
    private static final String MIN_PCT_FIELD = "min_pct";
    private static final String MIN_IOS_FIELD = "min_ios";

    /** iotarget_io_latency_seconds' classic buckets (le, s): 50 µs to 10 s, 1-2.5-5 steps; +Inf last. */
    private static final double[] LATENCY_BUCKETS_SECONDS = {
            0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
            Double.POSITIVE_INFINITY};
    /** The policies that park requests, as iotarget_io_throttled_seconds_total's {@code policy} label. */
    private static final List<HeldTime> PARKING = List.of(HeldTime.THROTTLE, HeldTime.LATENCY, HeldTime.COST);

    private record OpFields(String op, StatField ios, StatField bytes) {
    }

    private final Engine engine;
    private final NbdServer nbd;
    private final NvmeTarget nvme;

    public ServerMetrics(Engine engine, NbdServer nbd, NvmeTarget nvme) {
        this.engine = engine;
        this.nbd = nbd;
        this.nvme = nvme;
    }

    @Override
    public MetricSnapshots collect() {
        List<MetricSnapshot> out = new ArrayList<>();
        // Read first, just before io.stat's counters: two scrapes' difference of it is the time
        // between their counter reads, where a client's own clock would also count how long each
        // response took to reach it (the web view's rates were 25 % off so on a loaded machine).
        out.add(GaugeSnapshot.builder().name("iotarget_clock_seconds").unit(Unit.SECONDS)
                .help("the server's monotonic clock when this scrape was read, from an arbitrary origin: divide two scrapes' counter differences by its difference")
                .dataPoint(GaugeDataPointSnapshot.builder().value(engine.clock().nanoTime() / 1e9).build()).build());
        ioStat(out);
        burstCredit(out);
        pressure(out);
        devices(out);
        buffers(out);
        counters(out);
        return new MetricSnapshots(out);
    }

    /**
     * io.stat and the policies' io.stat fields of every (group, device) pair, under the tree
     * lock and then the flusher's lock, as an io.stat read (CoreFiles.IoStat) takes them.
     */
    private void ioStat(List<MetricSnapshot> out) {
        CounterSnapshot.Builder ops = counter("iotarget_io_ops", "requests counted in io.stat (rios, wios, dios); flushes are writes of 0 bytes");
        CounterSnapshot.Builder bytes = counter("iotarget_io_bytes", "bytes counted in io.stat (rbytes, wbytes, dbytes)").unit(Unit.BYTES);
        CounterSnapshot.Builder usage = counter("iotarget_iocost_usage_seconds",
                "device time iocost charged to the group and its descendants (io.stat cost.usage)").unit(Unit.SECONDS);
        GaugeSnapshot.Builder vrate = GaugeSnapshot.builder().name("iotarget_iocost_vrate_ratio")
                .help("iocost's virtual time rate on the device: 1 = the cost model's speed (io.stat cost.vrate / 100)").unit(Unit.RATIO);
        CounterSnapshot.Builder throttled = counter("iotarget_io_throttled_seconds",
                "time the group's requests and its descendants' waited in a policy (io.max: throttle, io.latency: latency, iocost: cost), summed over requests")
                .unit(Unit.SECONDS);
        CounterSnapshot.Builder issuerDelay = counter("iotarget_io_issuer_delay_seconds",
                "time completions of the group and its descendants were held back from their issuer (iocost debt, io.latency delay), summed over requests")
                .unit(Unit.SECONDS);
        GaugeSnapshot.Builder minGranted = GaugeSnapshot.builder().name("iotarget_io_min_granted_ratio")
                .help("the share of its io.min the group gets: 1 = met, below 1 while the minimums in use claim more than the device (iotarget.io.stat min_pct / 100)")
                .unit(Unit.RATIO);
        CounterSnapshot.Builder minIos = counter("iotarget_io_min_ios", "requests of the group and its descendants that went on an io.min minimum (iotarget.io.stat min_ios)");
        HistogramSnapshot.Builder latency = HistogramSnapshot.builder().name("iotarget_io_latency_seconds")
                .help("latency of the group's requests and its descendants', from entering the controller to completion").unit(Unit.SECONDS);
        IoController controller = engine.controller();
        int policies = controller.policies().size();
        GroupTree groups = controller.tree();
        StatFlusher flusher = groups.flusher();
        ReentrantLock tree = groups.treeLock();
        tree.lock();
        try {
            List<DeviceGroup> pairs = new ArrayList<>();
            groups.walk(g -> pairs.addAll(g.deviceGroups()));
            flusher.lock().lock();
            try {
                flusher.flush();
                groups.foldLatency(controller.root());
                StringBuilder fields = new StringBuilder();
                for (DeviceGroup dg : pairs) {
                    String group = dg.group().path();
                    String device = dg.device().device().number().toString();
                    DeviceStats s = dg.stats();
                    for (OpFields f : OPS) {
                        Labels labels = Labels.of("group", group, "device", device, "op", f.op);
                        ops.dataPoint(CounterDataPointSnapshot.builder().labels(labels).value(s.total(f.ios)).build());
                        bytes.dataPoint(CounterDataPointSnapshot.builder().labels(labels).value(s.total(f.bytes)).build());
                    }
                    Labels pair = Labels.of("group", group, "device", device);
                    for (HeldTime t : PARKING) {
                        throttled.dataPoint(CounterDataPointSnapshot.builder().labels(pair.add("policy", t.label()))
                                .value(dg.held().counter(t) / 1e9).build());
                    }
                    issuerDelay.dataPoint(CounterDataPointSnapshot.builder().labels(pair)
                            .value(dg.held().counter(HeldTime.ISSUER_DELAY) / 1e9).build());
                    latency.dataPoint(latencyPoint(pair, dg.latency()));
                    fields.setLength(0);
                    for (int i = 0; i < policies; i++) dg.device().policy(i).appendStat(dg, fields);
                    long usageUs = field(fields, USAGE_FIELD);
                    if (usageUs >= 0) {
                        usage.dataPoint(CounterDataPointSnapshot.builder().labels(Labels.of("group", group, "device", device))
                                .value(usageUs / 1e6).build());
                    }
                    long vratePct = dg.parent() == null ? hundredths(fields, VRATE_FIELD) : -1;
                    if (vratePct >= 0) {
                        vrate.dataPoint(GaugeDataPointSnapshot.builder().labels(Labels.of("device", device)).value(vratePct / 10_000.0).build());
                    }
                    fields.setLength(0);
                    for (int i = 0; i < policies; i++) dg.device().policy(i).appendIotargetStat(dg, fields);
                    long minimumIos = field(fields, MIN_IOS_FIELD);
                    if (minimumIos > 0) {        // only pairs that used a minimum: the others have nothing to meet
                        minIos.dataPoint(CounterDataPointSnapshot.builder().labels(pair).value(minimumIos).build());
                        minGranted.dataPoint(GaugeDataPointSnapshot.builder().labels(pair).value(hundredths(fields, MIN_PCT_FIELD) / 10_000.0).build());
                    }
                }
            } finally {
                flusher.lock().unlock();
            }
        } finally {
            tree.unlock();
        }
        out.add(ops.build());
        out.add(bytes.build());
        out.add(usage.build());
        out.add(vrate.build());
        out.add(minGranted.build());
        out.add(minIos.build());
        out.add(throttled.build());
        out.add(issuerDelay.build());
        out.add(latency.build());
    }

    /** The pair's latency in the classic buckets; each bucket's count within the HdrHistogram's precision. Flusher lock held, folded. */
    private static HistogramDataPointSnapshot latencyPoint(Labels labels, LatencyStats lat) {
        long[] counts = new long[LATENCY_BUCKETS_SECONDS.length];
        long below = 0;
        for (int i = 0; i < counts.length; i++) {
            long le = Double.isInfinite(LATENCY_BUCKETS_SECONDS[i]) ? Long.MAX_VALUE : Math.round(LATENCY_BUCKETS_SECONDS[i] * 1e9);
            long atOrBelow = lat.countAtOrBelow(le);
            counts[i] = atOrBelow - below;
            below = atOrBelow;
        }
        return HistogramDataPointSnapshot.builder().labels(labels)
                .classicHistogramBuckets(ClassicHistogramBuckets.of(LATENCY_BUCKETS_SECONDS, counts))
                .sum(lat.sumNs() / 1e9).build();
    }

    /** The value of {@code " name=123"} in io.stat fields, or -1 when absent. */
    private static long field(CharSequence fields, String name) {
        String v = fieldText(fields, name);
        return v == null ? -1 : Long.parseLong(v);
    }

    /** {@code " name=100.00"} as 10000 (hundredths), or -1 when absent. */
    private static long hundredths(CharSequence fields, String name) {
        String v = fieldText(fields, name);
        if (v == null) return -1;
        int dot = v.indexOf('.');
        return dot < 0 ? Long.parseLong(v) * 100 : Long.parseLong(v.substring(0, dot)) * 100 + Long.parseLong(v.substring(dot + 1));
    }

    private static String fieldText(CharSequence fields, String name) {
        for (String token : fields.toString().strip().split(" ")) {
            if (token.startsWith(name) && token.length() > name.length() && token.charAt(name.length()) == '=') {
                return token.substring(name.length() + 1);
            }
        }
        return null;
    }

    /** io.max.burst's credit, per limit with a burst in effect (io.max.burst.stat), in the limit's unit. */
    private void burstCredit(List<MetricSnapshot> out) {
        GaugeSnapshot.Builder left = GaugeSnapshot.builder().name("iotarget_io_burst_credit")
                .help("io.max.burst credit the group has left now, in the limit's unit (IOs or bytes): what it may still send above io.max");
        GaugeSnapshot.Builder full = GaugeSnapshot.builder().name("iotarget_io_burst_credit_full")
                .help("a full io.max.burst credit: (burst rate - io.max) x len, in the limit's unit");
        for (IoPolicy p : engine.controller().policies()) {
            if (!(p instanceof ThrottlePolicy throttle)) continue;
            for (ThrottlePolicy.BurstCredit c : throttle.burstCredits()) {
                Labels labels = Labels.of("group", c.group().path(), "device", c.device().device().number().toString(), "limit", c.limit());
                left.dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(c.left()).build());
                full.dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(c.full()).build());
            }
        }
        out.add(left.build());
        out.add(full.build());
    }

    /**
     * io.pressure's totals of every group, hierarchical as the file is: SOME as "waiting" (some
     * queue of the group stalled), FULL as "stalled" (every busy queue stalled); and how many
     * triggers are watched.
     */
    private void pressure(List<MetricSnapshot> out) {
        CounterSnapshot.Builder waiting = counter("iotarget_pressure_io_waiting_seconds",
                "time some queue of the group (or its descendants) had a request held by a policy or owed an issuer delay (io.pressure some total)")
                .unit(Unit.SECONDS);
        CounterSnapshot.Builder stalled = counter("iotarget_pressure_io_stalled_seconds",
                "time every busy queue of the group (or its descendants) was held at once (io.pressure full total)").unit(Unit.SECONDS);
        GroupTree groups = engine.controller().tree();
        Pressure pressure = groups.pressure();
        long now = engine.clock().nanoTime();
        List<Group> all = new ArrayList<>();
        groups.walk(all::add);
        for (Group g : all) {
            Labels labels = Labels.of("group", g.path());
            waiting.dataPoint(CounterDataPointSnapshot.builder().labels(labels).value(pressure.totalNs(g.pressure(), false, now) / 1e9).build());
            stalled.dataPoint(CounterDataPointSnapshot.builder().labels(labels).value(pressure.totalNs(g.pressure(), true, now) / 1e9).build());
        }
        out.add(waiting.build());
        out.add(stalled.build());
        out.add(GaugeSnapshot.builder().name("iotarget_pressure_triggers").help("io.pressure triggers being watched now")
                .dataPoint(GaugeDataPointSnapshot.builder().value(pressure.triggerCount()).build()).build());
    }

    /** The device table and which exports and namespaces lead to which device and group. */
    private void devices(List<MetricSnapshot> out) {
        InfoSnapshot.Builder devices = InfoSnapshot.builder().name("iotarget_device").help("one per device: its MAJ:MIN, backend name and type");
        for (Device d : engine.devices()) {
            devices.dataPoint(info(Labels.of("device", d.number().toString(), "name", d.name(), "type", engine.backend(d).kind())));
        }
        out.add(devices.build());
        InfoSnapshot.Builder exports = InfoSnapshot.builder().name("iotarget_export")
                .help("one per enabled NBD export: the device it serves and the group its IO is charged to");
        ConfigTree nbdTree = nbd.tree();
        for (String name : entries(nbdTree, "exports")) {
            String dir = "exports/" + name + "/";
            String[] v = attributes(nbdTree, dir, "enable", "backend", "cgroup");
            String device = v == null || !v[0].equals("1") ? null : number(v[1]);
            if (device != null) exports.dataPoint(info(Labels.of("export", name, "device", device, "group", v[2])));
        }
        out.add(exports.build());
        InfoSnapshot.Builder namespaces = InfoSnapshot.builder().name("iotarget_nvmet_namespace")
                .help("one per enabled NVMe namespace: the device it serves and the group its IO is charged to");
        ConfigTree nvmet = nvme.tree();
        for (String nqn : entries(nvmet, "subsystems")) {
            for (String nsid : entries(nvmet, "subsystems/" + nqn + "/namespaces")) {
                String dir = "subsystems/" + nqn + "/namespaces/" + nsid + "/";
                String[] v = attributes(nvmet, dir, "enable", "device_path", "cgroup");
                String device = v == null || !v[0].equals("1") ? null : number(v[1]);
                if (device == null) continue;
                String group = v[2].isEmpty() ? "/" : v[2];          // no group: the root pays
                namespaces.dataPoint(info(Labels.of("subsystem", nqn, "nsid", nsid, "device", device, "group", group)));
            }
        }
        out.add(namespaces.build());
    }

    private static InfoDataPointSnapshot info(Labels labels) {
        return InfoDataPointSnapshot.builder().labels(labels).build();
    }

    /** A directory's entries without the trailing '/'; none when it is gone. */
    private static List<String> entries(ConfigTree tree, String dir) {
        try {
            return tree.list(dir).stream().map(e -> e.endsWith("/") ? e.substring(0, e.length() - 1) : e).toList();
        } catch (ControlException e) {
            return List.of();
        }
    }

    /** The stripped values of {@code names} in {@code dir}, or null when the entry went away meanwhile. */
    private static String[] attributes(ConfigTree tree, String dir, String... names) {
        String[] values = new String[names.length];
        try {
            for (int i = 0; i < names.length; i++) values[i] = tree.read(dir + names[i]).strip();
        } catch (ControlException e) {
            return null;
        }
        return values;
    }

    /** MAJ:MIN of the engine device named {@code name}, or null. */
    private String number(String name) {
        Device d = engine.device(name);
        return d == null ? null : d.number().toString();
    }

    /** The buffer pool as a whole, and the accounts of the groups exports and namespaces are bound to. */
    private void buffers(List<MetricSnapshot> out) {
        BufferPool pool = engine.buffers();
        out.add(gauge("iotarget_buffer_capacity_bytes", "most the data buffer pool may hold (server.buffer_memory)", pool.capacityBytes()));
        out.add(gauge("iotarget_buffer_in_use_bytes", "data buffers held by requests now, in size-class bytes", pool.inUseBytes()));
        out.add(gauge("iotarget_buffer_resident_bytes", "data buffer memory mapped now: in use plus cached free", pool.residentBytes()));
        for (BufferCounter c : BufferCounter.values()) {
            out.add(counter("iotarget_buffer_" + c.label(), c.doc())
                    .dataPoint(CounterDataPointSnapshot.builder().value(pool.counter(c)).build()).build());
        }
        GaugeSnapshot.Builder inUse = GaugeSnapshot.builder().name("iotarget_buffer_group_in_use_bytes")
                .help("data buffers held by the group's requests now").unit(Unit.BYTES);
        GaugeSnapshot.Builder share = GaugeSnapshot.builder().name("iotarget_buffer_group_share_bytes")
                .help("most the group's requests may hold at once (server.buffer_share)").unit(Unit.BYTES);
        GaugeSnapshot.Builder waiters = GaugeSnapshot.builder().name("iotarget_buffer_group_waiters")
                .help("the group's takes waiting for room now");
        List<Group> bound = new ArrayList<>();
        engine.controller().tree().walk(g -> {
            if (g.members() > 0) bound.add(g);
        });
        for (Group g : bound) {
            BufferAccount account = pool.account(g);
            Labels labels = Labels.of("group", g.path());
            inUse.dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(account.inUseBytes()).build());
            share.dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(account.shareBytes()).build());
            waiters.dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(account.waiting()).build());
        }
        out.add(inUse.build());
        out.add(share.build());
        out.add(waiters.build());
    }

    /**
     * Connections per front end, the failures the server survived, and every counter catalogue:
     * each front end's ({@code iotarget_nbd_*}, {@code iotarget_nvme_tcp_*}), and per device the
     * dispatch queue's ({@code iotarget_dispatch_*}) and each policy's
     * ({@code iotarget_<policy>_*}), named by the catalogue entries' labels.
     */
    private void counters(List<MetricSnapshot> out) {
        out.add(GaugeSnapshot.builder().name("iotarget_connections").help("TCP connections open now, by front end")
                .dataPoint(GaugeDataPointSnapshot.builder().labels(Labels.of("frontend", "nbd")).value(nbd.connectionCount()).build())
                .dataPoint(GaugeDataPointSnapshot.builder().labels(Labels.of("frontend", "nvme")).value(nvme.connectionCount()).build())
                .build());
        out.add(total("iotarget_transport_unexpected_failures",
                "connections ended by a failure that was not the peer's doing (a handler that threw, out of memory); both front ends",
                nbd.unexpectedErrors()));
        out.add(total("iotarget_engine_unexpected_errors", "failures the engine's releaser thread survived", engine.unexpectedErrors()));
        out.add(total("iotarget_host_groups_removed",
                "idle groups cgroup_per_host made for hosts that have gone, removed past 256 idle in a group or to make room under cgroup.max.descendants",
                engine.controller().tree().hostChildrenRemoved()));
        Catalogues catalogues = new Catalogues();
        catalogues.add("iotarget_nbd_", nbd.counters(), Labels.EMPTY);
        catalogues.add("iotarget_nvme_tcp_", nvme.counters(), Labels.EMPTY);
        for (Device device : engine.devices()) {
            Labels labels = Labels.of("device", device.number().toString());
            Counters<?> dispatch = engine.dispatchCounters(device);
            if (dispatch != null) catalogues.add("iotarget_dispatch_", dispatch, labels);
            engine.controller().policyCounters(device).forEach((policy, counters) -> catalogues.add("iotarget_" + policy + "_", counters, labels));
        }
        catalogues.snapshots(out);
    }

    /** Counter catalogues as metrics: one metric per entry, a data point per labelled owner. */
    private static final class Catalogues {
        private final Map<String, CounterSnapshot.Builder> counters = new LinkedHashMap<>();
        private final Map<String, GaugeSnapshot.Builder> gauges = new LinkedHashMap<>();

        void add(String prefix, Counters<?> catalogue, Labels labels) {
            catalogue.snapshot().forEach((entry, value) -> {
                CounterDescriptor d = (CounterDescriptor) entry;
                String name = prefix + d.label();
                if (d.kind() == CounterDescriptor.Kind.COUNTER) {
                    counters.computeIfAbsent(name, n -> counter(n, d.doc()))
                            .dataPoint(CounterDataPointSnapshot.builder().labels(labels).value(value).build());
                } else {
                    gauges.computeIfAbsent(name, n -> GaugeSnapshot.builder().name(n).help(d.doc()))
                            .dataPoint(GaugeDataPointSnapshot.builder().labels(labels).value(value).build());
                }
            });
        }

        void snapshots(List<MetricSnapshot> out) {
            counters.values().forEach(b -> out.add(b.build()));
            gauges.values().forEach(b -> out.add(b.build()));
        }
    }

    private static CounterSnapshot.Builder counter(String name, String help) {
        return CounterSnapshot.builder().name(name).help(help);
    }

    private static CounterSnapshot total(String name, String help, long value) {
        return counter(name, help).dataPoint(CounterDataPointSnapshot.builder().value(value).build()).build();
    }

    private static GaugeSnapshot gauge(String name, String help, long bytes) {
        return GaugeSnapshot.builder().name(name).help(help).unit(Unit.BYTES)
                .dataPoint(GaugeDataPointSnapshot.builder().value(bytes).build()).build();
    }
}
