package io.iotarget.frontend.nvmetcp.command;

import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.frontend.nvmetcp.wire.Status;

import io.iotarget.frontend.nvmetcp.config.NamespaceTable;

import io.iotarget.frontend.nvmetcp.config.ActiveNamespace;

import io.iotarget.frontend.nvmetcp.NvmeTarget;

import io.iotarget.frontend.nvmetcp.wire.AnaState;
import io.iotarget.frontend.nvmetcp.config.Port;
import io.iotarget.frontend.nvmetcp.config.Subsystem;

import io.iotarget.frontend.nvmetcp.CommandSlot;

import io.iotarget.frontend.nvmetcp.Controller;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * Identify (admin opcode 0x06): the 4096-byte data structures the Linux host reads while it
 * brings a controller up and scans namespaces, filled as nvmet fills them. Offsets are the NVMe
 * base spec's. The admin queue's event loop; configuration fields are read under the
 * configuration lock.
 */
public final class Identify {
    static final int BYTES = 4096;

    // CNS values (CDW10 bits 7:0).
    static final int CNS_NAMESPACE = 0x00;
    static final int CNS_CONTROLLER = 0x01;
    static final int CNS_ACTIVE_NAMESPACES = 0x02;
    static final int CNS_NAMESPACE_DESCRIPTORS = 0x03;
    static final int CNS_CS_NAMESPACE = 0x05;
    static final int CNS_CS_CONTROLLER = 0x06;
    static final int CNS_CS_INDEPENDENT_NAMESPACE = 0x08;
    static final int CSI_NVM = 0;

    /*  Identify Controller (CNS 0x01), the fields set here:
     *  0 VID u16   2 SSVID u16   4 SN[20]   24 MN[40]   64 FR[8]   72 RAB   76 CMIC   77 MDTS
     *  78 CNTLID u16   80 VER u32   92 OAES u32   96 CTRATT u32   111 CNTRLTYPE
     *  256 OACS u16   258 ACL   259 AERL   260 FRMW   261 LPA   262 ELPE   263 NPSS   320 KAS u16
     *  342 ANATT   343 ANACAP   344 ANAGRPMAX u32   348 NANAGRPID u32
     *  512 SQES   513 CQES   514 MAXCMD u16   516 NN u32   520 ONCS u16   525 VWC   536 SGLS u32
     *  540 MNAN u32   768 SUBNQN[256]   1792 IOCCSZ u32   1796 IORCSZ u32   1800 ICDOFF u16
     *  1802 FCATT   1803 MSDBD   2048 PSD0 (max power u16 @0, entry latency u32 @4, exit latency u32 @8)
     */
    static final int CTRL_SN = 4;
    static final int CTRL_MN = 24;
    static final int CTRL_FR = 64;
    static final int CTRL_RAB = 72;
    static final int CTRL_CMIC = 76;
    static final int CTRL_MDTS = 77;
    static final int CTRL_CNTLID = 78;
    static final int CTRL_VER = 80;
    static final int CTRL_OAES = 92;
    static final int CTRL_CTRATT = 96;
    static final int CTRL_CNTRLTYPE = 111;
    static final int CTRL_ACL = 258;
    static final int CTRL_AERL = 259;
    static final int CTRL_FRMW = 260;
    static final int CTRL_LPA = 261;
    static final int CTRL_ELPE = 262;
    static final int CTRL_KAS = 320;
    static final int CTRL_ANATT = 342;
    static final int CTRL_ANACAP = 343;
    static final int CTRL_ANAGRPMAX = 344;
    static final int CTRL_NANAGRPID = 348;
    static final int CTRL_SQES = 512;
    static final int CTRL_CQES = 513;
    static final int CTRL_MAXCMD = 514;
    static final int CTRL_NN = 516;
    static final int CTRL_ONCS = 520;
    static final int CTRL_VWC = 525;
    static final int CTRL_SGLS = 536;
    static final int CTRL_MNAN = 540;
    static final int CTRL_SUBNQN = 768;
    static final int CTRL_IOCCSZ = 1792;
    static final int CTRL_IORCSZ = 1796;
    static final int CTRL_ICDOFF = 1800;
    static final int CTRL_FCATT = 1802;
    static final int CTRL_MSDBD = 1803;
    static final int CTRL_PSD0 = 2048;

