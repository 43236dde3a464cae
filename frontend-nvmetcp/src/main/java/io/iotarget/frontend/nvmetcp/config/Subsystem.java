package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.frontend.nvmetcp.Controller;
import java.util.ArrayList;
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
    public String model = "iotarget";
    public String firmware = "0.1.0";
    public int version = DEFAULT_VERSION;
    int cntlidMin = 1;
    int cntlidMax = 0xFFEF;
    public int maxQid = MAX_QID_LIMIT;
    /** A host has identified a controller: serial, model, firmware and version are fixed from now on. */
    public boolean discovered;
    public final TreeMap<Integer, Namespace> namespaces = new TreeMap<>(Integer::compareUnsigned);
    public final List<Controller> controllers = new ArrayList<>();

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
