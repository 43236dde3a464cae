package io.iotarget.frontend.nvmetcp.command;

import io.iotarget.frontend.nvmetcp.wire.AnaState;
import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.config.Subsystem;

import io.iotarget.frontend.nvmetcp.Queue;

import io.iotarget.frontend.nvmetcp.config.NamespaceTable;
import io.iotarget.frontend.nvmetcp.config.Port;

import io.iotarget.frontend.nvmetcp.CommandSlot;
import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.reservation.NoticeLog;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.SortedSet;

/**
 * Get Log Page (admin opcode 0x02). CDW10: LID bits 7:0, RAE bit 15, NUMDL bits 31:16; CDW11:
 * NUMDU bits 15:0; CDW12-13: the byte offset into the page (LPO). The host gets
 * (NUMD + 1) dwords from LPO on, zero past the page's end. The admin queue's event loop.
 */
public final class LogPages {
    static final int LID_ERROR = 0x01;
    static final int LID_SMART = 0x02;
    static final int LID_FIRMWARE_SLOT = 0x03;
    static final int LID_CHANGED_NAMESPACES = 0x04;
    static final int LID_COMMAND_EFFECTS = 0x05;
    static final int LID_ANA = 0x0C;
    static final int LID_DISCOVERY = 0x70;
    static final int LID_RESERVATION = 0x80;
    static final int CDW10_RAE = 1 << 15;
    /** LSP (CDW10 bits 11:8) bit 0 of the ANA log: return groups only, no NSID lists. */
    static final int CDW10_ANA_RGO = 1 << 8;

    /*  ANA (asymmetric namespace access), header (16 bytes): 0 CHGCNT u64, 8 NGRPS u16; then per group
     *  a descriptor: 0 ANAGRPID u32, 4 NNSIDS u32, 8 CHGCNT u64, 16 ANA state (bits 3:0), 32 NSID list u32[NNSIDS] */
    static final int ANA_HEADER_BYTES = 16;
    static final int ANA_NGRPS = 8;
    static final int ANA_DESCRIPTOR_BYTES = 32;
    static final int ANA_DESC_NNSIDS = 4;
    static final int ANA_DESC_CHGCNT = 8;
    static final int ANA_DESC_STATE = 16;

    /*  SMART / Health (512 bytes): 0 critical warning, 1 temperature u16 (K), 3 available spare %,
     *  4 spare threshold %, 32 data units read u128 (1000 × 512 B), 48 data units written,
     *  64 host read commands, 80 host write commands, 176 error log entries u128 */
    static final int SMART_BYTES = 512;
    static final int SMART_AVAILABLE_SPARE = 3;
    static final int SMART_SPARE_THRESHOLD = 4;
    static final int SMART_UNITS_READ = 32;
    static final int SMART_UNITS_WRITTEN = 48;
    static final int SMART_READ_COMMANDS = 64;
    static final int SMART_WRITE_COMMANDS = 80;
    /*  Firmware slot (512 bytes): 0 AFI (active slot in bits 2:0), 8 FRS1[8] */
    static final int FIRMWARE_SLOT_BYTES = 512;
    /*  Commands Supported and Effects (4096 bytes): 256 admin then 256 IO u32 entries; bit 0 CSUPP, bit 1 LBCC */
    static final int EFFECTS_BYTES = 4096;
    static final int EFFECTS_IO = 1024;
    static final int EFFECT_SUPPORTED = 1;
    static final int EFFECT_CHANGES_CONTENT = 1 << 1;
    static final int CHANGED_NAMESPACES_BYTES = 4096;

    /*  Discovery log: header (1024 bytes): 0 GENCTR u64, 8 NUMREC u64, 16 RECFMT u16; then 1024-byte entries:
     *  0 TRTYPE  1 ADRFAM  2 SUBTYPE  3 TREQ  4 PORTID u16  6 CNTLID u16  8 ASQSZ u16  10 EFLAGS u16
     *  32 TRSVCID[32]  256 SUBNQN[256]  512 TRADDR[256]  768 TSAS[256] (tcp: byte 0 = security type, 0 none, 2 TLS 1.3)
     */
    static final int DISCOVERY_RECORD_BYTES = 1024;
    static final int DISC_GENCTR = 0;
    static final int DISC_NUMREC = 8;
    static final int ENTRY_TRTYPE = 0;
    static final int ENTRY_ADRFAM = 1;
    static final int ENTRY_SUBTYPE = 2;
    static final int ENTRY_TREQ = 3;
    static final int ENTRY_TSAS = 768;
    /** NVMF_TCP_SECTYPE_TLS13. */
    static final int TCP_SECTYPE_TLS13 = 2;
    static final int ENTRY_PORTID = 4;
    static final int ENTRY_CNTLID = 6;
    static final int ENTRY_ASQSZ = 8;
    static final int ENTRY_TRSVCID = 32;
    static final int ENTRY_SUBNQN = 256;
    static final int ENTRY_TRADDR = 512;
    static final int SUBTYPE_NVM = 2;
    static final int SUBTYPE_CURRENT_DISCOVERY = 3;
    /** NVME_AQ_DEPTH: the admin queue size a host should use. */
    static final int ADMIN_QUEUE_DEPTH = 32;