    static final int CMIC_MULTI_PORT = 1;
    static final int CMIC_MULTI_CONTROLLER = 1 << 1;
    static final int CMIC_ANA_REPORTING = 1 << 3;
    /** ANATT in seconds: nvmet's value (a host resets a controller that stays in "change" for 2 × ANATT). */
    static final int ANATT = 10;
    /** ANACAP: every state is reported (optimized, non-optimized, inaccessible, persistent loss, change). */
    static final int ANACAP_ALL_STATES = 0x1F;
    static final int CTRATT_HOST_ID_128 = 1;
    static final int CTRATT_TRAFFIC_BASED_KEEP_ALIVE = 1 << 6;
    static final int CNTRLTYPE_IO = 1;
    static final int CNTRLTYPE_DISCOVERY = 2;
    static final int LPA_COMMAND_EFFECTS = 1 << 1;
    static final int LPA_EXTENDED_DATA = 1 << 2;
    /** Log page 00h lists the supported pages, the QoS page C0h among them ({@link QosLogPage}). */
    static final int LPA_SUPPORTED_LOG_PAGES = 1 << 5;
    static final int ONCS_COMPARE = 1;
    static final int ONCS_DSM = 1 << 2;
    static final int ONCS_WRITE_ZEROES = 1 << 3;
    static final int ONCS_RESERVATIONS = 1 << 5;
    static final int ONCS_VERIFY = 1 << 7;
    static final int SGLS_SUPPORTED = 1;
    static final int SGLS_OFFSET = 1 << 20;
    /** NVMET_KAS: keep-alive granularity in 100 ms units (1 s). */
    static final int KAS = 10;
    /** NVMET_MAX_NAMESPACES. */
    static final int MAX_NAMESPACES = 1024;
    /** NVMET_ERROR_LOG_SLOTS - 1, with our ring's size. */
    static final int ELPE = Controller.ERROR_LOG_ENTRIES - 1;

    /*  Identify Namespace (CNS 0x00):
     *  0 NSZE u64   8 NCAP u64   16 NUSE u64   24 NSFEAT   25 NLBAF   26 FLBAS   30 NMIC   31 RESCAP   33 DLFEAT
     *  92 ANAGRPID u32   99 NSATTR   104 NGUID[16]   120 EUI64[8]   128 LBAF0 u32 (LBADS bits 23:16)
     */
    static final int NS_NSZE = 0;
    static final int NS_NCAP = 8;
    static final int NS_NUSE = 16;
    static final int NS_NLBAF = 25;
    static final int NS_FLBAS = 26;
    static final int NS_NMIC = 30;
    static final int NS_RESCAP = 31;
    static final int NS_ANAGRPID = 92;
    static final int NS_DLFEAT = 33;
    static final int NS_NSATTR = 99;
    static final int NS_NGUID = 104;
    static final int NS_LBAF0 = 128;
    static final int NMIC_SHARED = 1;
    /** RESCAP with resv_enable: types 1-6 (bits 1-6) and IEKEY ignored on Register (bit 7), as nvmet; bit 0 (PTPL) when a state can persist. */
    static final int RESCAP_TYPES_AND_IEKEY = 0xFE;
    static final int RESCAP_PTPL = 1;
    /** DLFEAT: deallocated blocks read as zeroes (001b), and Write Zeroes honours DEAC (bit 3). */
    static final int DLFEAT_READ_ZEROES_AND_DEAC = 0x01 | 1 << 3;
    static final int NSATTR_WRITE_PROTECTED = 1;

    /*  CS-independent Identify Namespace (CNS 0x08): 0 NSFEAT  1 NMIC  4 ANAGRPID u32  8 NSATTR  14 NSTAT (bit 0 ready) */
    static final int INDEP_NMIC = 1;
    static final int INDEP_ANAGRPID = 4;
    static final int INDEP_NSATTR = 8;
    static final int INDEP_NSTAT = 14;

    /*  Namespace identification descriptor: NIDT u8, NIDL u8, reserved u16, NID[NIDL]; a zero NIDT ends the list. */
    static final int NIDT_NGUID = 2;
    static final int NIDT_UUID = 3;
    static final int NIDT_CSI = 4;

    private Identify() {
    }

    /** Runs an Identify command; the data goes to the host with the response. */
    static int execute(Controller c, CommandSlot slot) {
        ByteBuffer sqe = slot.sqe;
        if (slot.dataLength != BYTES) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
        int cdw10 = sqe.getInt(Sqe.CDW10);
        int cns = cdw10 & 0xFF;
        int csi = sqe.getInt(Sqe.CDW11) >>> 24;
        int nsid = Sqe.nsid(sqe);
        ByteBuffer out = zeroed(slot.data());
        if (c.discovery() && cns != CNS_CONTROLLER) return Status.INVALID_FIELD | Status.DNR;
        return switch (cns) {
            case CNS_CONTROLLER -> controller(c, out);
            case CNS_NAMESPACE -> namespace(c, nsid, out);
            case CNS_ACTIVE_NAMESPACES -> activeNamespaces(c, nsid, out);
            case CNS_NAMESPACE_DESCRIPTORS -> descriptors(c, nsid, out);
            case CNS_CS_NAMESPACE -> csi == CSI_NVM ? existing(c, nsid) : Status.INVALID_FIELD | Status.DNR;
            case CNS_CS_CONTROLLER -> csi == CSI_NVM ? Status.SUCCESS : Status.INVALID_FIELD | Status.DNR;
            case CNS_CS_INDEPENDENT_NAMESPACE -> independentNamespace(c, nsid, out);
            default -> Status.INVALID_FIELD | Status.DNR;
        };
    }

