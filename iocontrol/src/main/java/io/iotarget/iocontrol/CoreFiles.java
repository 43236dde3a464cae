package io.iotarget.iocontrol;

import io.iotarget.iocontrol.file.InterfaceFile;
import io.iotarget.iocontrol.policy.DevicePolicy;
import io.iotarget.iocontrol.policy.host.PolicyGroup;
import io.iotarget.iocontrol.pressure.Pressure;
import io.iotarget.iocontrol.stat.HeldTime;
import io.iotarget.iocontrol.stat.LatencyStats;
import io.iotarget.iocontrol.stat.StatField;
import io.iotarget.iocontrol.stat.StatFlusher;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse;

import java.util.List;

/**
 * The cgroup core files a storage target needs (cgroup.controllers, cgroup.subtree_control,
 * cgroup.stat, cgroup.events, cgroup.max.descendants, cgroup.max.depth), io.stat and
 * io.pressure, with the kernel's formats and errors; and iotarget.io.stat, what io.stat has no
 * field for, and iotarget.host, which marks a host's group under cgroup_per_host.
 */
final class CoreFiles {
    private CoreFiles() {
    }

    static List<InterfaceFile> all(GroupTree tree) {
        return List.of(
                new Controllers(), new SubtreeControl(tree), new Events(), new Stat(),
                new MaxLimit("cgroup.max.descendants"), new MaxLimit("cgroup.max.depth"),
                new IoStat(tree), new IoPressure(tree), new IotargetIoStat(tree), new IotargetHost());
    }

    /**
     * A file of the cgroup core. It reads and writes the controller's own groups, which are the
     * only {@link PolicyGroup}s there are, so it takes them back as {@link Group}s once, here.
     */
    private abstract static class CoreFile extends InterfaceFile {
        CoreFile(String name, Placement placement, boolean controllerFile) {
            super(name, placement, controllerFile);
        }

        abstract String read(Group g) throws ControlException;

        void write(Group g, String text) throws ControlException {
            super.write(g, text);
        }

        List<String> replay(Group g) throws ControlException {
            return super.replay(g);
        }

        @Override
        public final String read(PolicyGroup g) throws ControlException {
            return read(Group.of(g));
        }

        @Override
        public final void write(PolicyGroup g, String text) throws ControlException {
            write(Group.of(g), text);
        }

        @Override
        public final List<String> replay(PolicyGroup g) throws ControlException {
            return replay(Group.of(g));
        }
    }

    /** cgroup.controllers: what this group may enable for its children. */
    private static final class Controllers extends CoreFile {
        Controllers() {
            super("cgroup.controllers", Placement.EVERYWHERE, false);
        }

        @Override
        public String read(Group g) {
            return g.ioEnabled() ? "io\n" : "";
        }
    }

    /** cgroup.subtree_control: "+io" / "-io", the kernel's rules and errnos. */
    private static final class SubtreeControl extends CoreFile {
        private final GroupTree tree;

        SubtreeControl(GroupTree tree) {
            super("cgroup.subtree_control", Placement.EVERYWHERE, false);
            this.tree = tree;
        }

        @Override
        public String read(Group g) {
            return g.ioInSubtree ? "io\n" : "";
        }

        @Override
        public boolean writable() {
            return true;
        }

        /** It reads {@code io} and takes {@code +io}. */
        @Override
        public List<String> replay(Group g) {
            return g.ioInSubtree ? List.of("+io") : List.of();
        }

        /** cgroup_subtree_control_write: the text stripped, then tokens split on single spaces. */
        @Override
        public void write(Group g, String text) throws ControlException {
            Boolean want = null;
            for (String token : KernelParse.tokens(KernelParse.strip(text), " ")) {
                char sign = token.charAt(0);
                String name = token.substring(1);
                if ((sign != '+' && sign != '-') || !name.equals("io")) {
                    throw new ControlException(Errno.EINVAL, "'" + token + "' (expected: +io or -io; io is the only controller)");
                }
                want = sign == '+';
            }
            if (want == null) return;
            if (!g.online()) throw new ControlException(Errno.ENODEV, g.path() + " was removed");
            if (want == g.ioInSubtree) return;
            if (want && !g.ioEnabled()) {
                throw new ControlException(Errno.ENOENT, "io is not available in " + g.path()
                        + " (enable it in the parent's cgroup.subtree_control first)");
            }
            if (!want) {
                for (Group child : g.children.values()) {
                    if (child.ioInSubtree) throw new ControlException(Errno.EBUSY, child.path() + " still has io in cgroup.subtree_control");
                }
            }
            tree.setIoInSubtree(g, want);
        }
    }

