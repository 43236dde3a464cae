package io.iotarget.frontend.nvmetcp.config;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The root of nvmet's configfs as data: hosts, subsystems, ports and the discovery subsystem,
 * with the one configuration lock that guards them. {@link NvmetTree} edits it and tells the
 * target what changed ({@link ConfigEvents}); the target (package root) reads it under the lock
 * at Connect, Identify and the log pages. It holds no controller and no connection: those are
 * the target's.
 */
public final class NvmetConfig {
    public final Map<String, Host> hosts = new TreeMap<>();
    public final Map<String, Subsystem> subsystems = new TreeMap<>();
    public final Map<Integer, Port> ports = new TreeMap<>();
    public final Subsystem discovery = new Subsystem(Subsystem.WELL_KNOWN_DISCOVERY_NQN, true);
    private final ReentrantLock lock = new ReentrantLock();
    /**
     * The controller ids this node's gateway group gave it ({@code cluster.group}, docs/ha.md):
     * what a shared subsystem whose attr_cntlid_min..attr_cntlid_max is the whole range uses.
     * Both 0 without a group. Written under the lock before any namespace enables.
     */
    int gatewayCntlidMin;
    int gatewayCntlidMax;

    /** Sets the gateway group's controller-ID range (see the fields). Lock held. */
    public void gatewayCntlids(int min, int max) {
        if (min < 1 || max < min || max > Subsystem.CNTLID_MAX) throw new IllegalArgumentException("controller ids " + min + ".." + max);
        gatewayCntlidMin = min;
        gatewayCntlidMax = max;
    }

    /** Takes the configuration lock. Never on the IO path; Connect, Identify and log pages take it on the loops. */
    public void lock() {
        lock.lock();
    }

    public void unlock() {
        lock.unlock();
    }
}