    private LogPages() {
    }

    static int execute(Controller c, CommandSlot slot) {
        ByteBuffer sqe = slot.sqe;
        int cdw10 = sqe.getInt(Sqe.CDW10);
        int lid = cdw10 & 0xFF;
        boolean retain = (cdw10 & CDW10_RAE) != 0;
        long dwords = ((Integer.toUnsignedLong(sqe.getInt(Sqe.CDW11)) & 0xFFFF) << 16 | cdw10 >>> 16) + 1;
        long offset = sqe.getLong(Sqe.CDW12);
        if (slot.dataLength != dwords * 4) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
        if ((offset & 3) != 0 || offset < 0) return Status.INVALID_FIELD | Status.DNR;
        if (c.discovery() != (lid == LID_DISCOVERY)) return Status.INVALID_FIELD | Status.DNR;
        ByteBuffer page = switch (lid) {
            case LID_ERROR -> {
                ByteBuffer b = page(Controller.ERROR_LOG_ENTRIES * Controller.ERROR_LOG_ENTRY_BYTES);
                c.errorLog(b);
                yield b;
            }
            case LID_SMART -> smart(c, Sqe.nsid(sqe));
            case LID_FIRMWARE_SLOT -> firmwareSlot(c);
            case LID_CHANGED_NAMESPACES -> {
                ByteBuffer b = page(CHANGED_NAMESPACES_BYTES);
                c.takeChangedNamespaces(b, retain);
                yield b;
            }
            case LID_COMMAND_EFFECTS -> commandEffects();
            case LID_ANA -> {
                ByteBuffer b = ana(c, (cdw10 & CDW10_ANA_RGO) != 0);
                c.anaLogRead(retain);
                yield b;
            }
            case LID_RESERVATION -> {
                ByteBuffer b = page(NoticeLog.PAGE_BYTES);
                c.takeReservationNotice(b);
                yield b;
            }
            case LID_DISCOVERY -> {
                ByteBuffer b = c.target.discoveryLog(c);
                c.discoveryLogRead(retain);
                yield b;
            }
            case QosLogPage.LID_QOS -> QosLogPage.page(c, Sqe.nsid(sqe));
            case QosLogPage.LID_SUPPORTED_LOG_PAGES -> QosLogPage.supportedLogPages(c);
            default -> null;
        };
        if (page == null) return Status.INVALID_FIELD | Status.DNR;
        ByteBuffer out = Identify.zeroed(slot.data());
        if (offset < page.capacity()) {
            int n = (int) Math.min(page.capacity() - offset, out.limit());
            out.put(0, page, (int) offset, n);
        }
        return Status.SUCCESS;
    }

