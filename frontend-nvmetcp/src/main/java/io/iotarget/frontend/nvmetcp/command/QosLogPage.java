package io.iotarget.frontend.nvmetcp.command;

import io.iotarget.engine.QosSnapshot;
import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.config.ActiveNamespace;
import io.iotarget.model.IoGroup;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The QoS log page (vendor-specific log identifier 0xC0), per namespace: what limits the
 * calling host's IO on that namespace and what they did to it, from the group that pays for it
 * ({@link Controller#payer}: under {@code cgroup_per_host}, the host's own child) — the numbers
 * the operator reads in io.max, io.min, io.max.burst.stat, io.latency, io.weight, io.stat,
 * iotarget.io.stat and io.pressure, taken in one {@link QosSnapshot}. A host sees its own group
 * only: the NSID names the namespace, the connection names the host. Byte by byte in
 * docs/qos-log.md; {@code scripts/nvme-qos} prints it. Also the Supported Log Pages log (0x00),
 * which lists it (Identify's LPA bit 5 says that log exists). The admin queue's event loop.
 */
public final class QosLogPage {
    /** Vendor-specific log identifiers are C0h to FFh. */
    public static final int LID_QOS = 0xC0;
    public static final int LID_SUPPORTED_LOG_PAGES = 0x00;
    /** Supported Log Pages: one u32 per LID, bit 0 LSUPP. */
    static final int SUPPORTED_LOG_PAGES_BYTES = 1024;
    static final int LSUPP = 1;

    static final int VERSION = 1;
    static final int PAGE_BYTES = 4096;
    /** Flags byte: the group is the host's own child under cgroup_per_host. */
    static final int FLAG_PER_HOST = 1;
    /** Flags byte: no group could be had for the host (cgroup.max.descendants): every value is zero. */
    static final int FLAG_NO_GROUP = 1 << 1;
    /** A u64 limit of "max", a u32 not reported. */
    static final long ALL_ONES = -1L;

    static final int VERSION_AT = 0, FLAGS_AT = 1, LENGTH_AT = 2, NSID_AT = 4, TIMESTAMP_MS_AT = 8, MAJOR_AT = 16, MINOR_AT = 20;
    static final int GROUP_AT = 24, GROUP_BYTES = 232;
    /** Four u64 each, in the order rbps, wbps, riops, wiops. */
    static final int IO_MAX_AT = 256, IO_MIN_AT = 288, BURST_LEFT_AT = 320, BURST_FULL_AT = 352;
    static final int LATENCY_TARGET_USEC_AT = 384, WEIGHT_AT = 392, MIN_SHARE_AT = 396, HWEIGHT_ACTIVE_AT = 400, HWEIGHT_INUSE_AT = 404;
    /** Six u64: rbytes, wbytes, rios, wios, dbytes, dios. */
    static final int IO_STAT_AT = 408;
    /** Four u64: µs held by io.max, io.latency, iocost, the issuer's delay. */
    static final int HELD_USEC_AT = 456;
    static final int LAT_IOS_AT = 488, LAT_USEC_AT = 496;
    /** some: avg10, avg60, avg300 u32 in hundredths of a percent, then total u64 µs at +16; full at +24. */
    static final int PRESSURE_AT = 504, PRESSURE_BYTES = 24;
    static final int HIST_COUNT_AT = 552, HIST_AT = 560, HIST_ENTRY_BYTES = 16;
    static final int HIST_MAX_ENTRIES = (PAGE_BYTES - HIST_AT) / HIST_ENTRY_BYTES;

    private static final String[] DIRECTIONS = {"rbps", "wbps", "riops", "wiops"};
    private static final String[] IO_STAT_KEYS = {"rbytes", "wbytes", "rios", "wios", "dbytes", "dios"};
    private static final String[] HELD_KEYS = {"throttle_usec", "latency_usec", "cost_usec", "delay_usec"};

    private QosLogPage() {
    }

    /** The page for {@code nsid} as the host of {@code c} sees it; null when the namespace is not active. */
    static ByteBuffer page(Controller c, int nsid) {
        ActiveNamespace ns = c.subsystem.table.find(nsid);
        if (ns == null) return null;
        IoGroup payer = c.payer(ns);
        ByteBuffer b = ByteBuffer.allocate(PAGE_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.put(VERSION_AT, (byte) VERSION);
        b.putShort(LENGTH_AT, (short) PAGE_BYTES);
        b.putInt(NSID_AT, nsid);
        b.putInt(MAJOR_AT, ns.device().number().major());
        b.putInt(MINOR_AT, ns.device().number().minor());
        if (payer == null) {
            b.put(FLAGS_AT, (byte) FLAG_NO_GROUP);
            b.putLong(TIMESTAMP_MS_AT, System.currentTimeMillis());
            return b;
        }
        encode(b, QosSnapshot.of(c.target.engine().controller(), payer, ns.device().number(), System.currentTimeMillis()),
                payer != ns.group() && ns.perHost());
        return b;
    }

    /** Writes {@code s} into {@code b} from its timestamp on (the header's first 8 bytes and the device are the caller's). */
    static void encode(ByteBuffer b, QosSnapshot s, boolean perHost) {
        b.put(FLAGS_AT, (byte) (perHost ? FLAG_PER_HOST : 0));
        b.putLong(TIMESTAMP_MS_AT, s.takenAtMs());
        byte[] path = s.groupPath().getBytes(StandardCharsets.UTF_8);
        b.put(GROUP_AT, path, 0, Math.min(path.length, GROUP_BYTES - 1));
        for (int i = 0; i < DIRECTIONS.length; i++) {
            b.putLong(IO_MAX_AT + 8 * i, s.number("io.max", DIRECTIONS[i], QosSnapshot.UNLIMITED));
            b.putLong(IO_MIN_AT + 8 * i, s.number("io.min", DIRECTIONS[i], 0));
            b.putLong(BURST_LEFT_AT + 8 * i, s.number("io.max.burst.stat", DIRECTIONS[i], ALL_ONES));
            b.putLong(BURST_FULL_AT + 8 * i, s.denominator("io.max.burst.stat", DIRECTIONS[i], ALL_ONES));
        }
        b.putLong(LATENCY_TARGET_USEC_AT, s.number("io.latency", "target", 0));
        b.putInt(WEIGHT_AT, (int) s.number("io.weight", "weight", 0));
        b.putInt(MIN_SHARE_AT, (int) s.hundredths("iotarget.io.stat", "min_pct", ALL_ONES));
        // iocost shows cost.usage in io.stat only while it is enabled on the device; without it
        // a weight gives no share, which is not the same as the 0 of an idle group.
        boolean iocost = s.text("io.stat", "cost.usage") != null;
        b.putInt(HWEIGHT_ACTIVE_AT, (int) (iocost ? s.hundredths("iotarget.io.stat", "hweight_active_pct", ALL_ONES) : ALL_ONES));
        b.putInt(HWEIGHT_INUSE_AT, (int) (iocost ? s.hundredths("iotarget.io.stat", "hweight_inuse_pct", ALL_ONES) : ALL_ONES));
        for (int i = 0; i < IO_STAT_KEYS.length; i++) b.putLong(IO_STAT_AT + 8 * i, s.number("io.stat", IO_STAT_KEYS[i], 0));
        for (int i = 0; i < HELD_KEYS.length; i++) b.putLong(HELD_USEC_AT + 8 * i, s.number("iotarget.io.stat", HELD_KEYS[i], 0));
        b.putLong(LAT_IOS_AT, s.number("iotarget.io.stat", "lat_ios", 0));
        b.putLong(LAT_USEC_AT, s.number("iotarget.io.stat", "lat_usec", 0));
        String[] kinds = {"some", "full"};
        for (int k = 0; k < kinds.length; k++) {
            int at = PRESSURE_AT + PRESSURE_BYTES * k;
            b.putInt(at, (int) s.hundredths("io.pressure", kinds[k] + ".avg10", 0));
            b.putInt(at + 4, (int) s.hundredths("io.pressure", kinds[k] + ".avg60", 0));
            b.putInt(at + 8, (int) s.hundredths("io.pressure", kinds[k] + ".avg300", 0));
            b.putLong(at + 16, s.number("io.pressure", kinds[k] + ".total", 0));
        }
        String hist = s.text("iotarget.io.stat", "lat_hist");
        int n = 0;
        if (hist != null && !hist.isEmpty()) {
            for (String bucket : hist.split(",")) {
                int colon = bucket.indexOf(':');
                if (colon < 0 || n == HIST_MAX_ENTRIES) continue;
                b.putLong(HIST_AT + HIST_ENTRY_BYTES * n, Long.parseLong(bucket.substring(0, colon)));
                b.putLong(HIST_AT + HIST_ENTRY_BYTES * n + 8, Long.parseLong(bucket.substring(colon + 1)));
                n++;
            }
        }
        b.putShort(HIST_COUNT_AT, (short) n);
    }

    /** Supported Log Pages (LID 00h): the pages {@code c} answers. */
    static ByteBuffer supportedLogPages(Controller c) {
        ByteBuffer b = ByteBuffer.allocate(SUPPORTED_LOG_PAGES_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        int[] lids = c.discovery() ? new int[]{LID_SUPPORTED_LOG_PAGES, LogPages.LID_DISCOVERY}
                : new int[]{LID_SUPPORTED_LOG_PAGES, LogPages.LID_ERROR, LogPages.LID_SMART, LogPages.LID_FIRMWARE_SLOT,
                        LogPages.LID_CHANGED_NAMESPACES, LogPages.LID_COMMAND_EFFECTS, LogPages.LID_ANA, LogPages.LID_RESERVATION, LID_QOS};
        for (int lid : lids) b.putInt(4 * lid, LSUPP);
        return b;
    }
}
