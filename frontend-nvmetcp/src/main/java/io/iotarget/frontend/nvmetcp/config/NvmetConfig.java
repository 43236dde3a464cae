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

    /** Takes the configuration lock. Never on the IO path; Connect, Identify and log pages take it on the loops. */
    public void lock() {
        lock.lock();
    }

    public void unlock() {
        lock.unlock();
    }
}