    private static int controller(Controller c, ByteBuffer out) {
        Subsystem s = c.subsystem;
        NvmeTarget target = c.target;
        target.lock();
        try {
            s.discovered = true;
            ascii(out, CTRL_SN, s.serial, Subsystem.SERIAL_BYTES);
            ascii(out, CTRL_MN, s.discovery ? "Linux" : s.model, Subsystem.MODEL_BYTES);
            ascii(out, CTRL_FR, s.firmware, Subsystem.FIRMWARE_BYTES);
            out.putInt(CTRL_VER, s.version);
            nqn(out, CTRL_SUBNQN, s.nqn);
        } finally {
            target.unlock();
        }
        out.putShort(CTRL_CNTLID, (short) c.cntlid);
        out.put(CTRL_KAS, (byte) KAS);
        out.putShort(CTRL_MAXCMD, (short) c.queueSizeLimit);
        int sgls = SGLS_SUPPORTED | (c.inlineDataBytes > 0 ? SGLS_OFFSET : 0);
        out.putInt(CTRL_SGLS, sgls);
        out.put(CTRL_LPA, (byte) (LPA_EXTENDED_DATA | (c.discovery() ? 0 : LPA_COMMAND_EFFECTS | LPA_SUPPORTED_LOG_PAGES)));
        out.put(CTRL_AERL, (byte) (Controller.MAX_ASYNC_EVENT_REQUESTS - 1));
        out.putInt(CTRL_CTRATT, CTRATT_HOST_ID_128 | CTRATT_TRAFFIC_BASED_KEEP_ALIVE);
        out.put(CTRL_SQES, (byte) 0x66);
        out.put(CTRL_CQES, (byte) 0x44);
        if (c.discovery()) {
            out.put(CTRL_CNTRLTYPE, (byte) CNTRLTYPE_DISCOVERY);
            out.putInt(CTRL_OAES, Controller.AEN_DISCOVERY_LOG);
            return Status.SUCCESS;
        }
        out.put(CTRL_CNTRLTYPE, (byte) CNTRLTYPE_IO);
        out.put(CTRL_RAB, (byte) 6);
        out.put(CTRL_CMIC, (byte) (CMIC_MULTI_PORT | CMIC_MULTI_CONTROLLER | CMIC_ANA_REPORTING));
        out.put(CTRL_MDTS, (byte) Sqe.MDTS);
        out.putInt(CTRL_OAES, Controller.AEN_NAMESPACE_ATTRIBUTE | Controller.AEN_ANA_CHANGE);
        out.put(CTRL_ANATT, (byte) ANATT);
        out.put(CTRL_ANACAP, (byte) ANACAP_ALL_STATES);
        out.putInt(CTRL_ANAGRPMAX, Port.MAX_ANA_GROUPS);
        out.putInt(CTRL_NANAGRPID, Port.MAX_ANA_GROUPS);
        out.put(CTRL_ACL, (byte) 3);
        out.put(CTRL_FRMW, (byte) (1 | 1 << 1));         // slot 1 read-only, one slot
        out.put(CTRL_ELPE, (byte) ELPE);
        out.putInt(CTRL_NN, MAX_NAMESPACES);
        out.putShort(CTRL_ONCS, (short) (ONCS_COMPARE | ONCS_DSM | ONCS_WRITE_ZEROES | ONCS_RESERVATIONS | ONCS_VERIFY));
        out.put(CTRL_VWC, (byte) 1);
        out.putInt(CTRL_MNAN, MAX_NAMESPACES);
        out.putInt(CTRL_IOCCSZ, (Sqe.BYTES + c.inlineDataBytes) / 16);
        out.putInt(CTRL_IORCSZ, 1);
        out.putShort(CTRL_ICDOFF, (short) 0);
        out.put(CTRL_FCATT, (byte) 0);
        out.put(CTRL_MSDBD, (byte) 1);
        out.putShort(CTRL_PSD0, (short) 0x9c4);           // 25.00 W, nvmet's power state 0
        out.putInt(CTRL_PSD0 + 4, 0x10);
        out.putInt(CTRL_PSD0 + 8, 0x4);
        return Status.SUCCESS;
    }