    private static ByteBuffer page(int bytes) {
        return ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Controller-wide health: nothing critical, the IO queues' command and data counters; null for one namespace. */
    private static ByteBuffer smart(Controller c, int nsid) {
        ByteBuffer b = page(SMART_BYTES);
        if (nsid != 0 && nsid != -1) return null;      // no per-namespace health (LPA bit 0 clear)
        long[] n = c.ioCounters();
        b.put(SMART_AVAILABLE_SPARE, (byte) 100);
        b.put(SMART_SPARE_THRESHOLD, (byte) 10);
        b.putLong(SMART_UNITS_READ, dataUnits(n[Queue.COUNT_BYTES_READ]));
        b.putLong(SMART_UNITS_WRITTEN, dataUnits(n[Queue.COUNT_BYTES_WRITTEN]));
        b.putLong(SMART_READ_COMMANDS, n[Queue.COUNT_READS]);
        b.putLong(SMART_WRITE_COMMANDS, n[Queue.COUNT_WRITES]);
        return b;
    }

    /** Thousands of 512-byte units, rounded up (the spec's unit). */
    private static long dataUnits(long bytes) {
        long sectors = (bytes + 511) / 512;
        return (sectors + 999) / 1000;
    }

    /**
     * nvmet_execute_get_log_page_ana: every group in use, ascending, in the state the admin
     * queue's port gives it, each with the subsystem's enabled namespaces in it (ascending, as
     * the Linux host requires) unless RGO; one node-wide change count in the header and each
     * descriptor.
     */
    private static ByteBuffer ana(Controller c, boolean groupsOnly) {
        c.target.lock();
        try {
            SortedSet<Integer> groups = c.target.anaGroupsInUse();
            NamespaceTable table = c.subsystem.table;
            ByteBuffer b = page(ANA_HEADER_BYTES + groups.size() * ANA_DESCRIPTOR_BYTES + (groupsOnly ? 0 : 4 * table.size()));
            long changeCount = c.target.anaChangeCount();
            b.putLong(0, changeCount);
            b.putShort(ANA_NGRPS, (short) groups.size());
            int at = ANA_HEADER_BYTES;
            for (int grpid : groups) {
                int nsids = 0;
                if (!groupsOnly) {
                    for (int i = 0; i < table.size(); i++) {
                        if (table.get(i).anaGroup() == grpid) b.putInt(at + ANA_DESCRIPTOR_BYTES + 4 * nsids++, table.get(i).nsid());
                    }
                }
                b.putInt(at, grpid);
                b.putInt(at + ANA_DESC_NNSIDS, nsids);
                b.putLong(at + ANA_DESC_CHGCNT, changeCount);
                b.put(at + ANA_DESC_STATE, (byte) anaState(c, table, grpid).code);
                at += ANA_DESCRIPTOR_BYTES + 4 * nsids;
            }
            return b;
        } finally {
            c.target.unlock();
        }
    }

    /**
     * The group's state as this node serves it: the port's, but Inaccessible where it would be
     * optimized or non-optimized while a reservation namespace of the group cannot be vouched
     * for here (this node fenced, or the copy unknown), which its IO gets anyway. Lock held.
     */
    private static AnaState anaState(Controller c, NamespaceTable table, int grpid) {
        AnaState configured = c.port.anaState(grpid);
        if (configured != AnaState.OPTIMIZED && configured != AnaState.NON_OPTIMIZED) return configured;
        for (int i = 0; i < table.size(); i++) {
            var ns = table.get(i);
            if (ns.anaGroup() == grpid && ns.reservation() != null && ns.reservation().unavailable()) return AnaState.INACCESSIBLE;
        }
        return configured;
    }

    private static ByteBuffer firmwareSlot(Controller c) {
        ByteBuffer b = page(FIRMWARE_SLOT_BYTES);
        b.put(0, (byte) 1);
        c.target.lock();
        try {
            Identify.ascii(b, 8, c.subsystem.firmware, Subsystem.FIRMWARE_BYTES);
        } finally {
            c.target.unlock();
        }
        return b;
    }

    private static ByteBuffer commandEffects() {
        ByteBuffer b = page(EFFECTS_BYTES);
        for (int op : new int[]{AdminCommands.GET_LOG_PAGE, AdminCommands.IDENTIFY, AdminCommands.ABORT, AdminCommands.SET_FEATURES,
                AdminCommands.GET_FEATURES, AdminCommands.ASYNC_EVENT_REQUEST, AdminCommands.KEEP_ALIVE}) {
            b.putInt(4 * op, EFFECT_SUPPORTED);
        }
        for (int op : new int[]{IoCommands.FLUSH, IoCommands.READ, IoCommands.COMPARE, IoCommands.VERIFY, ReservationCommands.REGISTER,
                ReservationCommands.REPORT, ReservationCommands.ACQUIRE, ReservationCommands.RELEASE}) {
            b.putInt(EFFECTS_IO + 4 * op, EFFECT_SUPPORTED);
        }
        for (int op : new int[]{IoCommands.WRITE, IoCommands.WRITE_ZEROES, IoCommands.DATASET_MANAGEMENT}) {
            b.putInt(EFFECTS_IO + 4 * op, EFFECT_SUPPORTED | EFFECT_CHANGES_CONTENT);
        }
        return b;
    }

    /** One discovery log entry of {@code subtype} for {@code nqn} reachable through {@code port}. */
    private static void discoveryEntry(ByteBuffer b, int at, Port port, String nqn, int subtype) {
        b.put(at + ENTRY_TRTYPE, (byte) Port.TRTYPE_TCP);
        b.put(at + ENTRY_ADRFAM, (byte) port.adrfamCode());
        b.put(at + ENTRY_SUBTYPE, (byte) subtype);
        b.put(at + ENTRY_TREQ, (byte) (port.treq | Port.TREQ_DISABLE_SQFLOW));
        b.putShort(at + ENTRY_PORTID, (short) port.id);
        b.putShort(at + ENTRY_CNTLID, (short) 0xFFFF);
        b.putShort(at + ENTRY_ASQSZ, (short) ADMIN_QUEUE_DEPTH);
        b.put(at + ENTRY_TSAS, (byte) (port.tls ? TCP_SECTYPE_TLS13 : 0));
        field(b, at + ENTRY_TRSVCID, port.trsvcid, 32);
        field(b, at + ENTRY_SUBNQN, nqn, 256);
        field(b, at + ENTRY_TRADDR, port.traddr, 256);
    }

    /** The discovery log for entries {@code nqns} (the first is the current discovery subsystem). */
    public static ByteBuffer discoveryLog(long generation, Port port, List<String> nqns) {
        ByteBuffer b = page(DISCOVERY_RECORD_BYTES * (1 + nqns.size()));
        b.putLong(DISC_GENCTR, generation);
        b.putLong(DISC_NUMREC, nqns.size());
        for (int i = 0; i < nqns.size(); i++) {
            discoveryEntry(b, DISCOVERY_RECORD_BYTES * (i + 1), port, nqns.get(i), i == 0 ? SUBTYPE_CURRENT_DISCOVERY : SUBTYPE_NVM);
        }
        return b;
    }

    private static void field(ByteBuffer b, int at, String value, int width) {
        byte[] v = value.getBytes(StandardCharsets.US_ASCII);
        b.put(at, v, 0, Math.min(v.length, width - 1));
    }
}
