package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.frontend.nvmetcp.reservation.ReservationState;
import java.util.ArrayList;
import java.util.function.IntPredicate;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code subsystems/<nqn>}: an NVM subsystem (or the discovery subsystem) with its
 * attributes, allowed hosts and namespaces (its live controllers are the target's). Configuration fields are guarded
 * by the target's configuration lock; the IO path reads only {@link #table}.
 */
public final class Subsystem {
    /** The well-known discovery NQN every discovery subsystem also answers to. */
    public static final String WELL_KNOWN_DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery";
    /** NVMF_NQN_SIZE - 1: the longest NQN. */
    static final int MAX_NQN_BYTES = 223;
    public static final int SERIAL_BYTES = 20;
    public static final int MODEL_BYTES = 40;
    public static final int FIRMWARE_BYTES = 8;
    /** NVME_CNTLID_MAX: the highest controller id, nvmet's default attr_cntlid_max. */
    static final int CNTLID_MAX = 0xFFEF;
    /** NVMET_NR_QUEUES: the most queues (admin + IO) a controller may have. */
    static final int MAX_QID_LIMIT = 128;
    /** 1.3.0, nvmet's default before 6.x; enough for the namespace descriptor list the host uses. */
    static final int DEFAULT_VERSION = version(1, 3, 0);

    public String nqn;
    public final boolean discovery;
    public boolean allowAnyHost;
    /** allowed_hosts: link name → host. */
    public final Map<String, Host> allowedHosts = new LinkedHashMap<>();
    public String serial;
    /** attr_serial was written: the random default would differ on every node. */
    boolean serialWritten;
    public String model = "iotarget";
    public String firmware = "0.1.0";
    public int version = DEFAULT_VERSION;
    int cntlidMin = 1;
    int cntlidMax = CNTLID_MAX;
    /** The target's configuration (its gateway group's controller-ID range); null for the discovery subsystem. */
    NvmetConfig config;
    /**
     * iotarget's {@code shared}: other nodes serve this subsystem too (the same NQN, serial and
     * namespace ids over one backend), so its namespaces enable only where that can be safe
     * ({@link #unshareable}, {@link Namespace#unshareable}).
     */
    boolean shared;
    public int maxQid = MAX_QID_LIMIT;
    /** A host has identified a controller: serial, model, firmware and version are fixed from now on. */
    public boolean discovered;
    public final TreeMap<Integer, Namespace> namespaces = new TreeMap<>(Integer::compareUnsigned);
    /** The enabled namespaces, for the IO path. */
    public volatile NamespaceTable table = NamespaceTable.EMPTY;

    public Subsystem(String nqn, boolean discovery) {
        this.nqn = nqn;
        this.discovery = discovery;
        this.allowAnyHost = discovery;
        this.serial = Long.toHexString(ThreadLocalRandom.current().nextLong() >>> 4);
    }

    public static int version(int major, int minor, int tertiary) {
        return major << 16 | minor << 8 | tertiary;
    }

    public boolean allows(String hostNqn) {
        if (allowAnyHost) return true;
        for (Host h : allowedHosts.values()) if (h.nqn.equals(hostNqn)) return true;
        return false;
    }

    /** Rebuilds the IO path's table from the enabled namespaces. */
    public void publishTable() {
        List<ActiveNamespace> active = new ArrayList<>();
        for (Namespace ns : namespaces.values()) if (ns.active != null) active.add(ns.active);
        table = NamespaceTable.of(active);
    }

    /** The ANA group of each namespace, enabled or not (nvmet counts a group in use from the namespace's mkdir). Lock held. */
    public int[] anaGroupIds() {
        return namespaces.values().stream().mapToInt(ns -> ns.anaGroup).toArray();
    }

    /**
     * Why this shared subsystem cannot be served from several nodes as one, or null: a serial
     * another node cannot know, or controller ids every node would hand out alike (the host
     * refuses a second controller with a cntlid it already has).
     */
    String unshareable() {
        if (!serialWritten) return "attr_serial is not set (expected: the same attr_serial on every node)";
        if (usesGatewayCntlids()) return null;
        if (cntlidMin == 1 && cntlidMax == CNTLID_MAX) {
            return "attr_cntlid_min..attr_cntlid_max is the whole range 1.." + CNTLID_MAX + " (expected: a range of its own on every node, e.g. 1..1000 and 1001..2000)";
        }
        return null;
    }

    /** The Host ID is registered on one of the enabled namespaces (this node's copy of its reservation state). Lock held. */
    public boolean hostIdRegistered(long high, long low) {
        for (Namespace ns : namespaces.values()) {
            ActiveNamespace active = ns.active;
            ReservationState state = active == null || active.reservation() == null ? null : active.reservation().state();
            if (state != null && state.registrant(high, low) != null) return true;
        }
        return false;
    }

    /** A controller id in [attr_cntlid_min, attr_cntlid_max] that {@code taken} says is free, or -1. Lock held. */
    public int allocateCntlid(IntPredicate taken) {
        boolean gateway = usesGatewayCntlids();
        int min = gateway ? config.gatewayCntlidMin : cntlidMin;
        int max = gateway ? config.gatewayCntlidMax : cntlidMax;
        for (int id = min; id <= max; id++) if (!taken.test(id)) return id;
        return -1;
    }

    /**
     * Whether this subsystem's controllers take their ids from the node's gateway group range: it is
     * shared, its own attr_cntlid_min..attr_cntlid_max is the whole range (not written), and the node
     * is in a group ({@code cluster.group}). Lock held.
     */
    public boolean usesGatewayCntlids() {
        return shared && cntlidMin == 1 && cntlidMax == CNTLID_MAX && config != null && config.gatewayCntlidMin != 0;
    }
}