    /** cgroup.events: populated = some member is bound in the subtree; nothing freezes here. */
    private static final class Events extends CoreFile {
        Events() {
            super("cgroup.events", Placement.NOT_ON_ROOT, false);
        }

        @Override
        public String read(Group g) {
            return "populated " + (populated(g) ? 1 : 0) + "\nfrozen 0\n";
        }

        private static boolean populated(Group g) {
            if (g.members > 0) return true;
            for (Group c : g.children.values()) if (populated(c)) return true;
            return false;
        }
    }

    /**
     * iotarget.host (not Linux's), in the groups hosts pay in under cgroup_per_host: {@code
     * automatic 1} while the group is one a connect made and nobody has used since (saves leave
     * it out; once idle it may be removed, {@link GroupTree#IDLE_HOST_CHILDREN_KEPT}), {@code
     * automatic 0} once it is an ordinary group. What top and the web view mark such rows by.
     */
    private static final class IotargetHost extends CoreFile {
        IotargetHost() {
            super("iotarget.host", Placement.HOST_GROUPS, false);
        }

        @Override
        public String read(Group g) {
            return "automatic " + (g.automatic ? 1 : 0) + "\n";
        }
    }

    /** cgroup.stat: descendant counts (removed groups are gone at once, so none are dying). */
    private static final class Stat extends CoreFile {
        Stat() {
            super("cgroup.stat", Placement.EVERYWHERE, false);
        }

        @Override
        public String read(Group g) {
            return "nr_descendants " + g.descendantCount() + "\nnr_dying_descendants 0\n";
        }
    }

    /**
     * cgroup.max.descendants / cgroup.max.depth: "max" or an int ≥ 0, read as the kernel does
     * (strstrip, then kstrtoint with base 0: {@code 010} is 8, {@code 0x10} is 16). A negative
     * value or one outside an int is ERANGE; INT_MAX is max.
     */
    private static final class MaxLimit extends CoreFile {
        MaxLimit(String name) {
            super(name, Placement.EVERYWHERE, false);
        }

        private boolean depth() {
            return name().endsWith("depth");
        }

        @Override
        public String read(Group g) {
            long v = depth() ? g.maxDepth : g.maxDescendants;
            return (v == Long.MAX_VALUE ? "max" : Long.toString(v)) + "\n";
        }

        @Override
        public boolean writable() {
            return true;
        }

        @Override
        public void write(Group g, String text) throws ControlException {
            String v = KernelParse.strip(text);
            int n = v.equals("max") ? Integer.MAX_VALUE : KernelParse.parseInt(name(), v);
            if (n < 0) throw new ControlException(Errno.ERANGE, name() + "=" + v + " (expected: max or an integer >= 0)");
            long value = n == Integer.MAX_VALUE ? Long.MAX_VALUE : n;
            if (depth()) g.maxDepth = value;
            else g.maxDescendants = value;
        }
    }

    /**
     * io.stat: one line per device the group has state on,
     * {@code MAJ:MIN rbytes= wbytes= rios= wios= dbytes= dios=} (the six fields only when one of
     * the first four is non-zero), then each policy's fields. A group with no per-device state
     * returns at once, without flushing (seed 004).
     */
    private static final class IoStat extends CoreFile {
        private static final StatField[] FIELDS = StatField.values();
        private final GroupTree tree;

        IoStat(GroupTree tree) {
            super("io.stat", Placement.EVERYWHERE, true);
            this.tree = tree;
        }

        @Override
        public String read(Group g) {
            List<DeviceGroup> pairs = g.deviceGroups();
            if (pairs.isEmpty()) return "";
            StatFlusher flusher = tree.flusher();
            StringBuilder sb = new StringBuilder(96 * pairs.size());
            flusher.lock().lock();
            try {
                flusher.flush();
                for (DeviceGroup dg : pairs) {
                    var s = dg.stats();
                    sb.append(dg.device().device().number()).append(' ');
                    // As the kernel: all six, or none when nothing was read or written (discards alone do not show).
                    if ((s.total(StatField.RBYTES) | s.total(StatField.WBYTES) | s.total(StatField.RIOS) | s.total(StatField.WIOS)) != 0) {
                        for (StatField f : FIELDS) {
                            if (f != FIELDS[0]) sb.append(' ');
                            sb.append(f.label()).append('=').append(s.total(f));
                        }
                    }
                    for (int i = 0; i < dg.device().policyCount(); i++) dg.device().policy(i).appendStat(dg, sb);
                    sb.append('\n');
                }
            } finally {
                flusher.lock().unlock();
            }
            return sb.toString();
        }
    }

