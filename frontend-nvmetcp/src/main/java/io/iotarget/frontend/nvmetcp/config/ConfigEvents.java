package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.transport.Listener;

import java.io.IOException;
import java.net.InetSocketAddress;

/**
 * What the configuration tells the target when it changes, so that the target's controllers and
 * connections, which the configuration never sees, follow it (nvmet's configfs handlers calling
 * into core.c). Implemented by the target; every event is sent under the configuration lock, by
 * the thread that changed the configuration.
 */
public interface ConfigEvents {
    /** What a host may discover changed (a port's or a subsystem's links, allow_any_host, the discovery NQN). */
    void discoveryChanged();

    /** An ANA state or a namespace's ANA group was written: nvmet_ana_chgcnt moves on. */
    void anaChanged();

    /** nvmet_port_send_ana_event: the controllers that came in through {@code port} hear of an ANA change. */
    void portAnaChanged(Port port);

    /** A namespace of {@code subsystem} moved to another ANA group: its controllers hear of an ANA change. */
    void subsystemAnaChanged(Subsystem subsystem);

    /** Namespace {@code nsid} was enabled, disabled or resized: the subsystem's controllers' hosts are told (AEN, changed namespace list). */
    void namespaceChanged(Subsystem subsystem, int nsid);

    /**
     * The controllers of {@code subsystem} (only those that came in through {@code port}, unless
     * it is null) fail (CSTS.CFS, every queue closed) and their hosts reconnect: the subsystem
     * was removed, unlinked from the port, or its attr_qid_max changed.
     */
    void controllersFail(Subsystem subsystem, Port port);

    /** {@code port} listens from now on at {@code address}; its connections are the target's. */
    Listener listen(Port port, InetSocketAddress address) throws IOException;

    /** {@code port} stopped listening: every connection that came in through it closes. */
    void stopped(Port port);
}
