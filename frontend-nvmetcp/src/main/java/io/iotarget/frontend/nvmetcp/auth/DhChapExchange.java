package io.iotarget.frontend.nvmetcp.auth;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.function.Supplier;

/**
 * The controller's side of DH-HMAC-CHAP on one queue: the messages carried by AUTH_Send
 * ({@link #send}) and AUTH_Receive ({@link #receive}), in the order the package doc draws,
 * with nvmet's rules for what is refused and how.
 *
 * <p>A failure found while taking a message (a bad Negotiate or Reply) is answered by the
 * next AUTH_Receive with a Failure1 message, as nvmet does; a message out of sequence, or the
 * host's own Failure2, fails at once. Either way the queue is unauthenticated from that moment
 * and the caller closes the queue once the command's response is out ({@link Outcome#FAILED}).
 * Negotiate restarts the exchange at any step (re-authentication): the queue keeps its
 * authentication until the new exchange fails.
 *
 * <p>Threads: any thread, one call at a time per exchange (the methods synchronize; a host
 * that pipelines AUTH commands is served in arrival order of the calls). A call may take
 * tens of milliseconds (DH for ffdhe8192). The credentials supplier is called with the exchange's
 * monitor held.
 */
public final class DhChapExchange {
    /** What the queue does once the command that carried a message completes. */
    public enum Outcome {
        /** The exchange goes on (a failure found now is reported by the next AUTH_Receive). */
        CONTINUE,
        /** The queue is authenticated from now on. */
        AUTHENTICATED,
        /** Authentication failed: close the queue after this command's response. */
        FAILED,
        /** AUTH_Receive's buffer cannot hold the message: the command fails, the exchange is unchanged. */
        TOO_SHORT
    }

    /** What the exchange expects next. */
    private enum Step { NEGOTIATE, CHALLENGE, REPLY, SUCCESS1, SUCCESS2, FAILURE1, FAILED }

    /*  Every message starts with AUTH_TYPE u8 @0, AUTH_ID u8 @1, rsvd u16, T_ID u16 @4 (LE).
     *
     *  Negotiate (host)  6 SC_C u8   7 NAPD u8   8 descriptor: AUTHID u8 @8, HALEN u8 @10, DHLEN u8 @11,
     *                    hash ids @12 (30 slots), DH group ids @42 (30 slots)              = 72 bytes
     *  Challenge         6 HL u8   8 HASHID u8   9 DHGID u8   10 DHVLEN u16   12 SEQNUM u32   16 C1[HL], DH value[DHVLEN]
     *  Reply (host)      6 HL u8   8 CVALID u8   10 DHVLEN u16   12 SEQNUM u32 (S2)   16 R1[HL], C2[HL], DH value[DHVLEN]
     *  Success1          6 HL u8   8 RVALID u8   16 R2[HL] when RVALID
     *  Success2 (host)   16 bytes, nothing but the header
     *  Failure1/2        6 RESCODE u8 (1 = failed)   7 RESCODE_EXP u8 (the reason below)          = 8 bytes */
    static final int TYPE_COMMON = 0x00;
    static final int TYPE_DHCHAP = 0x01;
    static final int MESSAGE_NEGOTIATE = 0x00;
    static final int MESSAGE_CHALLENGE = 0x01;
    static final int MESSAGE_REPLY = 0x02;
    static final int MESSAGE_SUCCESS1 = 0x03;
    static final int MESSAGE_SUCCESS2 = 0x04;
    static final int MESSAGE_FAILURE2 = 0xF0;
    static final int MESSAGE_FAILURE1 = 0xF1;

    static final int AUTH_TYPE = 0;
    static final int AUTH_ID = 1;
    static final int T_ID = 4;
    static final int NEGOTIATE_SC_C = 6;
    static final int NEGOTIATE_NAPD = 7;
    static final int NEGOTIATE_AUTH_ID = 8;
    static final int NEGOTIATE_HALEN = 10;
    static final int NEGOTIATE_DHLEN = 11;
    static final int NEGOTIATE_HASH_IDS = 12;
    static final int NEGOTIATE_DH_IDS = 42;
    static final int NEGOTIATE_BYTES = 72;
    /** NVME_AUTH_DHCHAP_MAX_HASH_IDS / _DH_IDS: slots per list in the descriptor. */
    static final int MAX_IDS = 30;
    static final int DHCHAP_AUTH_ID = 0x01;
    static final int HL = 6;
    static final int CHALLENGE_HASH_ID = 8;
    static final int CHALLENGE_DH_GROUP = 9;
    static final int DHVLEN = 10;
    static final int SEQNUM = 12;
    static final int REPLY_CVALID = 8;
    static final int SUCCESS1_RVALID = 8;
    /** Challenge, Reply, Success1 and Success2 headers; values follow at this offset. */
    static final int HEADER_BYTES = 16;
    static final int FAILURE_RESCODE = 6;
    static final int FAILURE_RESCODE_EXPLANATION = 7;
    static final int FAILURE_BYTES = 8;
    static final int RESCODE_FAILED = 0x01;

