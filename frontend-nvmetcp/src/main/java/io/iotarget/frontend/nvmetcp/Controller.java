package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.wire.Status;

import io.iotarget.frontend.nvmetcp.config.Port;

import io.iotarget.frontend.nvmetcp.config.Subsystem;

import io.iotarget.frontend.nvmetcp.auth.DhChapCredentials;
import io.iotarget.frontend.nvmetcp.config.ActiveNamespace;
import io.iotarget.frontend.nvmetcp.config.Host;
import io.iotarget.frontend.nvmetcp.reservation.NoticeLog;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.HostIdentity;
import io.iotarget.model.ControlException;
import io.iotarget.model.IoGroup;
import io.iotarget.model.LogText;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A dynamic controller: created by an admin-queue Connect for one (subsystem, host, port),
 * gone when its admin queue closes. Holds the registers (CAP, VS, CC, CSTS), the queue table,
 * keep-alive, asynchronous events (AER slots, the changed-namespace list) and the error log.
 *
 * <p>Threads: the registers are read by any queue (volatile) and written under {@link #lock},
 * as is everything else. The lock is taken by the queues' readers, the keep-alive timer,
 * engine completion threads (error log) and the configuration thread, always after the
 * configuration lock, never before it.
 */
public final class Controller {
    // CC fields (NVMe base spec, Controller Configuration).
    static final int CC_ENABLE = 1;
    static final int CC_CSS_SHIFT = 4;
    static final int CC_MPS_SHIFT = 7;
    static final int CC_AMS_SHIFT = 11;
    static final int CC_SHN_SHIFT = 14;
    static final int CC_IOSQES_SHIFT = 16;
    static final int CC_IOCQES_SHIFT = 20;
    // CSTS bits.
    static final int CSTS_READY = 1;
    static final int CSTS_FATAL = 1 << 1;
    static final int CSTS_SHUTDOWN_COMPLETE = 2 << 2;
    // Property offsets.
    public static final int PROPERTY_CAP = 0x00;
    public static final int PROPERTY_VS = 0x08;
    public static final int PROPERTY_CC = 0x14;
    public static final int PROPERTY_CSTS = 0x1C;

    /** Asynchronous event configuration bits (Set Features 0x0B) this controller can raise. */
    static final int AEN_SMART_WARNINGS = 0x1F;
    public static final int AEN_NAMESPACE_ATTRIBUTE = 1 << 8;
    public static final int AEN_ANA_CHANGE = 1 << 11;
    public static final int AEN_DISCOVERY_LOG = 1 << 31;
    /** AER completion DW0: type 2 (notice) | info << 8 | log page << 16. */
    static final int EVENT_NAMESPACE_CHANGED = 0x02 | 0x00 << 8 | 0x04 << 16;
    static final int EVENT_ANA_CHANGED = 0x02 | 0x03 << 8 | 0x0C << 16;
    static final int EVENT_DISCOVERY_CHANGED = 0x02 | 0xF0 << 8 | 0x70 << 16;
    /** Type 6 (I/O command specific), info 0 (reservation log page available), log page 0x80; never masked by AEN config, as in nvmet. */
    static final int EVENT_RESERVATION = 0x06 | 0x00 << 8 | 0x80 << 16;
    /** NVMET_ASYNC_EVENTS: outstanding AERs per controller. */
    public static final int MAX_ASYNC_EVENT_REQUESTS = 4;
    /** NVME_MAX_CHANGED_NAMESPACES. */
    static final int CHANGED_NAMESPACES_MAX = 1024;
    public static final int ERROR_LOG_ENTRIES = 16;
    public static final int ERROR_LOG_ENTRY_BYTES = 64;
    /** NVMET_DISC_KATO_MS: discovery controllers that asked for no keep-alive still go after 2 minutes of silence. */
    static final int DISCOVERY_KATO_MS = 120_000;
    /** CAP.TO in 500 ms units: 7.5 s, nvmet's value. */
    private static final long CAP_TIMEOUT = 15;

    public final NvmeTarget target;
    public final Subsystem subsystem;
    public final Port port;
    public final int cntlid;
    public final String hostNqn;
    public final byte[] hostId;
    /** The host identifier as two big-endian longs: who this controller is to reservations. */
    public final long hostIdHigh;
    public final long hostIdLow;
    /** CAP.MQES + 1: the largest queue a host may create. */
    public final int queueSizeLimit;
    public final int inlineDataBytes;
    public final long cap;


    final ReentrantLock lock = new ReentrantLock();
    /**
     * The host's group ({@code hosts/NQN/cgroup}) as it was at the admin Connect, bound until
     * the controller goes; null: none.
     */
    private final Group hostGroup;
    /**
     * Under {@code cgroup_per_host}: by the group that would pay, the host's child of it, bound
     * until the controller goes. Read lock-free by the queues; filled under {@link #lock}.
     */
    private final ConcurrentHashMap<IoGroup, Group> hostChildren = new ConcurrentHashMap<>();
    /** The groups were let go: no child is bound any more (lock). */
    private boolean groupsReleased;
    /** A host group could not be had; logged once per controller, within the target's limit (lock). */
    private boolean hostGroupFailureLogged;
    /**
     * The host's DH-HMAC-CHAP credentials, null when its queues need not authenticate: read at
     * the admin Connect, re-read by a Negotiate on the admin queue (re-authentication).
     */
    private volatile DhChapCredentials credentials;
    private final Queue[] queues;
    private volatile int cc;
    private volatile int csts;
    /** A command arrived on some queue since the last keep-alive tick (traffic-based keep-alive). */
    private volatile boolean traffic = true;
    /** KATO as the host sent it: an unsigned 32-bit count of milliseconds (up to about 50 days). */
    private long katoMs;
    private ScheduledFuture<?> keepAlive;
    private boolean dead;

    private int aenConfig;
    private final CommandSlot[] asyncEventRequests = new CommandSlot[MAX_ASYNC_EVENT_REQUESTS];
    private int asyncEventRequestCount;
    private final ArrayDeque<Integer> pendingEvents = new ArrayDeque<>();
    /** Event kinds delivered and not yet acknowledged by reading their log page without RAE. */
    private boolean namespaceEventMasked;
    private boolean anaEventMasked;
    private boolean discoveryEventMasked;
    private boolean reservationEventMasked;
    private final NoticeLog reservationNotices = new NoticeLog();
    private final int[] changedNamespaces = new int[CHANGED_NAMESPACES_MAX];
    private int changedCount;
    private boolean changedOverflow;

    private final ByteBuffer errorLog = ByteBuffer.allocate(ERROR_LOG_ENTRIES * ERROR_LOG_ENTRY_BYTES).order(java.nio.ByteOrder.LITTLE_ENDIAN);
    private long errorCount;

    /** Configuration lock held. */
    public Controller(NvmeTarget target, Subsystem subsystem, Port port, int cntlid, String hostNqn, byte[] hostId, long katoMs) {
        this.target = target;
        this.subsystem = subsystem;
        this.port = port;
        this.cntlid = cntlid;
        this.hostNqn = hostNqn;
        this.hostId = hostId;
        ByteBuffer id = ByteBuffer.wrap(hostId);
        this.hostIdHigh = id.getLong(0);
        this.hostIdLow = id.getLong(8);
        this.queueSizeLimit = port.queueSizeLimit();
        this.inlineDataBytes = port.inlineDataBytes();
        this.queues = new Queue[subsystem.maxQid + 1];
        this.katoMs = katoMs == 0 && subsystem.discovery ? DISCOVERY_KATO_MS : katoMs;
        this.cap = (queueSizeLimit - 1) | 1L << 16 | CAP_TIMEOUT << 24 | 1L << 37;
        this.credentials = target.credentials(subsystem, hostNqn);
        this.hostGroup = bindHostGroup(target, hostNqn);
        for (int i = 0; i < subsystem.table.size(); i++) payer(subsystem.table.get(i));
    }

    /** The host entry's group, bound for this controller; null when it names none. Configuration lock held. */
    private static Group bindHostGroup(NvmeTarget target, String hostNqn) {
        Host h = target.hosts.get(hostNqn);
        Group g = h == null ? null : h.ioGroup();
        if (g == null) return null;
        try {
            target.engine().controller().bind(g);
            return g;
        } catch (ControlException removed) {
            return null;                                // the entry holds its group: not reached
        }
    }

    /**
     * Who pays for this controller's IO on {@code ns}, in DESIGN's association order: the
     * namespace's own group, else the host's ({@code hosts/NQN/cgroup}), else the root; under
     * {@code cgroup_per_host}, the child of that group named after the host NQN ({@code nqn:NQN}), made on first
     * use (at the admin Connect for the namespaces enabled then) and bound until the controller
     * goes. Null when that child cannot be had (a name no group may take, cgroup.max.descendants
     * reached): the command fails. Any queue thread; lock-free once the child is known.
     */
    public IoGroup payer(ActiveNamespace ns) {
        IoGroup base = ns.bound() || hostGroup == null ? ns.group() : hostGroup;
        if (!ns.perHost()) return base;
        Group child = hostChildren.get(base);
        return child != null ? child : bindHostChild(base);
    }

    private IoGroup bindHostChild(IoGroup base) {
        lock.lock();
        try {
            if (groupsReleased) return base;           // a command racing the controller's end: its parent pays, nothing stays bound
            Group child = hostChildren.get(base);
            if (child != null) return child;
            child = target.engine().bindHostGroup(Group.of(base), HostIdentity.nqn(hostNqn));
            hostChildren.put(base, child);
            return child;
        } catch (ControlException e) {
            if (!hostGroupFailureLogged) {
                hostGroupFailureLogged = true;
                target.hostGroupRefused("host " + LogText.clip(hostNqn) + " cannot have its own group under " + base.path()
                                        + " (cgroup_per_host): its IO commands fail: " + LogText.clip(e.getMessage()));
            }
            return null;
        } finally {
            lock.unlock();
        }
    }

    /** The controller went: lets go of the host's group and its children (they stay, ordinary groups). Lock held. */
    private void releaseGroups() {
        groupsReleased = true;
        for (Group child : hostChildren.values()) target.engine().releaseHostGroup(child);
        hostChildren.clear();
        if (hostGroup != null) target.engine().controller().unbind(hostGroup);
    }

    DhChapCredentials credentials() {
        return credentials;
    }

    /** Re-reads the host's credentials from the configuration (takes the configuration lock). */
    DhChapCredentials refreshCredentials() {
        target.lock();
        try {
            credentials = target.credentials(subsystem, hostNqn);
            return credentials;
        } finally {
            target.unlock();
        }
    }

    public boolean discovery() {
        return subsystem.discovery;
    }

    public int maxQid() {
        return queues.length - 1;
    }

    // ---------------------------------------------------------------- queues

    /** Installs a connected queue; a status if the queue id is taken or the controller is gone. */
    public int attach(int qid, Queue queue) {
        lock.lock();
        try {
            if (dead) return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
            if (queues[qid] != null) return Status.CONNECT_CONTROLLER_BUSY | Status.DNR;
            queues[qid] = queue;
            if (qid == 0) startKeepAlive();
            return Status.SUCCESS;
        } finally {
            lock.unlock();
        }
    }

    /** A queue's connection closed. When it was the admin queue, the controller goes with all its queues. */
    void detach(int qid, Queue queue) {
        lock.lock();
        try {
            if (queues[qid] != queue) return;
            queues[qid] = null;
            if (qid != 0) return;
            dead = true;
            if (keepAlive != null) keepAlive.cancel(false);
            for (Queue c : queues) if (c != null) c.close();
            releaseGroups();
        } finally {
            lock.unlock();
        }
        target.controllerGone(this);
    }

    /**
     * A fatal error (keep-alive timeout, configuration change): CSTS.CFS is set and every queue
     * is closed, as nvmet's {@code nvmet_ctrl_fatal_error}; the host reconnects.
     */
    public void fatal() {
        lock.lock();
        try {
            csts |= CSTS_FATAL;
            for (Queue c : queues) if (c != null) c.close();
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- keep-alive

    /** Any queue, per command: cheap unless the flag is clear. */
    void noteTraffic() {
        if (!traffic) traffic = true;
    }

    public long katoMs() {
        lock.lock();
        try {
            return katoMs;
        } finally {
            lock.unlock();
        }
    }

    /** Set Features KATO: restarts the timer with the new period. */
    public void kato(long ms) {
        lock.lock();
        try {
            katoMs = ms;
            if (keepAlive != null) keepAlive.cancel(false);
            keepAlive = null;
            if (!dead) startKeepAlive();
        } finally {
            lock.unlock();
        }
    }

    /** Lock held. nvmet counts KATO in whole seconds, rounded up. */
    private void startKeepAlive() {
        if (katoMs == 0) return;
        long periodMs = (katoMs + 999) / 1000 * 1000;
        traffic = true;
        keepAlive = target.every(periodMs, this::keepAliveTick);
    }

    /**
     * Timer thread. A host whose admin queue has not authenticated yet cannot send Keep Alive
     * (everything but fabrics commands is refused until then), and between its AUTH commands
     * it computes: Linux 6.12 under emulation, on its first ffdhe8192 exchange, spends 12-19 s
     * between Challenge and Reply setting up the kernel's ffdhe8192(dh) (0.5 s on the DH). So the
     * admin queue's authentication deadline, not KATO, bounds that silence (nvmet starts its
     * timer at the Connect and would fail such a host).
     */
    private void keepAliveTick() {
        if (traffic || adminAuthenticating()) {
            traffic = false;
            return;
        }
        target.counters().increment(NvmeTcpCounter.KEEP_ALIVE_EXPIRED);
        fatal();
    }

    private boolean adminAuthenticating() {
        lock.lock();
        try {
            Queue admin = queues[0];
            return admin != null && admin.authenticating();
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- registers

    public int cc() {
        return cc;
    }

    public int csts() {
        return csts;
    }

    /** CC.EN = 1 and CSTS.RDY = 1: commands other than fabrics commands may run. */
    public boolean ready() {
        return (cc & CC_ENABLE) != 0 && (csts & CSTS_READY) != 0;
    }

    /** A Property Set of CC, as nvmet's {@code nvmet_update_cc}. Admin queue reader. */
    public void writeCc(int value) {
        lock.lock();
        try {
            int old = cc;
            cc = value;
            boolean enable = (value & CC_ENABLE) != 0, wasEnabled = (old & CC_ENABLE) != 0;
            int shutdown = (value >>> CC_SHN_SHIFT) & 3, wasShutdown = (old >>> CC_SHN_SHIFT) & 3;
            if (enable && !wasEnabled) csts = validCc(value) ? CSTS_READY : CSTS_FATAL;
            if (!enable && wasEnabled) clear();
            if (shutdown != 0 && wasShutdown == 0) {
                clear();
                csts |= CSTS_SHUTDOWN_COMPLETE;
            }
            if (shutdown == 0 && wasShutdown != 0) csts &= ~CSTS_SHUTDOWN_COMPLETE;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Lock held: reset or shutdown, as nvmet_clear_ctrl: not ready (so commands other than
     * fabrics ones fail with Command Sequence Error) and CC back to 0; CFS stays.
     */
    private void clear() {
        csts &= ~CSTS_READY;
        cc = 0;
    }

    /** IOSQES 6 (64 B), IOCQES 4 (16 B), MPS 0 (4 KiB), AMS round robin, CSS NVM. */
    private static boolean validCc(int value) {
        return ((value >>> CC_IOSQES_SHIFT) & 0xf) == 6 && ((value >>> CC_IOCQES_SHIFT) & 0xf) == 4
               && ((value >>> CC_MPS_SHIFT) & 0xf) == 0 && ((value >>> CC_AMS_SHIFT) & 7) == 0
               && ((value >>> CC_CSS_SHIFT) & 7) == 0;
    }

    // ---------------------------------------------------------------- asynchronous events

    /** Async event configuration (Set Features 0x0B); false when it asks for events this controller cannot raise. */
    public boolean aenConfig(int value) {
        int supported = discovery() ? AEN_DISCOVERY_LOG : AEN_SMART_WARNINGS | AEN_NAMESPACE_ATTRIBUTE | AEN_ANA_CHANGE;
        if ((value & ~supported) != 0) return false;
        lock.lock();
        try {
            aenConfig = value;
        } finally {
            lock.unlock();
        }
        return true;
    }

    public int aenConfig() {
        lock.lock();
        try {
            return aenConfig;
        } finally {
            lock.unlock();
        }
    }

    /** An Asynchronous Event Request: parked until an event; a status when over the limit. */
    public int asyncEventRequest(CommandSlot slot) {
        lock.lock();
        try {
            if (asyncEventRequestCount == MAX_ASYNC_EVENT_REQUESTS) return Status.ASYNC_EVENT_LIMIT | Status.DNR;
            asyncEventRequests[asyncEventRequestCount++] = slot;
            deliverEvents();
            return Queue.PENDING;
        } finally {
            lock.unlock();
        }
    }

    /** A namespace of the subsystem was enabled, disabled or changed: the changed list grows and the host hears of it. */
    public void namespaceChanged(int nsid) {
        lock.lock();
        try {
            if (changedCount < CHANGED_NAMESPACES_MAX) {
                boolean present = false;
                for (int i = 0; i < changedCount; i++) present |= changedNamespaces[i] == nsid;
                if (!present) changedNamespaces[changedCount++] = nsid;
            } else {
                changedOverflow = true;
            }
            if ((aenConfig & AEN_NAMESPACE_ATTRIBUTE) != 0 && !namespaceEventMasked) {
                namespaceEventMasked = true;
                pendingEvents.add(EVENT_NAMESPACE_CHANGED);
                deliverEvents();
            }
        } finally {
            lock.unlock();
        }
    }

    /** An ANA state or group this controller reports changed (nvmet_send_ana_event): one event until the ANA log is read. */
    public void anaChanged() {
        lock.lock();
        try {
            if ((aenConfig & AEN_ANA_CHANGE) != 0 && !anaEventMasked) {
                anaEventMasked = true;
                pendingEvents.add(EVENT_ANA_CHANGED);
                deliverEvents();
            }
        } finally {
            lock.unlock();
        }
    }

    /** The ANA log was read without RAE: the next change raises an event again. */
    public void anaLogRead(boolean retainEvent) {
        if (retainEvent) return;
        lock.lock();
        try {
            anaEventMasked = false;
        } finally {
            lock.unlock();
        }
    }

    /** What a discovery controller's host may see changed (ports, links, allowed hosts). */
    void discoveryChanged() {
        lock.lock();
        try {
            if ((aenConfig & AEN_DISCOVERY_LOG) != 0 && !discoveryEventMasked) {
                discoveryEventMasked = true;
                pendingEvents.add(EVENT_DISCOVERY_CHANGED);
                deliverEvents();
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * A reservation notice for this controller's host on namespace {@code nsid} (unless its
     * mask suppresses it): queued for log page 0x80, with one event until that log is read.
     */
    public void reservationNotice(int nsid, int type) {
        lock.lock();
        try {
            if (reservationNotices.add(nsid, type) && !reservationEventMasked) {
                reservationEventMasked = true;
                pendingEvents.add(EVENT_RESERVATION);
                deliverEvents();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Log page 0x80: the oldest notice into {@code out} (64 bytes, zeroed); another event if more remain. */
    public void takeReservationNotice(ByteBuffer out) {
        lock.lock();
        try {
            reservationNotices.take(out);
            reservationEventMasked = !reservationNotices.isEmpty();
            if (reservationEventMasked) {
                pendingEvents.add(EVENT_RESERVATION);
                deliverEvents();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Whether a command of this controller for namespace {@code nsid} is on the engine now (held by a policy or in the backend). Any thread. */
    public boolean busyOn(int nsid) {
        lock.lock();
        try {
            for (Queue q : queues) if (q != null && q.busyOn(nsid)) return true;
            return false;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Preempt-and-abort: this controller's commands on {@code nsid} that a policy still holds are
     * dropped, each queue's on its loop; completes once every queue has done so. Any thread.
     */
    public CompletableFuture<Void> cancelHeld(int nsid) {
        List<CompletableFuture<Void>> done = new ArrayList<>();
        lock.lock();
        try {
            for (Queue q : queues) if (q != null) done.add(q.cancelHeld(nsid));
        } finally {
            lock.unlock();
        }
        return CompletableFuture.allOf(done.toArray(CompletableFuture<?>[]::new));
    }

    /** Feature 0x82 of namespace {@code nsid}: the notice types suppressed. */
    public int reservationMask(int nsid) {
        lock.lock();
        try {
            return reservationNotices.mask(nsid);
        } finally {
            lock.unlock();
        }
    }

    public void reservationMask(int nsid, int bits) {
        lock.lock();
        try {
            reservationNotices.mask(nsid, bits);
        } finally {
            lock.unlock();
        }
    }

    /** Lock held: completes parked AERs with queued events. */
    private void deliverEvents() {
        while (asyncEventRequestCount > 0 && !pendingEvents.isEmpty()) {
            CommandSlot slot = asyncEventRequests[--asyncEventRequestCount];
            asyncEventRequests[asyncEventRequestCount] = null;
            slot.result = pendingEvents.poll();
            slot.status = Status.SUCCESS;
            slot.connection.respond(slot);
        }
    }

    /**
     * Log page 0x04: fills {@code out} (4096 bytes, zeroed) with the changed nsids, 0xFFFFFFFF
     * first when more than 1024 changed, and clears the list; without RAE the event is re-armed.
     */
    public void takeChangedNamespaces(ByteBuffer out, boolean retainEvent) {
        lock.lock();
        try {
            if (changedOverflow) {
                out.putInt(0, 0xFFFFFFFF);
            } else {
                for (int i = 0; i < changedCount; i++) out.putInt(i * 4, changedNamespaces[i]);
            }
            changedCount = 0;
            changedOverflow = false;
            if (!retainEvent) namespaceEventMasked = false;
        } finally {
            lock.unlock();
        }
    }

    /** The discovery log was read without RAE: the next change raises an event again. */
    public void discoveryLogRead(boolean retainEvent) {
        if (retainEvent) return;
        lock.lock();
        try {
            discoveryEventMasked = false;
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- error log and health

    /**
     * Records a failed command in the error log ring (entry layout: error count u64 @0, SQID u16
     * @8, CID u16 @10, status field u16 @12, parameter error location u16 @14, LBA u64 @16,
     * NSID u32 @24, transport type u8 @29). Any thread.
     */
    void recordError(int sqid, int commandId, int status, long lba, int nsid) {
        lock.lock();
        try {
            errorCount++;
            int at = (int) (errorCount % ERROR_LOG_ENTRIES) * ERROR_LOG_ENTRY_BYTES;
            for (int i = 0; i < ERROR_LOG_ENTRY_BYTES; i++) errorLog.put(at + i, (byte) 0);
            errorLog.putLong(at, errorCount);
            errorLog.putShort(at + 8, (short) sqid);
            errorLog.putShort(at + 10, (short) commandId);
            errorLog.putShort(at + 12, (short) (status << 1));
            errorLog.putShort(at + 14, (short) 0xFFFF);
            errorLog.putLong(at + 16, lba);
            errorLog.putInt(at + 24, nsid);
            errorLog.put(at + 29, (byte) Port.TRTYPE_TCP);
        } finally {
            lock.unlock();
        }
    }

    /** Log page 0x01: the entries, most recent first, into {@code out} (zeroed, 64 × entries bytes). */
    public void errorLog(ByteBuffer out) {
        lock.lock();
        try {
            long n = Math.min(errorCount, ERROR_LOG_ENTRIES);
            for (int i = 0; i < n; i++) {
                int slot = (int) ((errorCount - i) % ERROR_LOG_ENTRIES) * ERROR_LOG_ENTRY_BYTES;
                out.put(i * ERROR_LOG_ENTRY_BYTES, errorLog, slot, ERROR_LOG_ENTRY_BYTES);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Sums the IO queues' command counters: {reads, writes, bytes read, bytes written}. */
    public long[] ioCounters() {
        long[] sum = new long[4];
        lock.lock();
        try {
            for (Queue c : queues) if (c != null) c.addCounters(sum);
        } finally {
            lock.unlock();
        }
        return sum;
    }
}
