package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.reservation.ReservationState;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * {@code subsystems/<nqn>}: an NVM subsystem (or the discovery subsystem) with its
 * attributes, allowed hosts, namespaces and live controllers. Configuration fields are guarded
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
    public final List<Controller> controllers = new ArrayList<>();
    /**
     * Host ID → the host NQN it is bound to here (docs/decisions.md, "A Host ID belongs to one
     * host NQN"): set by the first admin Connect that used the Host ID, kept while a controller
     * of that NQN with that Host ID lives or the Host ID is a registrant of a reservation on one
     * of the subsystem's namespaces. In memory: a restart forgets it. Lock held.
     */
    private final Map<HostIdKey, String> hostIdOwners = new HashMap<>();

    private record HostIdKey(long high, long low) {
    }

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
        if (cntlidMin == 1 && cntlidMax == CNTLID_MAX) {
            return "attr_cntlid_min..attr_cntlid_max is the whole range 1.." + CNTLID_MAX + " (expected: a range of its own on every node, e.g. 1..1000 and 1001..2000)";
        }
        return null;
    }

    /**
     * The host NQN the Host ID ({@code high}, {@code low}: its bytes 0-7 and 8-15, big-endian)
     * is bound to here, when that is not {@code hostNqn} and the binding still holds; else null,
     * and an admin Connect of {@code hostNqn} with this Host ID may go ahead. The Host ID 0 is
     * a host's way of saying it has none: it binds nothing (docs/reservations.md). Lock held.
     */
    public String hostIdBoundElsewhere(long high, long low, String hostNqn) {
        if (high == 0 && low == 0) return null;
        String owner = hostIdOwners.get(new HostIdKey(high, low));
        if (owner == null || owner.equals(hostNqn) || !hostIdHeld(high, low, owner)) return null;
        return owner;
    }

    /** An admin Connect of {@code c} succeeded: its Host ID is bound to its NQN from now on, while held. Lock held. */
    public void bindHostId(Controller c) {
        hostIdOwners.put(new HostIdKey(c.hostIdHigh, c.hostIdLow), c.hostNqn);
    }

    /**
     * {@code c} is no longer one of {@link #controllers}: its Host ID's binding goes with it
     * unless it still holds (another controller of the NQN, a registration), so that the map
     * holds only live hosts' and registrants' Host IDs. Lock held.
     */
    public void releaseHostId(Controller c) {
        HostIdKey key = new HostIdKey(c.hostIdHigh, c.hostIdLow);
        String owner = hostIdOwners.get(key);
        if (owner != null && !hostIdHeld(c.hostIdHigh, c.hostIdLow, owner)) hostIdOwners.remove(key);
    }

    /** A controller of {@code nqn} with this Host ID lives, or the Host ID is registered on an enabled namespace (this node's copy). Lock held. */
    private boolean hostIdHeld(long high, long low, String nqn) {
        for (Controller c : controllers) if (c.hostIdHigh == high && c.hostIdLow == low && c.hostNqn.equals(nqn)) return true;
        for (Namespace ns : namespaces.values()) {
            ActiveNamespace active = ns.active;
            ReservationState state = active == null || active.reservation() == null ? null : active.reservation().state();
            if (state != null && state.registrant(high, low) != null) return true;
        }
        return false;
    }

    /** The live controller with this id, or null. */
    public Controller controller(int cntlid) {
        for (Controller c : controllers) if (c.cntlid == cntlid) return c;
        return null;
    }

    /** A free controller id in [cntlidMin, cntlidMax], or -1. */
    public int allocateCntlid() {
        for (int id = cntlidMin; id <= cntlidMax; id++) if (controller(id) == null) return id;
        return -1;
    }
}
