package io.iotarget.iocontrol.policy.cost;

import io.iotarget.model.IoOp;

import static io.iotarget.iocontrol.policy.cost.CostTunables.PAGE_SIZE;
import static io.iotarget.iocontrol.policy.cost.CostTunables.VTIME_PER_SEC;

/**
 * io.cost.model's "linear" model: what the device can do per direction — sequential bytes per
 * second ({@code bps}), sequential and random 4 KiB IOs per second ({@code seqiops},
 * {@code randiops}) — and the cost coefficients derived from it, in vtime:
 * <pre>
 *   page   = ceil(VTIME_PER_SEC / ceil(bps / 4096))       one 4 KiB page of transfer
 *   seqio  = max(ceil(VTIME_PER_SEC / seqiops) - page, 0)  the per-IO part of a sequential IO
 *   randio = max(ceil(VTIME_PER_SEC / randiops) - page, 0) the per-IO part of a random IO
 * </pre>
 * so a 4 KiB IO costs exactly {@code 1 s / iops} of device time. A zero parameter gives a zero
 * coefficient. Immutable; any thread.
 */
final class LinearModel {
    static final int READ = 0;
    static final int WRITE = 1;

    /** Costed direction by IoOp ordinal: READ / WRITE, or -1 for ops iocost does not cost. */
    private static final int[] DIRECTION = new int[IoOp.count()];

    static {
        for (IoOp op : IoOp.values()) {
            DIRECTION[op.ordinal()] = switch (op) {
                // The kernel costs only REQ_OP_READ and REQ_OP_WRITE bios with data: flushes are
                // empty, discard and write-zeroes are ops of their own.
                case READ, CACHE, VERIFY, COMPARE, PASSTHROUGH_IN -> READ;
                case WRITE, PASSTHROUGH_OUT -> WRITE;
                case FLUSH, DISCARD, WRITE_ZEROES -> -1;
            };
        }
    }

    /** The user-visible parameters: [direction][bps, seqiops, randiops]. */
    private final long[][] parameters;
    /** Derived: [direction][page, seqio, randio]. */
    private final long[][] coefficients = new long[2][3];

    LinearModel(long rbps, long rseqiops, long rrandiops, long wbps, long wseqiops, long wrandiops) {
        this.parameters = new long[][]{{rbps, rseqiops, rrandiops}, {wbps, wseqiops, wrandiops}};
        for (int dir = READ; dir <= WRITE; dir++) {
            long[] p = parameters[dir];
            long page = p[0] == 0 ? 0 : Math.ceilDiv(VTIME_PER_SEC, ceilDivUnsigned(p[0], PAGE_SIZE));
            coefficients[dir][0] = page;
            coefficients[dir][1] = perIo(p[1], page);
            coefficients[dir][2] = perIo(p[2], page);
        }
    }

    /** The direction whose coefficients cost {@code op}: {@link #READ}, {@link #WRITE}, or -1 when iocost does not cost it. */
    static int direction(IoOp op) {
        return DIRECTION[op.ordinal()];
    }

    private static long perIo(long iops, long page) {
        if (iops == 0) return 0;
        long whole = Long.compareUnsigned(iops, VTIME_PER_SEC) > 0 ? 1 : Math.ceilDiv(VTIME_PER_SEC, iops);
        return whole > page ? whole - page : 0;
    }

    /** ceil(a / b) with {@code a} read as unsigned (u64 model parameters). */
    private static long ceilDivUnsigned(long a, long b) {
        long q = Long.divideUnsigned(a, b);
        return Long.remainderUnsigned(a, b) == 0 ? q : q + 1;
    }

    /** bps, seqiops or randiops (index 0, 1, 2) of a direction, as written to io.cost.model (u64). */
    long parameter(int dir, int index) {
        return parameters[dir][index];
    }

    long pageCost(int dir) {
        return coefficients[dir][0];
    }

    long seqioCost(int dir) {
        return coefficients[dir][1];
    }

    long randioCost(int dir) {
        return coefficients[dir][2];
    }

    /** A copy with some parameters replaced: {@code given[dir*3 + index]}, null where unchanged. */
    LinearModel with(Long[] given) {
        long[] v = new long[6];
        for (int i = 0; i < 6; i++) v[i] = given[i] != null ? given[i] : parameters[i / 3][i % 3];
        return new LinearModel(v[0], v[1], v[2], v[3], v[4], v[5]);
    }
}
