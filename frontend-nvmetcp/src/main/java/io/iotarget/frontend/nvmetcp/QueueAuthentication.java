package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.command.Sqe;
import io.iotarget.frontend.nvmetcp.command.Status;
import io.iotarget.frontend.nvmetcp.auth.DhChapCredentials;
import io.iotarget.frontend.nvmetcp.auth.DhChapExchange;

import java.nio.ByteBuffer;
import java.util.function.Supplier;

/**
 * In-band authentication of one queue: the one place where the DH-HMAC-CHAP exchange
 * ({@link io.iotarget.frontend.nvmetcp.auth}) meets the command path, with nvmet's rules.
 *
 * <pre>
 *  Fabrics.connect ──► forQueue (required? AUTHREQ.ATR in the Connect result) ──► startDeadline
 *  Queue.precheck: AUTH_Send/AUTH_Receive ──► precheck (SECP, SPSP, TL/AL against the SGL)
 *                       anything else          ──► admits? else Authentication Required | DNR
 *  Queue.execute:  AUTH_Send/AUTH_Receive ──► execute on a virtual thread ──► exchange (ms of DH)
 *  Queue.sent:     a response marked failsController ──► Controller.fatal once it is out
 * </pre>
 * A queue must authenticate when its controller has credentials: the subsystem lists the host
 * in allowed_hosts and the host has a {@code dhchap_key} (never on the discovery subsystem or
 * with attr_allow_any_host=1, as nvmet's {@code nvmet_setup_auth}). Until then it runs only
 * fabrics commands (Property Get/Set on the admin queue, as nvmet, and the AUTH commands);
 * everything else fails with Authentication Required. A failed exchange on any queue fails the
 * controller, so every queue of it closes; so does a queue that has not authenticated within
 * {@link #DEADLINE_MS} of its Connect.
 *
 * <p>Threads: {@link #execute} may run on any thread (the exchange synchronizes), the other
 * methods on the queue's event loop; {@link #admits} is a volatile read.
 */
public final class QueueAuthentication {
    static final int TYPE_AUTH_SEND = 0x05;
    static final int TYPE_AUTH_RECEIVE = 0x06;
    /*  AUTH_Send / AUTH_Receive SQE (after the fabrics header and SGL1):
     *  40 rsvd   41 SPSP0 u8   42 SPSP1 u8   43 SECP u8   44 TL (send) / AL (receive) u32 */
    static final int SQE_SPSP0 = 41;
    static final int SQE_SPSP1 = 42;
    static final int SQE_SECP = 43;
    static final int SQE_LENGTH = 44;
    /** SECP of DH-HMAC-CHAP, and the SPSP0/SPSP1 values it goes with. */
    static final int SECP_DHCHAP = 0xE9;
    static final int SPSP_DHCHAP = 0x01;
    /** AUTHREQ.ATR, bit 17 of a Connect result: the queue must authenticate. */
    static final long CONNECT_AUTHENTICATION_REQUIRED = 1L << 17;
    /** Largest TL/AL taken: Linux asks for 4096; the largest message (a Reply with ffdhe8192) is 1168 bytes. */
    static final int MAX_MESSAGE_BYTES = 8192;
    /** How long a queue may stay unauthenticated after its Connect: nvmet's exchange timeout without KATO. */
    static final long DEADLINE_MS = 120_000;

    private final boolean required;
    private final DhChapExchange exchange;

    private QueueAuthentication(boolean required, DhChapExchange exchange) {
        this.required = required;
        this.exchange = exchange;
    }

    /**
     * The authentication of queue {@code qid} of {@code c}. A Negotiate on the admin queue
     * re-reads the host's configuration (re-authentication picks up new keys); IO queues use
     * what the admin queue last read. Configuration lock held.
     */
    public static QueueAuthentication forQueue(Controller c, int qid) {
        Supplier<DhChapCredentials> credentials = qid == 0 ? c::refreshCredentials : c::credentials;
        DhChapExchange exchange = new DhChapExchange(c.hostNqn, c.subsystem.nqn, credentials, c.target.random());
        return new QueueAuthentication(c.credentials() != null, exchange);
    }

    /** What the Connect result adds to the controller id. */
    public long connectResult() {
        return required ? CONNECT_AUTHENTICATION_REQUIRED : 0;
    }

    /** After the Connect: a queue that has not authenticated by {@link #DEADLINE_MS} fails its controller. */
    public void startDeadline(Controller c) {
        if (!required) return;
        c.target.after(DEADLINE_MS, () -> {
            if (!exchange.authenticated()) c.fatal();
        });
    }

    static boolean isExchange(CommandSlot slot) {
        if (Sqe.opcode(slot.sqe) != Sqe.OPCODE_FABRICS) return false;
        int type = slot.sqe.get(Sqe.FABRICS_TYPE);
        return type == TYPE_AUTH_SEND || type == TYPE_AUTH_RECEIVE;
    }

    /** Whether a command other than AUTH_Send/Receive may run on the queue now. */
    boolean admits(CommandSlot slot) {
        return !required || exchange.authenticated() || Sqe.opcode(slot.sqe) == Sqe.OPCODE_FABRICS;
    }

    /** AUTH_Send/Receive before its data moves: nvmet's field checks, and TL/AL must be the SGL's length. */
    int precheck(CommandSlot slot) {
        ByteBuffer sqe = slot.sqe;
        if ((sqe.get(SQE_SECP) & 0xFF) != SECP_DHCHAP || sqe.get(SQE_SPSP0) != SPSP_DHCHAP || sqe.get(SQE_SPSP1) != SPSP_DHCHAP) {
            return Status.INVALID_FIELD | Status.DNR;
        }
        long length = Integer.toUnsignedLong(sqe.getInt(SQE_LENGTH));
        if (length == 0 || length > MAX_MESSAGE_BYTES) return Status.INVALID_FIELD | Status.DNR;
        return slot.dataLength == length ? Status.SUCCESS : Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
    }

    /** Runs AUTH_Send or AUTH_Receive (its data is in the slot); a failed exchange marks the slot to fail the controller. */
    int execute(CommandSlot slot) {
        ByteBuffer data = slot.data();
        DhChapExchange.Outcome outcome = slot.sqe.get(Sqe.FABRICS_TYPE) == TYPE_AUTH_SEND ? exchange.send(data) : exchange.receive(data);
        return switch (outcome) {
            case TOO_SHORT -> Status.INVALID_FIELD | Status.DNR;
            case FAILED -> {
                slot.failsController = true;
                yield Status.SUCCESS;
            }
            case CONTINUE, AUTHENTICATED -> Status.SUCCESS;
        };
    }

    /** For {@code Queue.describe}: none (not required), pending, ok. */
    String describe() {
        return !required ? "none" : exchange.authenticated() ? "ok" : "pending";
    }
}
