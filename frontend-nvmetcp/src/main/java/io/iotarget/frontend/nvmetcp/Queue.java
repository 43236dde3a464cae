package io.iotarget.frontend.nvmetcp;

import io.iotarget.buffer.PooledBuffer;
import io.iotarget.frontend.nvmetcp.config.ActiveNamespace;
import io.iotarget.frontend.nvmetcp.config.Port;
import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.pressure.TenantQueue;
import io.iotarget.model.IoGroup;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import io.iotarget.model.SharedRead;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * One submission queue (the admin queue or an IO queue once Connect has named it), as nvmet's
 * {@code nvmet_sq} with its requests: the command slots and their tags, the routing of each
 * command to Connect, the admin or the IO commands ({@link CommandSet}), the authentication gate
 * in front of them, the wait for a data buffer from the tenant's pool share, the SMART counters
 * and io.pressure's per-group tasks. It is carried by one NVMe/TCP connection, its
 * {@link TcpQueue}, which frames the commands in and the responses out.
 *
 * <pre>
 *  TcpQueue: capsule ─► takeSlot ─► capsuleReceived: precheck (auth gate) ─┬─ admin: run inline
 *            H2CData ─► dataReceived ──────────────────────────────────────┤  IO: engine.submit ─► completion, any thread
 *  TcpQueue.queue ◄── respond(slot) / R2T ◄───────────────────────────────────┘
 *  sent(slot): tag back to the free list once the response is on the wire
 * </pre>
 *
 * <p>Threads: everything runs on the connection's event loop, except {@link #respond} (any
 * thread: an engine completion, the configuration thread completing an AER), {@link #close} and
 * the methods that say so.
 *
 * <p>What a host can hold: at most twice its queue size in command slots (each with its data
 * buffer), and its queued responses for no longer than the transport's send timeout.
 */
public final class Queue {
    /** Returned by command handlers that respond later (IO, AER). */
    public static final int PENDING = -1;

    private static final VarHandle COUNTERS = MethodHandles.arrayElementVarHandle(long[].class);
    public static final int COUNT_READS = 0, COUNT_WRITES = 1, COUNT_BYTES_READ = 2, COUNT_BYTES_WRITTEN = 3;

    public final NvmeTarget target;
    public final Port port;
    /** The connection that carries this queue. */
    private final TcpQueue tcp;
    private final CommandSlot[] slots;
    private final CommandSet commands;
    private final CommandSet.IoQueue io;
    /** SMART counters, written by the loop (opaque) and summed by the admin queue. */
    private final long[] counters = new long[4];

    // Loop thread only.
    private final int[] freeTags;
    private int freeCount;
    private int slotCount;
    private int slotLimit = 2;          // until Connect names the queue size: the Connect itself
    /**
     * This queue as io.pressure's task, one per group its namespaces charge (almost always
     * one): loop thread; closed with the connection.
     */
    private final Map<IoGroup, TenantQueue> pressureQueues = new IdentityHashMap<>(2);

    // Fixed by Connect on the loop; read by other queues and the admin queue.
    private volatile QueueAuthentication authentication;
    private volatile Controller controller;
    private volatile int qid = -1;
    /** Set once the transport reports the connection closed. */
    private volatile boolean closed;
    private volatile boolean sqFlowControlDisabled;
    private int sqSize = 1;
    /** SQHD: advanced per command as it is taken, reported in each response. */
    private int sqHead;

    Queue(NvmeTarget target, Port port, TcpQueue tcp) {
        this.target = target;
        this.port = port;
        this.tcp = tcp;
        int maxSlots = 2 * Port.DEFAULT_MAX_QUEUE_SIZE;
        this.slots = new CommandSlot[maxSlots];
        this.freeTags = new int[maxSlots];
        this.commands = target.commands();
        this.io = commands.ioQueue(target.engine(), this);
    }

    Controller controller() {
        return controller;
    }

    /** The PSK identity this queue's host proved over TLS, or null: a plaintext queue. */
    public String tlsIdentity() {
        return tcp.tlsIdentity();
    }

    int qid() {
        return qid;
    }

    // ---------------------------------------------------------------- commands in (from the TcpQueue, loop thread)

    /** A free slot for the next command, or null: the host sent more than the queue holds. */
    CommandSlot takeSlot() {
        if (freeCount > 0) return slots[freeTags[--freeCount]];
        if (slotCount >= slotLimit) return null;
        CommandSlot slot = new CommandSlot(slotCount, this);
        slots[slotCount++] = slot;
        return slot;
    }

    /** A command was taken: SQHD moves on, and the controller's keep-alive sees traffic. */
    void taken() {
        sqHead = sqHead + 1 == sqSize ? 0 : sqHead + 1;
        Controller c = controller;
        if (c != null) c.noteTraffic();
    }

    /** The slot with transfer tag {@code tag}, or null. */
    CommandSlot slot(int tag) {
        return tag < slotCount ? slots[tag] : null;
    }

    /** A command capsule is in whole (its in-capsule data too): check it, then R2T, wait for a buffer, or run it. */
    void capsuleReceived(CommandSlot slot) {
        if (slot.status == Status.SUCCESS) slot.status = precheck(slot);
        if (slot.status == Status.SUCCESS && admittedFirst(slot)) {
            execute(slot);                               // buffer and R2T once the policies let it run (admitted)
            return;
        }
        if (slot.status == Status.SUCCESS && !slot.hasBuffer() && needsBuffer(slot) && takeBuffer(slot) && !slot.hasBuffer()) return;   // waits for the pool
        if (slot.status != Status.SUCCESS) {
            respond(slot);
        } else if (slot.awaitingData) {
            slot.event = CommandSlot.EVENT_R2T;
            tcp.queue(slot);
        } else {
            execute(slot);
        }
    }

    /** A write's last H2CData is in: run it, or hand it to the engine that admitted it before its data. */
    void dataReceived(CommandSlot slot) {
        ByteBuffer data = slot.data();                   // position 0, limit dataLength again
        IoRequest admitted = slot.admittedWaiting ? slot.dataLaterRequest() : null;
        if (admitted != null) {
            slot.admittedWaiting = false;
            target.engine().dispatchAdmitted(admitted.data(data));
            return;
        }
        execute(slot);
    }

    /** Refuses commands this queue cannot run before their data is asked for. */
    private int precheck(CommandSlot slot) {
        if (controller == null) return commands.precheckConnect(slot);
        if (QueueAuthentication.isExchange(slot)) return authentication.precheck(slot);
        if (!authentication.admits(slot)) return Status.AUTH_REQUIRED | Status.DNR;
        return qid == 0 ? commands.precheckAdmin(controller, slot) : io.precheck(controller, slot);
    }

    private void execute(CommandSlot slot) {
        Controller c = controller;
        if (c != null && QueueAuthentication.isExchange(slot)) {
            slot.phase = CommandSlot.ENGINE;             // DH: off the loop, which carries other hosts' queues
            authentication.submit(this, slot);
            return;
        }
        int status = c == null ? commands.connect(this, slot)
                : qid == 0 ? commands.executeAdmin(c, this, slot)
                : io.execute(c, slot);
        if (status == PENDING) {
            if (slot.phase == CommandSlot.RECEIVING) slot.phase = CommandSlot.ENGINE;   // an AER, answered later
            return;
        }
        slot.status = status;
        respond(slot);
    }

    /** The slot's command is over: its buffer goes back to the pool and its tag to the free list. Loop thread. */
    void free(CommandSlot slot) {
        slot.endSharedRead();
        slot.releaseBuffer();
        slot.phase = CommandSlot.FREE;
        freeTags[freeCount++] = slot.tag;
    }


    /** A write whose data comes through R2T passes the policies before it gets a buffer and its R2T. */
    private boolean admittedFirst(CommandSlot slot) {
        return slot.awaitingData && !ownsData(slot) && Sqe.opcode(slot.sqe) == Sqe.OPCODE_WRITE;
    }

    /** The engine admitted a data-later write (any thread): over to the loop. */
    void admitted(CommandSlot slot) {
        tcp.onLoop(() -> {
            IoRequest io = slot.dataLaterRequest();
            if (tcp.socketClosed()) {
                target.engine().abandon(io);             // its data will never come
                target.counters().increment(NvmeTcpCounter.ABORTED);
                return;
            }
            slot.admittedWaiting = true;
            takeBuffer(slot);
            if (!slot.hasBuffer()) return;               // the pool serves it later (bufferArrived)
            slot.event = CommandSlot.EVENT_R2T;
            tcp.queue(slot);
        });
    }

    /**
     * Commands whose small data lives in the slot itself, not in a tenant's pool share: the
     * admin queue's, and fabrics commands (Connect, AUTH_Send/Receive) on any queue.
     */
    boolean ownsData(CommandSlot slot) {
        return qid <= 0 || Sqe.opcode(slot.sqe) == Sqe.OPCODE_FABRICS;
    }

    /**
     * Asks the slot's namespace group for the slot's data buffer: true with the buffer in the
     * slot, or true with the slot's waiter queued (the pool serves it later); false when the
     * command failed (no such namespace: status set).
     */
    boolean takeBuffer(CommandSlot slot) {
        // A command already in the engine keeps the namespace it was submitted to, even if disabled since.
        ActiveNamespace ns = slot.namespace != null ? slot.namespace : controller.subsystem.table.find(Sqe.nsid(slot.sqe));
        if (ns == null) {
            slot.status = Status.INVALID_NAMESPACE | Status.DNR;
            return false;
        }
        PooledBuffer b = ns.buffers().take(slot.dataLength, slot.bufferWaiter);
        if (b != null) slot.data(b);
        return true;
    }

    /** False for a READ its namespace's backend always shares: it sends from the backend's memory, as NBD's do, and holds no pool share. */
    private boolean needsBuffer(CommandSlot slot) {
        if (ownsData(slot) || Sqe.opcode(slot.sqe) != Sqe.OPCODE_READ || !offersViews(slot.dataLength)) return true;
        ActiveNamespace ns = controller.subsystem.table.find(Sqe.nsid(slot.sqe));
        return ns == null || !ns.sharesReads();
    }

    /** The pool served a slot's waiter, on the thread that released the memory: over to the loop. */
    void bufferAvailable(CommandSlot slot, PooledBuffer buffer) {
        tcp.onLoop(() -> bufferArrived(slot, buffer));
    }

    private void bufferArrived(CommandSlot slot, PooledBuffer buffer) {
        if (tcp.socketClosed() || (slot.phase != CommandSlot.RECEIVING && !slot.admittedWaiting)) {
            buffer.release();
            return;
        }
        ByteBuffer data = slot.data(buffer);
        if (tcp.resumeHeld(slot, data)) return;
        if (slot.awaitingData) {
            slot.event = CommandSlot.EVENT_R2T;
            tcp.queue(slot);
        } else {
            execute(slot);
        }
    }

    /**
     * The slot's data buffer, or null with the command failed with Internal Error when no memory
     * can be had (as nvmet fails a command whose data it cannot map): in-capsule data is then read
     * and dropped, the queue and its other commands go on.
     */
    ByteBuffer dataOrFail(CommandSlot slot, int length) {
        try {
            return slot.data(length);
        } catch (OutOfMemoryError e) {
            slot.status = Status.INTERNAL;
            target.outOfMemory(e);
            return null;
        }
    }

    /**
     * Connect succeeded: this connection is queue {@code queueId} of {@code c}. Loop thread,
     * before the Connect response is queued.
     *
     * @param queueSize SQSIZE + 1
     */
    public void connected(Controller c, int queueId, int queueSize, boolean disableSqFlowControl, QueueAuthentication auth) {
        this.authentication = auth;
        this.qid = queueId;
        this.sqSize = queueSize;
        this.sqHead = 1 % queueSize;
        this.sqFlowControlDisabled = disableSqFlowControl;
        this.slotLimit = Math.min(slots.length, 2 * queueSize);
        this.controller = c;
        tcp.connected();
    }

    /**
     * Whether a command of this queue for namespace {@code nsid} is on the engine now. Any
     * thread, for preempt-and-abort's wait: a command that is missed has not yet read the
     * reservation, so it sees the preempt (CommandSlot#enterEngine).
     */
    boolean busyOn(int nsid) {
        CommandSlot[] all = slots;
        for (CommandSlot s : all) {
            if (s == null || s.phase != CommandSlot.ENGINE) continue;
            ActiveNamespace ns = s.namespace;
            if (ns != null && ns.nsid() == nsid) return true;
        }
        return false;
    }

    /**
     * Preempt-and-abort: this queue's commands on namespace {@code nsid} that a policy (io.max,
     * iocost, io.latency) still holds are dropped there and answered Abort Requested, never
     * having reached the backend; the future completes once done. Any thread; done on the
     * queue's loop, which owns the slots.
     * What is past the policies already is the reservation's drain's to wait for.
     */
    CompletableFuture<Void> cancelHeld(int nsid) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        tcp.onLoop(() -> {
            try {
                for (int i = 0; i < slotCount; i++) {
                    CommandSlot slot = slots[i];
                    ActiveNamespace ns = slot.namespace;
                    if (slot.phase != CommandSlot.ENGINE || slot.admittedWaiting || ns == null || ns.nsid() != nsid) continue;
                    target.counters().add(NvmeTcpCounter.ABORTED, slot.cancel(target.engine()));
                }
            } finally {
                done.complete(null);
            }
        });
        return done;
    }

    /** Whether a READ of {@code length} bytes offers the backend views: not under a data digest, whose CRC needs the bytes in hand. */
    public boolean offersViews(long length) {
        return !tcp.dataDigest() && SharedRead.fits(length);
    }

    /** Adds one command's numbers to the SMART counters. Loop thread. */
    public void count(int which, long bytes) {
        int bytesAt = which == COUNT_READS ? COUNT_BYTES_READ : COUNT_BYTES_WRITTEN;
        COUNTERS.setOpaque(counters, which, counters[which] + 1);
        COUNTERS.setOpaque(counters, bytesAt, counters[bytesAt] + bytes);
    }

    void addCounters(long[] sum) {
        for (int i = 0; i < sum.length; i++) sum[i] += (long) COUNTERS.getOpaque(counters, i);
    }

    // ---------------------------------------------------------------- completion side

    /** The command is done (status and result set): queue its response. Any thread. */
    void respond(CommandSlot slot) {
        Controller c = controller;
        if (slot.status != Status.SUCCESS && c != null) {
            c.recordError(qid, slot.commandId(), slot.status, slot.startLba, Sqe.nsid(slot.sqe));
        }
        slot.event = CommandSlot.EVENT_RESPONSE;
        slot.phase = CommandSlot.RESPONDING;
        tcp.queue(slot);
    }

    /** Closes the socket; what is in flight completes unanswered. Any thread, idempotent, never blocks. */
    public void close() {
        tcp.close();
    }

    /** The transport reports the connection closed: first of all, for the DH threads ({@link #isClosed}). Loop thread. */
    void closing() {
        closed = true;
    }

    /** The connection is closed: the queue leaves its controller and gives up its commands. Loop thread, after {@link #closing}. */
    void closed() {
        target.connectionClosed(this);
        Controller ctrl = controller;
        if (ctrl != null) ctrl.detach(qid, this);
        tcp.sendResponses();                                 // slots already done go back to the free list
        // Nobody will read an answer: what io.max or iocost still holds is dropped, what never
        // reached the engine (waiting for its buffer or its data) is freed here.
        for (int i = 0; i < slotCount; i++) {
            CommandSlot slot = slots[i];
            if (slot.phase == CommandSlot.ENGINE && slot.admittedWaiting) {
                slot.admittedWaiting = false;
                cancelWait(slot);
                target.engine().abandon(slot.dataLaterRequest());
                target.counters().increment(NvmeTcpCounter.ABORTED);
            } else if (slot.phase == CommandSlot.ENGINE && slot.namespace != null) {
                target.counters().add(NvmeTcpCounter.ABORTED, slot.cancel(target.engine()));
            }
            if (slot.phase == CommandSlot.RECEIVING) {
                slot.namespace = null;
                if (slot.bufferWaiter != null) cancelWait(slot);
                free(slot);
            }
        }
        for (TenantQueue q : pressureQueues.values()) target.engine().closeQueue(q);
        pressureQueues.clear();
    }

    /** This queue's io.pressure task in {@code group}, made on first use. Loop thread. */
    public TenantQueue pressureQueue(IoGroup group) {
        return pressureQueues.computeIfAbsent(group, g -> target.engine().newQueue(Group.of(g)));
    }

    /** A command's namespace group owes an issuer delay (io.latency, iocost; any thread): the connection pauses its input ({@link TcpQueue#delayInput}). */
    void delayInput(long delayNs) {
        tcp.delayInput(delayNs);
    }

    /** Withdraws the slot's buffer wait; if it was already served, the buffer arrives on the loop and goes back. */
    private void cancelWait(CommandSlot slot) {
        ActiveNamespace ns = controller == null ? null : controller.subsystem.table.find(Sqe.nsid(slot.sqe));
        if (ns != null) ns.buffers().cancel(slot.bufferWaiter);
    }

    /** One line for operators: what the connection negotiated and which queue it is. Any thread. */
    String describe() {
        Controller c = controller;
        return "port=" + port.id + " peer=" + tcp.peer() + " "
               + (c == null ? "unconnected" : "subsystem=" + c.subsystem.nqn + " cntlid=" + c.cntlid + " qid=" + qid + " host=" + c.hostNqn)
               + " " + tcp.digests() + " sqflow=" + (sqFlowControlDisabled ? "off" : "on")
               + (c == null ? "" : " auth=" + authentication.describe());
    }

    // ---------------------------------------------------------------- the response's fields (TcpQueue, loop thread)

    /** The SQHD a response reports: 0xFFFF with SQ flow control disabled. */
    int responseHead() {
        return sqFlowControlDisabled ? 0xFFFF : sqHead;
    }

    /** Connect disabled SQ flow control: a successful read ends with DATA_SUCCESS instead of a response capsule. */
    boolean sqFlowControlDisabled() {
        return sqFlowControlDisabled;
    }

    /**
     * The file behind the read's region shrank since the read: nothing of the response is queued
     * yet, so the host hears Internal Error (what EIO is, {@link Status#of}) instead of data it
     * would not get. Once the data header is queued, a shrink can only end the connection
     * ({@link io.iotarget.transport.FileRegionCutShortException}). The region stays held until
     * the response is sent, as for any shared read ({@link CommandSlot#endSharedRead}).
     */
    void readPastShrunkFile(CommandSlot slot) {
        slot.status = Status.of(IoStatus.IO_ERROR);
        Controller c = controller;
        if (c != null) c.recordError(qid, slot.commandId(), slot.status, slot.startLba, Sqe.nsid(slot.sqe));
        target.readPastShrunkFile(tcp.peer() + ": queue " + qid + ": READ of " + slot.dataLength + " bytes at LBA " + slot.startLba
                                  + " answered Internal Error: its file shrank below it before the response");
    }

    /**
     * The slot's response is on the wire (or dropped with the connection): its tag is free
     * again. A failed authentication's Failure1 is out, so now its queue closes. Loop thread.
     */
    void sent(CommandSlot slot) {
        free(slot);
        if (!slot.closesQueue) return;
        target.counters().increment(NvmeTcpCounter.AUTHENTICATION_FAILURES);
        tcp.closeNow();
    }

    /** The authentication deadline passed (timer thread): an open queue that has not authenticated closes. */
    void authenticationExpired() {
        tcp.onLoop(() -> {
            if (tcp.socketClosed() || !authenticating()) return;
            target.counters().increment(NvmeTcpCounter.AUTHENTICATION_FAILURES);
            tcp.closeNow();
        });
    }

    /** The connection has closed (volatile: for the DH threads, which skip a closed queue's work). Any thread. */
    boolean isClosed() {
        return closed;
    }

    /** This queue must authenticate and has not yet. Any thread. */
    boolean authenticating() {
        QueueAuthentication a = authentication;
        return a != null && a.authenticating();
    }
}