    /** Failure reason explanations (RESCODE_EXP, {@code NVME_AUTH_DHCHAP_FAILURE_*}). */
    public static final int REASON_FAILED = 0x01;
    public static final int REASON_NOT_USABLE = 0x02;
    public static final int REASON_CONCAT_MISMATCH = 0x03;
    public static final int REASON_HASH_UNUSABLE = 0x04;
    public static final int REASON_DHGROUP_UNUSABLE = 0x05;
    public static final int REASON_INCORRECT_PAYLOAD = 0x06;
    public static final int REASON_INCORRECT_MESSAGE = 0x07;

    private static final byte[] HOST_LABEL = "HostHost".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] CONTROLLER_LABEL = "Controller".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ZERO = {0};

    private final byte[] hostNqn;
    private final byte[] subsystemNqn;
    private final String hostNqnText;
    private final String subsystemNqnText;
    private final Supplier<DhChapCredentials> credentials;
    private final SecureRandom random;

    // Guarded by this.
    private Step step = Step.NEGOTIATE;
    private int transactionId;
    private int reason;
    private DhChapCredentials current;
    private int s1;
    private byte[] c1;
    private DhGroup.Ephemeral dhKey;
    private byte[] sessionKey;
    private int s2;
    /** The host's challenge when it asked for bidirectional authentication, else null. */
    private byte[] c2;

    private volatile boolean authenticated;

    /**
     * @param credentials read at every Negotiate (so re-authentication uses the configuration
     *                    of that moment); null when the host has no key here
     */
    public DhChapExchange(String hostNqn, String subsystemNqn, Supplier<DhChapCredentials> credentials, SecureRandom random) {
        this.hostNqnText = hostNqn;
        this.subsystemNqnText = subsystemNqn;
        this.hostNqn = hostNqn.getBytes(StandardCharsets.UTF_8);
        this.subsystemNqn = subsystemNqn.getBytes(StandardCharsets.UTF_8);
        this.credentials = credentials;
        this.random = random;
    }

    /** The queue may run commands: the last exchange succeeded and none has failed since. Any thread. */
    public boolean authenticated() {
        return authenticated;
    }

    /** Takes the message of an AUTH_Send ({@code message}: position to limit, the TL bytes). */
    public synchronized Outcome send(ByteBuffer message) {
        ByteBuffer m = message.slice().order(ByteOrder.LITTLE_ENDIAN);
        if (step == Step.FAILED) return Outcome.FAILED;
        if (m.remaining() < T_ID + 2) return fail(REASON_INCORRECT_PAYLOAD);
        int type = m.get(AUTH_TYPE) & 0xFF, id = m.get(AUTH_ID) & 0xFF;
        if (type == TYPE_COMMON && id == MESSAGE_NEGOTIATE) return negotiate(m);
        boolean expected = type == TYPE_DHCHAP && (step == Step.REPLY && id == MESSAGE_REPLY || step == Step.SUCCESS2 && id == MESSAGE_SUCCESS2);
        if (!expected) return fail(REASON_INCORRECT_MESSAGE);          // Failure2, or out of sequence
        if ((m.getShort(T_ID) & 0xFFFF) != transactionId) return failure1(REASON_INCORRECT_PAYLOAD);
        return step == Step.REPLY ? reply(m) : success2();
    }

    /**
     * Fills the buffer of an AUTH_Receive ({@code out}: position to limit, the AL bytes; what
     * the message does not use is zeroed).
     */
    public synchronized Outcome receive(ByteBuffer out) {
        ByteBuffer o = out.slice().order(ByteOrder.LITTLE_ENDIAN);
        int needed = switch (step) {
            case CHALLENGE -> HEADER_BYTES + current.hash().lengthBytes() + current.group().valueBytes();
            case SUCCESS1 -> HEADER_BYTES + (c2 != null ? current.hash().lengthBytes() : 0);
            default -> FAILURE_BYTES;
        };
        if (o.remaining() < needed) return Outcome.TOO_SHORT;
        for (int i = 0; i < o.limit(); i++) o.put(i, (byte) 0);
        switch (step) {
            case CHALLENGE -> challenge(o);
            case SUCCESS1 -> {
                return success1(o);
            }
            case FAILURE1, FAILED -> {
                failureMessage(o);
                step = Step.FAILED;
                return Outcome.FAILED;
            }
            default -> {                                         // a receive where the host should send
                fail(REASON_FAILED);
                failureMessage(o);
                return Outcome.FAILED;
            }
        }
        return Outcome.CONTINUE;
    }

    // ---------------------------------------------------------------- messages

    private Outcome negotiate(ByteBuffer m) {
        forgetExchange();
        transactionId = m.getShort(T_ID) & 0xFFFF;
        if (m.remaining() < NEGOTIATE_BYTES) return failure1(REASON_INCORRECT_PAYLOAD);
        if (m.get(NEGOTIATE_SC_C) != 0) return failure1(REASON_CONCAT_MISMATCH);     // no secure channel to concatenate with
        if (m.get(NEGOTIATE_NAPD) != 1) return failure1(REASON_HASH_UNUSABLE);
        if (m.get(NEGOTIATE_AUTH_ID) != DHCHAP_AUTH_ID) return failure1(REASON_INCORRECT_PAYLOAD);
        int hashes = m.get(NEGOTIATE_HALEN) & 0xFF, groups = m.get(NEGOTIATE_DHLEN) & 0xFF;
        if (hashes > MAX_IDS || groups > MAX_IDS) return failure1(REASON_INCORRECT_PAYLOAD);
        DhChapCredentials c = credentials.get();
        if (c == null) return failure1(REASON_NOT_USABLE);
        if (!offered(m, NEGOTIATE_HASH_IDS, hashes, c.hash().id())) return failure1(REASON_HASH_UNUSABLE);
        if (!offered(m, NEGOTIATE_DH_IDS, groups, c.group().id())) return failure1(REASON_DHGROUP_UNUSABLE);
        current = c;
        step = Step.CHALLENGE;
        return Outcome.CONTINUE;
    }

    private static boolean offered(ByteBuffer m, int at, int count, int id) {
        for (int i = 0; i < count; i++) if ((m.get(at + i) & 0xFF) == id) return true;
        return false;
    }

    private void challenge(ByteBuffer o) {
        DhChapHash hash = current.hash();
        DhGroup group = current.group();
        s1 = sequenceNumber();
        c1 = new byte[hash.lengthBytes()];
        random.nextBytes(c1);
        dhKey = group == DhGroup.NULL ? null : group.newKey(random);
        header(o, TYPE_DHCHAP, MESSAGE_CHALLENGE);
        o.put(HL, (byte) hash.lengthBytes());
        o.put(CHALLENGE_HASH_ID, (byte) hash.id());
        o.put(CHALLENGE_DH_GROUP, (byte) group.id());
        o.putShort(DHVLEN, (short) group.valueBytes());
        o.putInt(SEQNUM, s1);
        o.put(HEADER_BYTES, c1);
        if (dhKey != null) o.put(HEADER_BYTES + c1.length, dhKey.publicValue());
        step = Step.REPLY;
    }

    private Outcome reply(ByteBuffer m) {
        DhChapHash hash = current.hash();
        if (m.remaining() < HEADER_BYTES) return failure1(REASON_INCORRECT_PAYLOAD);
        int hl = m.get(HL) & 0xFF;
        int dhvlen = m.getShort(DHVLEN) & 0xFFFF;
        if (HEADER_BYTES + 2 * hl + dhvlen > m.remaining()) return failure1(REASON_INCORRECT_PAYLOAD);
        if (hl != hash.lengthBytes()) return failure1(REASON_FAILED);
        if ((dhKey == null) != (dhvlen == 0)) return failure1(REASON_INCORRECT_PAYLOAD);
        if (dhKey != null) {
            byte[] value = new byte[dhvlen];
            m.get(HEADER_BYTES + 2 * hl, value);
            sessionKey = dhKey.sessionKey(value);
            if (sessionKey == null) return failure1(REASON_DHGROUP_UNUSABLE);
        }
        byte[] r1 = new byte[hl];
        m.get(HEADER_BYTES, r1);
        byte[] expected = response(current.hostKey().transformed(hostNqnText), c1, s1, HOST_LABEL, hostNqn, subsystemNqn);
        boolean match = DhChapHash.same(expected, r1);
        DhChapHash.wipe(expected);
        if (!match) return failure1(REASON_FAILED);
        int seq = m.getInt(SEQNUM);
        // CVALID with SEQNUM 0 carries C2 for a TLS PSK, not for a response: not bidirectional.
        if (m.get(REPLY_CVALID) != 0 && seq != 0) {
            if (current.controllerKey() == null) return failure1(REASON_FAILED);       // nothing to prove ourselves with
            s2 = seq;
            c2 = new byte[hl];
            m.get(HEADER_BYTES + hl, c2);
            step = Step.SUCCESS1;
            return Outcome.CONTINUE;
        }
        authenticated = true;
        step = Step.SUCCESS1;
        return Outcome.AUTHENTICATED;
    }

    private Outcome success1(ByteBuffer o) {
        DhChapHash hash = current.hash();
        header(o, TYPE_DHCHAP, MESSAGE_SUCCESS1);
        o.put(HL, (byte) hash.lengthBytes());
        if (c2 == null) {
            forgetExchange();
            step = Step.NEGOTIATE;
            return Outcome.CONTINUE;
        }
        byte[] r2 = response(current.controllerKey().transformed(subsystemNqnText), c2, s2, CONTROLLER_LABEL, subsystemNqn, hostNqn);
        o.put(SUCCESS1_RVALID, (byte) 1);
        o.put(HEADER_BYTES, r2);
        step = Step.SUCCESS2;
        return Outcome.CONTINUE;
    }

    private Outcome success2() {
        forgetExchange();
        authenticated = true;
        step = Step.NEGOTIATE;
        return Outcome.AUTHENTICATED;
    }

    // ---------------------------------------------------------------- computations

    /**
     * HMAC(key, Ca || S || T_ID || 0x00 || label || nqn1 || 0x00 || nqn2), where Ca is the
     * challenge, augmented with the session key when there was DH: HMAC(H(Ks), C).
     */
    private byte[] response(byte[] key, byte[] challenge, int sequence, byte[] label, byte[] nqn1, byte[] nqn2) {
        DhChapHash hash = current.hash();
        byte[] augmented = challenge;
        if (sessionKey != null) {
            byte[] hashedKey = hash.digest(sessionKey);
            augmented = hash.hmac(hashedKey, challenge);
            DhChapHash.wipe(hashedKey);
        }
        byte[] numbers = ByteBuffer.allocate(7).order(ByteOrder.LITTLE_ENDIAN)
                .putInt(sequence).putShort((short) transactionId).put((byte) 0).array();     // SC_C = 0: no secure channel
        byte[] r = hash.hmac(key, augmented, numbers, label, nqn1, ZERO, nqn2);
        DhChapHash.wipe(key);
        return r;
    }

    /** A sequence number: random, never 0 (0 means "no bidirectional authentication" in a Reply). */
    private int sequenceNumber() {
        int s;
        do s = random.nextInt(); while (s == 0);
        return s;
    }

    // ---------------------------------------------------------------- failures

    /** A failure the next AUTH_Receive reports as Failure1. */
    private Outcome failure1(int why) {
        forgetExchange();
        authenticated = false;
        reason = why;
        step = Step.FAILURE1;
        return Outcome.CONTINUE;
    }

    /** A failure that ends the queue's authentication now. */
    private Outcome fail(int why) {
        forgetExchange();
        authenticated = false;
        reason = why;
        step = Step.FAILED;
        return Outcome.FAILED;
    }

    private void failureMessage(ByteBuffer o) {
        header(o, TYPE_COMMON, MESSAGE_FAILURE1);
        o.put(FAILURE_RESCODE, (byte) RESCODE_FAILED);
        o.put(FAILURE_RESCODE_EXPLANATION, (byte) reason);
    }

    private void header(ByteBuffer o, int type, int id) {
        o.put(AUTH_TYPE, (byte) type);
        o.put(AUTH_ID, (byte) id);
        o.putShort(T_ID, (short) transactionId);
    }

    /** Drops the values of the exchange in progress. */
    private void forgetExchange() {
        DhChapHash.wipe(c1);
        DhChapHash.wipe(c2);
        DhChapHash.wipe(sessionKey);
        c1 = null;
        c2 = null;
        sessionKey = null;
        dhKey = null;
    }
}
