package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.config.Subsystem;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The live controllers of one subsystem on this node (nvmet's {@code subsys->ctrls}) and the
 * Host IDs they bind: runtime state the target keeps beside the configuration's
 * {@link Subsystem}, which knows nothing of controllers. Guarded by the configuration lock.
 */
public final class SubsystemControllers {
    private final Subsystem subsystem;
    private final List<Controller> controllers = new ArrayList<>();
    /**
     * Host ID → the host NQN it is bound to here (docs/decisions.md, "A Host ID belongs to one
     * host NQN"): set by the first admin Connect that used the Host ID, kept while a controller
     * of that NQN with that Host ID lives or the Host ID is a registrant of a reservation on one
     * of the subsystem's namespaces. In memory: a restart forgets it.
     */
    private final Map<HostIdKey, String> hostIdOwners = new HashMap<>();

    private record HostIdKey(long high, long low) {
    }

    SubsystemControllers(Subsystem subsystem) {
        this.subsystem = subsystem;
    }

    /** The controllers, in the order they were made. Lock held; the caller copies before anything may change the list. */
    public List<Controller> all() {
        return controllers;
    }

    public boolean isEmpty() {
        return controllers.isEmpty();
    }

    /** The live controller with this id, or null. */
    public Controller find(int cntlid) {
        for (Controller c : controllers) if (c.cntlid == cntlid) return c;
        return null;
    }

    /** A free controller id in the subsystem's [attr_cntlid_min, attr_cntlid_max], or -1. */
    public int allocateCntlid() {
        return subsystem.allocateCntlid(id -> find(id) != null);
    }

    /** An admin Connect made {@code c}. */
    public void add(Controller c) {
        controllers.add(c);
    }

    /** {@code c} is gone (its admin queue closed, or its Connect failed): so is its Host ID's binding, unless that still holds. */
    public void remove(Controller c) {
        controllers.remove(c);
        releaseHostId(c);
    }

    /**
     * The host NQN the Host ID ({@code high}, {@code low}: its bytes 0-7 and 8-15, big-endian)
     * is bound to here, when that is not {@code hostNqn} and the binding still holds; else null,
     * and an admin Connect of {@code hostNqn} with this Host ID may go ahead. The Host ID 0 is
     * a host's way of saying it has none: it binds nothing (docs/reservations.md).
     */
    public String hostIdBoundElsewhere(long high, long low, String hostNqn) {
        if (high == 0 && low == 0) return null;
        String owner = hostIdOwners.get(new HostIdKey(high, low));
        if (owner == null || owner.equals(hostNqn) || !hostIdHeld(high, low, owner)) return null;
        return owner;
    }

    /** An admin Connect of {@code c} succeeded: its Host ID is bound to its NQN from now on, while held. */
    public void bindHostId(Controller c) {
        hostIdOwners.put(new HostIdKey(c.hostIdHigh, c.hostIdLow), c.hostNqn);
    }

    /**
     * {@code c} is no longer one of the controllers: its Host ID's binding goes with it unless
     * it still holds (another controller of the NQN, a registration), so that the map holds only
     * live hosts' and registrants' Host IDs.
     */
    private void releaseHostId(Controller c) {
        HostIdKey key = new HostIdKey(c.hostIdHigh, c.hostIdLow);
        String owner = hostIdOwners.get(key);
        if (owner != null && !hostIdHeld(c.hostIdHigh, c.hostIdLow, owner)) hostIdOwners.remove(key);
    }

    /** A controller of {@code nqn} with this Host ID lives, or the Host ID is registered on an enabled namespace (this node's copy). */
    private boolean hostIdHeld(long high, long low, String nqn) {
        for (Controller c : controllers) if (c.hostIdHigh == high && c.hostIdLow == low && c.hostNqn.equals(nqn)) return true;
        return subsystem.hostIdRegistered(high, low);
    }
}
