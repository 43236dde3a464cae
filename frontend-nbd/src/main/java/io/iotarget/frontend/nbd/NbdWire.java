package io.iotarget.frontend.nbd;

/**
 * The NBD protocol's numbers (NetworkBlockDevice/nbd doc/proto.md; digest in
 * shared/reference/nbd-protocol.md). Every integer on the wire is big-endian, which is
 * {@link java.nio.ByteBuffer}'s default order. Layouts are drawn where the classes that read
 * or write them name their offsets. Public where a client in the server's own process needs
 * them (the warm-up's).
 */
public final class NbdWire {
    private NbdWire() {
    }

    // ------------------------------------------------------------ magic numbers
    /** "NBDMAGIC": the first 8 bytes the server sends. */
    public static final long NBD_MAGIC = 0x4e42444d41474943L;
    /** "IHAVEOPT": newstyle's second word, and the prefix of every client option. */
    public static final long IHAVEOPT = 0x49484156454F5054L;
    static final long OPTION_REPLY_MAGIC = 0x3e889045565a9L;
    public static final int REQUEST_MAGIC = 0x25609513;
    public static final int SIMPLE_REPLY_MAGIC = 0x67446698;
    static final int STRUCTURED_REPLY_MAGIC = 0x668e33ef;

    // ------------------------------------------------------------ handshake flags
    static final int FLAG_FIXED_NEWSTYLE = 1;
    static final int FLAG_NO_ZEROES = 1 << 1;
    public static final int FLAG_C_FIXED_NEWSTYLE = 1;
    public static final int FLAG_C_NO_ZEROES = 1 << 1;
    /** The handshake flags this server offers: both. */
    static final int HANDSHAKE_FLAGS = FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES;

    // ------------------------------------------------------------ options
    public static final int OPT_EXPORT_NAME = 1;
    static final int OPT_ABORT = 2;
    static final int OPT_LIST = 3;
    static final int OPT_STARTTLS = 5;
    static final int OPT_INFO = 6;
    static final int OPT_GO = 7;
    static final int OPT_STRUCTURED_REPLY = 8;
    static final int OPT_LIST_META_CONTEXT = 9;
    static final int OPT_SET_META_CONTEXT = 10;

    // ------------------------------------------------------------ option replies
    static final int REP_ACK = 1;
    static final int REP_SERVER = 2;
    static final int REP_INFO = 3;
    static final int REP_META_CONTEXT = 4;
    static final int REP_ERR_UNSUP = 0x8000_0001;
    static final int REP_ERR_POLICY = 0x8000_0002;
    static final int REP_ERR_INVALID = 0x8000_0003;
    static final int REP_ERR_TLS_REQD = 0x8000_0005;
    static final int REP_ERR_UNKNOWN = 0x8000_0006;
    static final int REP_ERR_SHUTDOWN = 0x8000_0007;
    static final int REP_ERR_TOO_BIG = 0x8000_0009;

    static final int INFO_EXPORT = 0;
    static final int INFO_NAME = 1;
    static final int INFO_DESCRIPTION = 2;
    static final int INFO_BLOCK_SIZE = 3;

    // ------------------------------------------------------------ transmission flags
    static final int TFLAG_HAS_FLAGS = 1;
    static final int TFLAG_READ_ONLY = 1 << 1;
    static final int TFLAG_SEND_FLUSH = 1 << 2;
    static final int TFLAG_SEND_FUA = 1 << 3;
    static final int TFLAG_SEND_TRIM = 1 << 5;
    static final int TFLAG_SEND_WRITE_ZEROES = 1 << 6;
    static final int TFLAG_SEND_DF = 1 << 7;
    static final int TFLAG_CAN_MULTI_CONN = 1 << 8;
    static final int TFLAG_SEND_CACHE = 1 << 10;
    static final int TFLAG_SEND_FAST_ZERO = 1 << 11;

    // ------------------------------------------------------------ commands
    public static final int CMD_READ = 0;
    public static final int CMD_WRITE = 1;
    public static final int CMD_DISC = 2;
    static final int CMD_FLUSH = 3;
    public static final int CMD_TRIM = 4;
    static final int CMD_CACHE = 5;
    static final int CMD_WRITE_ZEROES = 6;
    static final int CMD_BLOCK_STATUS = 7;

    static final int CMD_FLAG_FUA = 1;
    static final int CMD_FLAG_NO_HOLE = 1 << 1;
    static final int CMD_FLAG_DF = 1 << 2;
    static final int CMD_FLAG_REQ_ONE = 1 << 3;
    static final int CMD_FLAG_FAST_ZERO = 1 << 4;

    // ------------------------------------------------------------ structured replies
    static final int REPLY_FLAG_DONE = 1;
    static final int REPLY_TYPE_NONE = 0;
    static final int REPLY_TYPE_OFFSET_DATA = 1;
    static final int REPLY_TYPE_BLOCK_STATUS = 5;
    static final int REPLY_TYPE_ERROR = 0x8001;

    // ------------------------------------------------------------ errors
    static final int EPERM = 1;
    static final int EIO = 5;
    static final int EINVAL = 22;
    static final int ENOSPC = 28;
    static final int EOVERFLOW = 75;
    static final int ENOTSUP = 95;
    static final int ESHUTDOWN = 108;

    // ------------------------------------------------------------ metadata contexts
    static final String BASE_ALLOCATION = "base:allocation";
    /** The id this server gives base:allocation when a client selects it. */
    static final int BASE_ALLOCATION_ID = 1;
    static final int STATE_HOLE = 1;
    static final int STATE_ZERO = 1 << 1;

    // ------------------------------------------------------------ sizes and limits
    /** Preferred block size advertised in NBD_INFO_BLOCK_SIZE: the page size clients already favour. */
    static final int PREFERRED_BLOCK_SIZE = 4096;
    /**
     * The default of {@code max_request}, the largest READ/WRITE payload advertised in
     * NBD_INFO_BLOCK_SIZE: 64 MiB, as nbdkit and nbd-server take (the spec's default, what a
     * client assumes when nothing is advertised, is 32 MiB).
     */
    static final int DEFAULT_MAX_REQUEST = 64 << 20;
    /** The smallest {@code max_request}: the spec's SHOULD for the maximum payload. */
    static final int MIN_MAX_REQUEST = 1 << 20;
    /** Strings (export names, queries) may not exceed this (the spec's MUST). */
    static final int MAX_STRING = 4096;
}
