package io.iotarget.model;

/**
 * Request flags, a bit set in {@link IoRequest#flags}. The first four carry the kernel's
 * meanings ({@code REQ_FUA}, {@code REQ_PREFLUSH}, {@code REQ_SYNC}, {@code REQ_META}); the
 * rest are write-zeroes variants the front ends need.
 */
public final class IoFlags {
    /** Force unit access: the data is durable when the request completes. */
    public static final int FUA = 1;
    /** Flush the device's volatile cache before this request. */
    public static final int PREFLUSH = 1 << 1;
    /** Someone waits for this request. */
    public static final int SYNC = 1 << 2;
    /**
     * Metadata: like the kernel's {@code bio_issue_as_root_blkg}, never waits in io.max,
     * io.latency or iocost (queued behind its group's data it would invert priorities); its
     * cost is charged anyway — as iocost debt, as io.latency delay — and the group pays later.
     */
    public static final int META = 1 << 3;
    /** Write-zeroes must leave the range allocated (NBD_CMD_FLAG_NO_HOLE, NVMe without DEAC). */
    public static final int NO_UNMAP = 1 << 4;
    /** Write-zeroes must fail fast rather than write zeroes slowly (NBD_CMD_FLAG_FAST_ZERO). */
    public static final int FAST_ZERO = 1 << 5;

    private IoFlags() {
    }

    public static boolean has(int flags, int flag) {
        return (flags & flag) != 0;
    }
}
