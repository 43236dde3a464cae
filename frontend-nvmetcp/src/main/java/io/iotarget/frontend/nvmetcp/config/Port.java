package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.frontend.nvmetcp.wire.AnaState;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.transport.Listener;

import java.io.IOException;
import java.net.BindException;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Arrays;
import java.util.Collections;
import java.util.Set;
import java.util.TreeSet;

/**
 * {@code ports/<portid>}: a transport address and the subsystems reachable through it. As in
 * nvmet, the port listens while at least one subsystem is linked, and its address is fixed
 * while it listens. Configuration fields are guarded by the target's configuration lock; its
 * connections are accepted and carried by the target's transport.
 */
public final class Port {
    /** NVMET_TCP_DEF_INLINE_DATA_SIZE: 4 pages of in-capsule data per IO command. */
    static final int DEFAULT_INLINE_DATA_BYTES = 16384;
    /** NVMET_QUEUE_SIZE: CAP.MQES + 1 when the port does not say. */
    public static final int DEFAULT_MAX_QUEUE_SIZE = 1024;
    /** nvmet's transport addresses: NVMF_TRTYPE_TCP, NVMF_ADDR_FAMILY_IP4/IP6. */
    public static final int TRTYPE_TCP = 3;
    static final int ADRFAM_IPV4 = 1;
    static final int ADRFAM_IPV6 = 2;
    /**
     * TREQ values: bits 1:0 secure channel, bit 2 "SQ flow control disable supported" (always
     * set, as nvmet does). "required" only with TLS ({@link #tls}).
     */
    static final int TREQ_NOT_SPECIFIED = 0;
    public static final int TREQ_REQUIRED = 1;
    static final int TREQ_NOT_REQUIRED = 2;
    public static final int TREQ_DISABLE_SQFLOW = 4;
    /** NVMET_MAX_ANAGRPS: ANA group ids are 1..128. */
    public static final int MAX_ANA_GROUPS = 128;
    /** NVMET_DEFAULT_ANA_GRPID: the group every port has and every namespace starts in. */
    public static final int DEFAULT_ANA_GROUP = 1;

    public final int id;
    String trtype = "";
    String adrfam = "";
    public String traddr = "";
    public String trsvcid = "";
    public int treq = TREQ_NOT_SPECIFIED;
    /** addr_tsas tls1.3: hosts connect over TLS 1.3 with a pre-shared key (only, when {@link #treq} is required). */
    public boolean tls;
    /** -1 = the transport's choice, as nvmet's param_* attributes. */
    int inlineDataSize = -1;
    int maxQueueSize = -1;
    /** subsystems/: link name → subsystem. */
    public final Map<String, Subsystem> subsystems = new LinkedHashMap<>();
    /** ana_groups/: the groups made on this port; the default group always. */
    final TreeSet<Integer> anaGroups = new TreeSet<>(Set.of(DEFAULT_ANA_GROUP));
    /**
     * The state of each group id on this port, as nvmet's {@code port->ana_state}: optimized for
     * the default group, inaccessible for every other until its directory's state is written.
     * Replaced whole under the configuration lock; read by the IO path.
     */
    private volatile AnaState[] anaStates = initialAnaStates();

    private Listener listener;

    Port(int id) {
        this.id = id;
    }

    private static AnaState[] initialAnaStates() {
        AnaState[] states = new AnaState[MAX_ANA_GROUPS + 1];
        Arrays.fill(states, AnaState.INACCESSIBLE);
        states[DEFAULT_ANA_GROUP] = AnaState.OPTIMIZED;
        return states;
    }

    /** The state of group {@code grpid} (1..128) on this port. Any thread. */
    public AnaState anaState(int grpid) {
        return anaStates[grpid];
    }

    /** The ids of ana_groups/ (the default group included), ascending. Configuration lock held. */
    public Set<Integer> anaGroupIds() {
        return Collections.unmodifiableSet(anaGroups);
    }

    /** Configuration lock held. */
    void anaState(int grpid, AnaState state) {
        AnaState[] next = anaStates.clone();
        next[grpid] = state;
        anaStates = next;
    }

    public boolean listening() {
        return listener != null;
    }

    public int inlineDataBytes() {
        return inlineDataSize < 0 ? DEFAULT_INLINE_DATA_BYTES : inlineDataSize;
    }

    public int queueSizeLimit() {
        return maxQueueSize <= 0 ? DEFAULT_MAX_QUEUE_SIZE : Math.min(maxQueueSize, DEFAULT_MAX_QUEUE_SIZE);
    }

    public int adrfamCode() {
        return adrfam.equals("ipv6") ? ADRFAM_IPV6 : ADRFAM_IPV4;
    }

    public boolean links(Subsystem s) {
        return subsystems.containsValue(s);
    }

    /** Binds the address and starts accepting; connections go to the target ({@link ConfigEvents#listen}). */
    void listen(ConfigEvents events) throws ControlException {
        if (!trtype.equals("tcp")) throw new ControlException(Errno.EINVAL, "ports/" + id + ": addr_trtype=" + trtype + " (expected: tcp before linking a subsystem)");
        if (adrfam.isEmpty()) throw new ControlException(Errno.EINVAL, "ports/" + id + ": addr_adrfam is not set (expected: ipv4 or ipv6)");
        InetAddress address;
        try {
            address = InetAddress.ofLiteral(traddr);
        } catch (IllegalArgumentException e) {
            throw new ControlException(Errno.EINVAL, "ports/" + id + ": addr_traddr=" + traddr + " (expected: an " + adrfam + " address literal)");
        }
        if (adrfam.equals("ipv4") != (address instanceof Inet4Address) || adrfam.equals("ipv6") != (address instanceof Inet6Address)) {
            throw new ControlException(Errno.EINVAL, "ports/" + id + ": addr_traddr=" + traddr + " is not an " + adrfam + " address");
        }
        int portNumber;
        try {
            portNumber = Integer.parseInt(trsvcid);
        } catch (NumberFormatException e) {
            portNumber = -1;
        }
        if (portNumber < 0 || portNumber > 65535) {
            throw new ControlException(Errno.EINVAL, "ports/" + id + ": addr_trsvcid=" + trsvcid + " (expected: a TCP port 0..65535)");
        }
        Listener bound;
        try {
            bound = events.listen(this, new InetSocketAddress(address, portNumber));
        } catch (IOException e) {
            Errno errno = e.getCause() instanceof BindException ? Errno.EADDRINUSE : Errno.EINVAL;
            throw new ControlException(errno, "ports/" + id + ": cannot listen on " + traddr + ":" + trsvcid + ": "
                                              + (e.getCause() != null ? e.getCause().getMessage() : e.getMessage()));
        }
        listener = bound;
    }

    /** Stops listening; the connections that came in through the port are the target's to close ({@link ConfigEvents#stopped}). */
    public void stop() {
        if (listener != null) listener.close();
        listener = null;
    }

}
