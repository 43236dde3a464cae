package io.iotarget.iocontrol.policy;

import java.math.BigInteger;

/**
 * The products the policies' budgets and weights need, {@code a × b / c}, computed without
 * overflow. Results that do not fit saturate at {@link Long#MAX_VALUE} where the kernel's u64
 * arithmetic would wrap. Any thread.
 *
 * <p>Three paths: the plain product when it fits in 63 bits; for {@code c ≤ 2^31} the split
 * {@code a = q·c + r}, {@code b = s·c + t}, {@code a·b/c = q·b + r·s + r·t/c} (where
 * {@code r·t < c² ≤ 2^62}); otherwise BigInteger. Only the last allocates, and only operands
 * far outside what the policies see in practice (weights, ns, vtime) reach it.
 */
public final class MulDiv {
    private static final long SPLIT_MAX_DIVISOR = 1L << 31;

    private MulDiv() {
    }

    /**
     * floor(a × b / c) for {@code b ≥ 0} and {@code c > 0}; a negative {@code a} is read as
     * unsigned (≥ 2^63, "unlimited" in practice) and gives {@link Long#MAX_VALUE} unless b is 0.
     */
    public static long floor(long a, long b, long c) {
        return divide(a, b, c, false);
    }

    /** ceil(a × b / c), with the same ranges as {@link #floor}. */
    public static long ceil(long a, long b, long c) {
        return divide(a, b, c, true);
    }

    private static long divide(long a, long b, long c, boolean roundUp) {
        if (a < 0) return b == 0 ? 0 : Long.MAX_VALUE;
        long product = a * b;
        if (Math.multiplyHigh(a, b) == 0 && product >= 0) return roundUp ? Math.ceilDiv(product, c) : product / c;
        if (c <= SPLIT_MAX_DIVISOR) {
            long r = a % c;
            long t = b % c;
            return sum(a / c, b, r, b / c, roundUp ? Math.ceilDiv(r * t, c) : r * t / c);
        }
        BigInteger[] qr = BigInteger.valueOf(a).multiply(BigInteger.valueOf(b)).divideAndRemainder(BigInteger.valueOf(c));
        BigInteger q = roundUp && qr[1].signum() != 0 ? qr[0].add(BigInteger.ONE) : qr[0];
        return q.bitLength() < 64 ? q.longValue() : Long.MAX_VALUE;
    }

    /** q·b + r·s + tail, saturated. */
    private static long sum(long q, long b, long r, long s, long tail) {
        long qb = q * b;
        if (Math.multiplyHigh(q, b) != 0 || qb < 0) return Long.MAX_VALUE;
        long rs = r * s;
        if (Math.multiplyHigh(r, s) != 0 || rs < 0) return Long.MAX_VALUE;
        long total = qb + rs;
        if (total < 0) return Long.MAX_VALUE;
        total += tail;
        return total < 0 ? Long.MAX_VALUE : total;
    }
}
