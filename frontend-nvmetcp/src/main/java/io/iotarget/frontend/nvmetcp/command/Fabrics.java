package io.iotarget.frontend.nvmetcp.command;

import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.CommandSlot;
import io.iotarget.frontend.nvmetcp.Controller;
import io.iotarget.frontend.nvmetcp.NvmeTarget;
import io.iotarget.frontend.nvmetcp.NvmeTcpCounter;
import io.iotarget.frontend.nvmetcp.Queue;
import io.iotarget.frontend.nvmetcp.QueueAuthentication;
import io.iotarget.frontend.nvmetcp.SubsystemControllers;
import io.iotarget.frontend.nvmetcp.config.Subsystem;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Fabrics commands (opcode 0x7F, command type in byte 4): Connect, which turns a connection
 * into a queue of a controller, and Property Get/Set, the fabrics form of register access.
 * Connect's errors are nvmet's: an unknown or unlinked subsystem and a bad controller id are
 * Connect Invalid Parameters with the offending field's location in the result, a host not
 * allowed on the subsystem is Connect Invalid Host. iotarget adds two refusals nvmet lacks: a
 * host NQN that is empty or not UTF-8 is Connect Invalid Parameters at the host NQN field, and an
 * admin Connect whose Host ID is bound to another host NQN in the subsystem
 * ({@link Subsystem#hostIdBoundElsewhere}) is Connect Invalid Host at the Host ID field, counted
 * in {@link NvmeTcpCounter#HOST_ID_CONFLICTS}. A successful Connect's result carries the
 * controller id and, when the host must authenticate, AUTHREQ.ATR ({@link QueueAuthentication}).
 */
public final class Fabrics {
    static final int TYPE_PROPERTY_SET = 0x00;
    static final int TYPE_CONNECT = 0x01;
    static final int TYPE_PROPERTY_GET = 0x04;

    /*  Connect data (1024 bytes, in the capsule):
     *  0 HOSTID[16]   16 CNTLID u16   256 SUBNQN[256]   512 HOSTNQN[256]   (NQNs NUL-terminated) */
    static final int DATA_BYTES = 1024;
    public static final int DATA_HOSTID = 0;
    public static final int DATA_CNTLID = 16;
    static final int DATA_SUBNQN = 256;
    public static final int DATA_HOSTNQN = 512;
    static final int NQN_FIELD_BYTES = 256;
    /** CNTLID in an admin Connect: "any controller" (dynamic controller model). */
    static final int CNTLID_DYNAMIC = 0xFFFF;
    static final int CATTR_DISABLE_SQ_FLOW_CONTROL = 1 << 2;
    /** Property Get/Set ATTRIB bit 0: an 8-byte property. */
    static final int PROPERTY_8_BYTES = 1;

    private Fabrics() {
    }

    /** Invalid-parameter location in the Connect result: bit 16 set = in the connect data; low bits = byte offset. */
    public static long inData(int offset) {
        return 1L << 16 | offset;
    }

    /** A queue without a controller runs nothing but Connect. */
    public static int precheckConnect(CommandSlot slot) {
        boolean connect = Sqe.opcode(slot.sqe) == Sqe.OPCODE_FABRICS && slot.sqe.get(Sqe.FABRICS_TYPE) == TYPE_CONNECT;
        return connect ? Status.SUCCESS : Status.INVALID_OPCODE | Status.DNR;
    }

    /** Connect, on the connection's reader; on success the connection is a queue of the controller. */
    public static int connect(Queue queue, CommandSlot slot) {
        ByteBuffer sqe = slot.sqe;
        if (sqe.getShort(Sqe.CONNECT_RECFMT) != 0) return Status.CONNECT_INCOMPATIBLE_FORMAT | Status.DNR;
        if (slot.dataLength != DATA_BYTES) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
        ByteBuffer data = slot.data();
        byte[] hostId = new byte[16];
        data.get(DATA_HOSTID, hostId);
        int cntlid = data.getShort(DATA_CNTLID) & 0xFFFF;
        String subsystemNqn = string(data, DATA_SUBNQN);
        String hostNqn = hostNqn(data);
        if (hostNqn == null) {
            slot.result = inData(DATA_HOSTNQN);
            return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
        }
        int qid = sqe.getShort(Sqe.CONNECT_QID) & 0xFFFF;
        int sqSize = (sqe.getShort(Sqe.CONNECT_SQSIZE) & 0xFFFF) + 1;
        boolean noFlowControl = (sqe.get(Sqe.CONNECT_CATTR) & CATTR_DISABLE_SQ_FLOW_CONTROL) != 0;
        long katoMs = Integer.toUnsignedLong(sqe.getInt(Sqe.CONNECT_KATO));
        NvmeTarget target = queue.target;
        target.lock();
        try {
            Subsystem s = target.subsystemForConnect(queue.port, subsystemNqn);
            if (s == null) {
                slot.result = inData(DATA_SUBNQN);
                return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
            }
            String tlsIdentity = queue.tlsIdentity();
            String named = tlsIdentity == null ? null : tlsIdentity.substring(0, "NVMe1R01 ".length()) + hostNqn + " " + subsystemNqn;
            if (tlsIdentity != null && !tlsIdentity.equals(named) && !tlsIdentity.startsWith(named + " ")) {
                // The key the host proved is another host's or for another subsystem (nvmet does not check).
                slot.result = inData(DATA_HOSTNQN);
                return Status.CONNECT_INVALID_HOST | Status.DNR;
            }
            if (!s.allows(hostNqn)) {
                slot.result = inData(DATA_HOSTNQN);
                return Status.CONNECT_INVALID_HOST | Status.DNR;
            }
            SubsystemControllers live = target.controllers(s);
            Controller c;
            if (qid == 0) {
                if (cntlid != CNTLID_DYNAMIC) {
                    slot.result = inData(DATA_CNTLID);
                    return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
                }
                if (sqSize < 2 || sqSize > queue.port.queueSizeLimit()) {
                    slot.result = Sqe.CONNECT_SQSIZE;
                    return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
                }
                ByteBuffer id16 = ByteBuffer.wrap(hostId);
                if (live.hostIdBoundElsewhere(id16.getLong(0), id16.getLong(8), hostNqn) != null) {
                    // Reservations know a host by its Host ID: a second NQN with it would act
                    // with the first's registrations (docs/decisions.md).
                    target.counters().increment(NvmeTcpCounter.HOST_ID_CONFLICTS);
                    slot.result = inData(DATA_HOSTID);
                    return Status.CONNECT_INVALID_HOST | Status.DNR;
                }
                int id = live.allocateCntlid();
                if (id < 0) return Status.CONNECT_CONTROLLER_BUSY | Status.DNR;
                c = new Controller(target, s, queue.port, id, hostNqn, hostId, katoMs);
                live.add(c);
            } else {
                c = live.find(cntlid);
                // Only the host that made the controller may add queues to it: its NQN and its host ID
                // (nvmet checks the NQN alone). Which still proves nothing where a key is required: the
                // queue then authenticates on its own, and a failure closes that queue alone.
                if (c == null || !c.hostNqn.equals(hostNqn) || !Arrays.equals(c.hostId, hostId) || c.port != queue.port) {
                    slot.result = inData(DATA_CNTLID);
                    return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
                }
                if (c.discovery() || qid > c.maxQid()) {
                    slot.result = Sqe.CONNECT_QID;
                    return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
                }
                if (sqSize < 2 || sqSize > c.queueSizeLimit) {
                    slot.result = Sqe.CONNECT_SQSIZE;
                    return Status.CONNECT_INVALID_PARAMETERS | Status.DNR;
                }
                if (!c.ready()) return Status.COMMAND_SEQUENCE_ERROR | Status.DNR;
            }
            int status = c.attach(qid, queue);
            if (status != Status.SUCCESS) {
                if (qid == 0) live.remove(c);
                return status;
            }
            if (qid == 0) live.bindHostId(c);
            QueueAuthentication authentication = QueueAuthentication.forQueue(c, qid);
            queue.connected(c, qid, sqSize, noFlowControl, authentication);
            slot.result = c.cntlid | authentication.connectResult();
            authentication.startDeadline(queue);
            return Status.SUCCESS;
        } finally {
            target.unlock();
        }
    }

    /** Property Get: CAP as 8 bytes; VS, CC, CSTS as 4 bytes; anything else is an invalid field. */
    static int propertyGet(Controller c, CommandSlot slot) {
        ByteBuffer sqe = slot.sqe;
        boolean eightBytes = (sqe.get(Sqe.PROPERTY_ATTRIB) & PROPERTY_8_BYTES) != 0;
        int offset = sqe.getInt(Sqe.PROPERTY_OFFSET);
        if (eightBytes) {
            if (offset != Controller.PROPERTY_CAP) return Status.INVALID_FIELD | Status.DNR;
            slot.result = c.cap;
            return Status.SUCCESS;
        }
        switch (offset) {
            case Controller.PROPERTY_VS -> slot.result = c.subsystem.version;
            case Controller.PROPERTY_CC -> slot.result = Integer.toUnsignedLong(c.cc());
            case Controller.PROPERTY_CSTS -> slot.result = Integer.toUnsignedLong(c.csts());
            default -> {
                return Status.INVALID_FIELD | Status.DNR;
            }
        }
        return Status.SUCCESS;
    }

    /** Property Set: only CC, as 4 bytes (nvmet's rule). */
    static int propertySet(Controller c, CommandSlot slot) {
        ByteBuffer sqe = slot.sqe;
        boolean eightBytes = (sqe.get(Sqe.PROPERTY_ATTRIB) & PROPERTY_8_BYTES) != 0;
        if (eightBytes || sqe.getInt(Sqe.PROPERTY_OFFSET) != Controller.PROPERTY_CC) return Status.INVALID_FIELD | Status.DNR;
        c.writeCc((int) sqe.getLong(Sqe.PROPERTY_VALUE));
        return Status.SUCCESS;
    }

    /**
     * The Connect data's host NQN: its bytes up to the first NUL, or null when there are none or
     * they are not UTF-8. Such a host has no name to be told apart by (allowed_hosts, keys,
     * cgroup_per_host's group), and decoding the bytes leniently would give several hosts one
     * name ({@code x\xff} and {@code x\xfe} both {@code x\uFFFD}): refused.
     */
    static String hostNqn(ByteBuffer data) {
        int end = DATA_HOSTNQN;
        while (end < DATA_HOSTNQN + NQN_FIELD_BYTES && data.get(end) != 0) end++;
        if (end == DATA_HOSTNQN) return null;
        byte[] b = new byte[end - DATA_HOSTNQN];
        data.get(DATA_HOSTNQN, b);
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                                         .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(b)).toString();
        } catch (CharacterCodingException notUtf8) {
            return null;
        }
    }

    private static String string(ByteBuffer data, int at) {
        int end = at;
        while (end < at + NQN_FIELD_BYTES && data.get(end) != 0) end++;
        byte[] b = new byte[end - at];
        data.get(at, b);
        return new String(b, StandardCharsets.UTF_8);
    }
}