    /**
     * An enabled namespace; a zero structure (success) for any other valid nsid, as nvmet. NUSE
     * is 0 while its ANA group is inaccessible or lost on the admin queue's port.
     */
    private static int namespace(Controller c, int nsid, ByteBuffer out) {
        if (nsid == 0 || nsid == -1) return Status.INVALID_NAMESPACE | Status.DNR;
        ActiveNamespace ns = c.subsystem.table.find(nsid);
        if (ns == null) return Status.SUCCESS;
        out.putLong(NS_NSZE, ns.blocks());
        out.putLong(NS_NCAP, ns.blocks());
        AnaState state = c.port.anaState(ns.anaGroup());
        if (state != AnaState.INACCESSIBLE && state != AnaState.PERSISTENT_LOSS) out.putLong(NS_NUSE, ns.blocks());
        out.put(NS_NLBAF, (byte) 0);
        out.put(NS_FLBAS, (byte) 0);
        out.put(NS_NMIC, (byte) NMIC_SHARED);
        if (ns.reservation() != null) out.put(NS_RESCAP, (byte) (RESCAP_TYPES_AND_IEKEY | (c.target.reservations().persistable() ? RESCAP_PTPL : 0)));
        out.putInt(NS_ANAGRPID, ns.anaGroup());
        out.put(NS_DLFEAT, (byte) DLFEAT_READ_ZEROES_AND_DEAC);
        out.put(NS_NSATTR, (byte) (ns.readOnly() ? NSATTR_WRITE_PROTECTED : 0));
        out.put(NS_NGUID, ns.nguid());
        out.putInt(NS_LBAF0, ns.lbaShift() << 16);
        return Status.SUCCESS;
    }

    /** Up to 1024 enabled nsids greater than {@code nsid}, ascending. */
    private static int activeNamespaces(Controller c, int nsid, ByteBuffer out) {
        if (nsid == -1 || nsid == -2) return Status.INVALID_NAMESPACE | Status.DNR;
        NamespaceTable table = c.subsystem.table;
        int n = 0;
        for (int i = 0; i < table.size() && n < MAX_NAMESPACES; i++) {
            int id = table.get(i).nsid();
            if (Integer.compareUnsigned(id, nsid) > 0) out.putInt(4 * n++, id);
        }
        return Status.SUCCESS;
    }

    private static int descriptors(Controller c, int nsid, ByteBuffer out) {
        ActiveNamespace ns = c.subsystem.table.find(nsid);
        if (ns == null) return Status.INVALID_NAMESPACE | Status.DNR;
        int at = descriptor(out, 0, NIDT_UUID, ns.uuid());
        boolean nguidSet = false;
        for (byte b : ns.nguid()) nguidSet |= b != 0;
        if (nguidSet) at = descriptor(out, at, NIDT_NGUID, ns.nguid());
        descriptor(out, at, NIDT_CSI, new byte[]{CSI_NVM});
        return Status.SUCCESS;
    }

    private static int descriptor(ByteBuffer out, int at, int type, byte[] id) {
        out.put(at, (byte) type);
        out.put(at + 1, (byte) id.length);
        out.put(at + 4, id);
        return at + 4 + id.length;
    }

    private static int independentNamespace(Controller c, int nsid, ByteBuffer out) {
        if (nsid == 0 || nsid == -1) return Status.INVALID_NAMESPACE | Status.DNR;
        ActiveNamespace ns = c.subsystem.table.find(nsid);
        if (ns == null) return Status.SUCCESS;
        out.put(INDEP_NMIC, (byte) NMIC_SHARED);
        out.putInt(INDEP_ANAGRPID, ns.anaGroup());
        out.put(INDEP_NSATTR, (byte) (ns.readOnly() ? NSATTR_WRITE_PROTECTED : 0));
        out.put(INDEP_NSTAT, (byte) 1);
        return Status.SUCCESS;
    }

    /** The NVM command set specific namespace structure: all zero (no PI, no special formats), for enabled namespaces. */
    private static int existing(Controller c, int nsid) {
        return c.subsystem.table.find(nsid) == null ? Status.INVALID_NAMESPACE | Status.DNR : Status.SUCCESS;
    }

    static ByteBuffer zeroed(ByteBuffer b) {
        int n = b.limit();
        int i = 0;
        for (; i + 8 <= n; i += 8) b.putLong(i, 0);
        for (; i < n; i++) b.put(i, (byte) 0);
        return b;
    }

    /** A space-padded ASCII field, as SN/MN/FR are. */
    static void ascii(ByteBuffer out, int at, String value, int width) {
        byte[] b = value.getBytes(StandardCharsets.US_ASCII);
        for (int i = 0; i < width; i++) out.put(at + i, i < b.length ? b[i] : (byte) ' ');
    }

    /** A NUL-padded NQN field of 256 bytes. */
    static void nqn(ByteBuffer out, int at, String value) {
        byte[] b = value.getBytes(StandardCharsets.UTF_8);
        out.put(at, b, 0, Math.min(b.length, 255));
    }
}
