package io.iotarget.model;

/**
 * What a request does. Each kind is classified the way the kernel classifies the bio it would
 * become, so io.stat and io.max treat it exactly as Linux would:
 *
 * <pre>
 *  kind             io.stat bucket   io.max direction  bytes for bps   kernel analogue
 *  READ             read             read              length          REQ_OP_READ
 *  WRITE            write            write             length          REQ_OP_WRITE
 *  FLUSH            write (0 bytes)  write             0               empty REQ_OP_WRITE|REQ_PREFLUSH
 *  DISCARD          discard          write             512             REQ_OP_DISCARD
 *  WRITE_ZEROES     write            write             length          REQ_OP_WRITE_ZEROES
 *  CACHE            read             read              length          readahead into the cache (NBD_CMD_CACHE)
 *  VERIFY           read             read              length          media read without transfer (NVMe Verify)
 *  COMPARE          read             read              length          media read compared to host data
 *  PASSTHROUGH_IN   read             read              length          REQ_OP_DRV_IN, charged as in seed 000
 *  PASSTHROUGH_OUT  write            write             length          REQ_OP_DRV_OUT, charged as in seed 000
 * </pre>
 *
 * A flush moves no bytes but is one write IO: nvmet turns an NVMe Flush into an empty
 * {@code REQ_OP_WRITE | REQ_PREFLUSH} bio, which {@code blk_cgroup_bio_start} counts as
 * {@code wios += 1}, and blk-throttle charges against wiops.
 */
public enum IoOp {
    READ(StatBucket.READ, Direction.READ, true, false),
    WRITE(StatBucket.WRITE, Direction.WRITE, true, true),
    FLUSH(StatBucket.WRITE, Direction.WRITE, false, false),
    DISCARD(StatBucket.DISCARD, Direction.WRITE, false, true),
    WRITE_ZEROES(StatBucket.WRITE, Direction.WRITE, false, true),
    CACHE(StatBucket.READ, Direction.READ, false, false),
    VERIFY(StatBucket.READ, Direction.READ, false, false),
    COMPARE(StatBucket.READ, Direction.READ, true, false),
    PASSTHROUGH_IN(StatBucket.READ, Direction.READ, true, false),
    PASSTHROUGH_OUT(StatBucket.WRITE, Direction.WRITE, true, true);

    /** The three io.stat buckets: rbytes/rios, wbytes/wios, dbytes/dios. */
    public enum StatBucket { READ, WRITE, DISCARD }

    /** blk-throttle's {@code bio_data_dir}: which of io.max's read or write limits apply. */
    public enum Direction { READ, WRITE }

    /** Bytes blk-throttle charges a discard against wbps, whatever its length ({@code throtl_bio_data_size}). */
    public static final long DISCARD_THROTTLE_BYTES = 512;

    private static final IoOp[] VALUES = values();

    private final StatBucket statBucket;
    private final Direction direction;
    private final boolean carriesData;
    private final boolean modifiesMedia;

    IoOp(StatBucket statBucket, Direction direction, boolean carriesData, boolean modifiesMedia) {
        this.statBucket = statBucket;
        this.direction = direction;
        this.carriesData = carriesData;
        this.modifiesMedia = modifiesMedia;
    }

    public StatBucket statBucket() {
        return statBucket;
    }

    public Direction direction() {
        return direction;
    }

    /** True when the request needs a data buffer of {@code length} bytes (to fill or to send). */
    public boolean carriesData() {
        return carriesData;
    }

    /** True when the op changes what the device stores; refused on read-only devices. */
    public boolean modifiesMedia() {
        return modifiesMedia;
    }

    /** Bytes this op charges against rbps/wbps for a request of {@code length} bytes. */
    public long throttleBytes(long length) {
        return this == DISCARD ? DISCARD_THROTTLE_BYTES : length;
    }

    public static int count() {
        return VALUES.length;
    }
}