    /**
     * iotarget.io.stat: iotarget's own per-device counters, read-only, kept out of io.stat so
     * that io.stat stays what Linux prints (docs/decisions.md). One line per device the group
     * has state on, every key always present, all hierarchical like io.stat:
     * <pre>
     * 259:0 throttle_usec=1200 latency_usec=0 cost_usec=0 delay_usec=0 lat_ios=40 lat_usec=9100 lat_hist=127:30,255:8,1023:2
     * </pre>
     * {@code *_usec} of {@link HeldTime} is time requests were held, summed over requests;
     * {@code lat_ios} and {@code lat_usec} count completions and their latencies summed, from
     * entering the controller; {@code lat_hist} lists each non-empty latency bucket as
     * {@code HIGHEST_USEC:COUNT} (COUNT requests took at most HIGHEST µs and more than the
     * previous bucket's), lowest first, empty when nothing completed.
     */
    private static final class IotargetIoStat extends CoreFile {
        private final GroupTree tree;

        IotargetIoStat(GroupTree tree) {
            super("iotarget.io.stat", Placement.EVERYWHERE, true);
            this.tree = tree;
        }

        @Override
        public String read(Group g) {
            List<DeviceGroup> pairs = g.deviceGroups();
            if (pairs.isEmpty()) return "";
            StatFlusher flusher = tree.flusher();
            StringBuilder sb = new StringBuilder(256 * pairs.size());
            flusher.lock().lock();
            try {
                tree.foldLatency(g);
                for (DeviceGroup dg : pairs) {
                    sb.append(dg.device().device().number());
                    for (HeldTime t : HeldTime.values()) sb.append(' ').append(t.label()).append("_usec=").append(dg.held().counter(t) / 1000);
                    LatencyStats lat = dg.latency();
                    sb.append(" lat_ios=").append(lat.count()).append(" lat_usec=").append(lat.sumNs() / 1000);
                    for (int p = 0; p < dg.device().policyCount(); p++) dg.device().policy(p).appendIotargetStat(dg, sb);
                    sb.append(" lat_hist=");
                    appendBuckets(lat, sb);
                    sb.append('\n');
                }
            } finally {
                flusher.lock().unlock();
            }
            return sb.toString();
        }

        /** Buckets in whole µs, rounded up; neighbours below 2 µs apart that round alike are merged. */
        private static void appendBuckets(LatencyStats lat, StringBuilder sb) {
            long[] pending = {-1, 0};     // µs, count
            lat.forEachBucket((highestNs, count) -> {
                long usec = (highestNs + 999) / 1000;
                if (usec == pending[0]) {
                    pending[1] += count;
                    return;
                }
                if (pending[0] >= 0) sb.append(pending[0]).append(':').append(pending[1]).append(',');
                pending[0] = usec;
                pending[1] = count;
            });
            if (pending[0] >= 0) sb.append(pending[0]).append(':').append(pending[1]);
        }
    }

    /**
     * io.pressure: PSI for IO (package {@code pressure}), on every group as cgroup v2 has it. A
     * write is a trigger, checked as psi_trigger_create checks it; a trigger lives as long as
     * the file stays open, and a write's file is closed at once, so an accepted write changes
     * nothing — {@link GroupTree#watch} keeps one open.
     */
    private static final class IoPressure extends CoreFile {
        private final GroupTree tree;

        IoPressure(GroupTree tree) {
            super(GroupTree.PRESSURE_FILE, Placement.EVERYWHERE, false);
            this.tree = tree;
        }

        @Override
        public String read(Group g) {
            return tree.pressure().read(g.pressure(), tree.clock().nanoTime());
        }

        @Override
        public boolean writable() {
            return true;
        }

        /** A trigger is not configuration: nothing to save. */
        @Override
        public List<String> replay(Group g) {
            return List.of();
        }

        @Override
        public void write(Group g, String text) throws ControlException {
            Pressure.check(text);
        }
    }
}
