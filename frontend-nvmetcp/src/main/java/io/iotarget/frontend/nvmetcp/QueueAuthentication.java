package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.wire.Sqe;
import io.iotarget.frontend.nvmetcp.wire.Status;
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
 *  Queue.precheck: AUTH_Send/AUTH_Receive ──► precheck (SECP, SPSP, TL/AL against the SGL;
 *                                                  one at a time per queue)
 *                       anything else          ──► admits? else Authentication Required | DNR
 *  Queue.execute:       AUTH_Send/AUTH_Receive ──► submit: the target's DH threads run execute
 *  Queue.sent:          a response marked closesQueue ──► this queue closes once it is out
 * </pre>
 * A queue must authenticate when its controller has credentials: the subsystem lists the host
 * in allowed_hosts and the host has a {@code dhchap_key} (never on the discovery subsystem or
 * with attr_allow_any_host=1, as nvmet's {@code nvmet_setup_auth}). Until then it runs only
 * fabrics commands (Property Get/Set on the admin queue, as nvmet, and the AUTH commands);
 * everything else fails with Authentication Required.
 *
 * <p>A failed exchange closes its own queue, and so does a queue that has not authenticated
 * within {@link #DEADLINE_MS} of its Connect: never the controller's other queues, which
 * proved themselves (nvmet fails the whole controller, so a host that knows only another's
 * NQN and host ID could close that host's queues with one bad message on a queue of its own).
 * The admin queue closing still takes its controller along, as any admin queue close does.
 *
 * <p>Threads: {@link #submit} and {@link #precheck} on the queue's event loop, the exchange
 * on the target's authentication threads; {@link #admits} and {@link #authenticating} are
 * volatile reads.
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
    /** An AUTH command of this queue is with the DH threads: a second one is refused, not queued. */
    private volatile boolean busy;

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

    /** After the Connect: a queue that has not authenticated by the deadline closes ({@link Queue#authenticationExpired}). */
    public void startDeadline(Queue queue) {
        if (required) queue.target.after(queue.target.authenticationDeadlineMs, queue::authenticationExpired);
    }

    static boolean isExchange(CommandSlot slot) {
        if (Sqe.opcode(slot.sqe) != Sqe.OPCODE_FABRICS) return false;
        int type = slot.sqe.get(Sqe.FABRICS_TYPE);
        return type == TYPE_AUTH_SEND || type == TYPE_AUTH_RECEIVE;
    }

    /** The queue must authenticate and has not yet: the admin queue's keep-alive waits for it. */
    boolean authenticating() {
        return required && !exchange.authenticated();
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
        if (slot.dataLength != length) return Status.SGL_DATA_LENGTH_INVALID | Status.DNR;
        return busy ? Status.COMMAND_SEQUENCE_ERROR | Status.DNR : Status.SUCCESS;     // a host waits for each answer
    }

    /**
     * Hands AUTH_Send or AUTH_Receive (its data in the slot) to the DH threads, which answer
     * through {@code queue.respond}; a queue closed meanwhile costs them no DH (its slot is only
     * freed). Loop thread, after {@link #precheck}.
     */
    void submit(Queue queue, CommandSlot slot) {
        busy = true;
        queue.target.authenticate(() -> {
            try {
                slot.status = queue.isClosed() ? Status.ABORT_REQUESTED : execute(slot);
            } catch (RuntimeException e) {
                queue.target.authenticationFailed(e);
                slot.status = Status.INTERNAL;
            }
            busy = false;
            queue.respond(slot);
        });
    }

    /** Runs AUTH_Send or AUTH_Receive (its data is in the slot); a failed exchange marks the slot to close the queue. */
    private int execute(CommandSlot slot) {
        ByteBuffer data = slot.data();
        DhChapExchange.Outcome outcome = slot.sqe.get(Sqe.FABRICS_TYPE) == TYPE_AUTH_SEND ? exchange.send(data) : exchange.receive(data);
        return switch (outcome) {
            case TOO_SHORT -> Status.INVALID_FIELD | Status.DNR;
            case FAILED -> {
                slot.closesQueue = true;
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
