package io.iotarget.iocontrol.file;

import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.tree.KernelParse;

/**
 * The {@code rbps=N wbps=N riops=N wiops=N} body of a per-device line, as blk-throttle's
 * {@code tg_set_limit} reads io.max; io.min reads the same syntax. Tokens are split on
 * whitespace and read 26 characters at a time. Per token, in the kernel's order: no '=' or
 * no decimal digit after it (and, for a ceiling, not "max"): EINVAL; for a ceiling, a value
 * of 0: ERANGE (before the key is looked at, so {@code foo=0} and {@code rbps=0x10} are
 * ERANGE); an unknown key: EINVAL; for a ceiling, a value of 1: EINVAL. Stricter than the
 * kernel (docs/decisions.md): characters after the number ({@code rbps=10k}), a number past
 * 2^64, and a token longer than 26 characters are EINVAL. io.max.burst ({@link Kind#BURST})
 * adds {@code len=SECONDS}: 0 is ERANGE as any ceiling's 0, 1 is allowed, more than
 * {@link #MAX_LEN_SEC} is ERANGE, max or anything but a decimal EINVAL. The line is parsed whole
 * before anything changes.
 */
public final class RateLimits {
    /** The keys, in the order of the array {@link #parse} returns. */
    public static final String[] KEYS = {"rbps", "wbps", "riops", "wiops"};
    public static final int RBPS = 0;
    public static final int WBPS = 1;
    public static final int RIOPS = 2;
    public static final int WIOPS = 3;
    /** {@link Kind#BURST}'s extra key, at this index: how long a full credit lasts at the burst rate, seconds. */
    public static final String LEN_KEY = "len";
    public static final int LEN = 4;
    /** The longest len: a day at the burst rate is far beyond any credit a tenant saves up (EBS gp2's lasts ~30 min). */
    public static final long MAX_LEN_SEC = 86_400;

    /** The kernel reads each token with "%26s". */
    private static final int MAX_TOKEN = 26;

    /** What a value may be. */
    public enum Kind {
        /** io.max: {@code max} (read as 2^64 − 1) or a number above 1. */
        CEILING,
        /** io.min: a number, 0 for none; {@code max} is refused (a minimum of the whole device means nothing). */
        FLOOR,
        /** io.max.burst: as {@link #CEILING}, plus {@link #LEN_KEY}, 1 to {@link #MAX_LEN_SEC} seconds. */
        BURST
    }

    private RateLimits() {
    }

    /**
     * The values given, by {@link #KEYS} index (then {@link #LEN} for {@link Kind#BURST}); null for
     * a key the line does not name.
     *
     * @throws ControlException EINVAL or ERANGE as the class documentation says
     */
    public static Long[] parse(String body, Kind kind) throws ControlException {
        boolean ceiling = kind != Kind.FLOOR;
        boolean burst = kind == Kind.BURST;
        Long[] given = new Long[burst ? KEYS.length + 1 : KEYS.length];
        for (String token : KernelParse.tokens(body)) {
            boolean split = token.length() > MAX_TOKEN;
            String piece = split ? token.substring(0, MAX_TOKEN) : token;
            int eq = piece.indexOf('=');
            if (eq < 0) throw new ControlException(Errno.EINVAL, "'" + token + "' (expected: key=value)");
            String key = piece.substring(0, eq);
            String value = piece.substring(eq + 1);
            boolean max = ceiling && value.equals("max");
            KernelParse.Scanned n = max ? null : KernelParse.scanDecimal(value, 0);
            if (n == null && !max) throw KernelParse.invalid(key, value, ceiling ? "a decimal number or max" : "a decimal number (io.min has no max)");
            long v = n == null ? KernelParse.U64_MAX : n.value();
            if (ceiling && v == 0) throw new ControlException(Errno.ERANGE, key + "=" + value + " (expected: > 0 or max)");
            int k = burst && key.equals(LEN_KEY) ? LEN : indexOf(key);
            if (k < 0) throw new ControlException(Errno.EINVAL, "unknown key '" + key + "' (expected: rbps, wbps, riops" + (burst ? ", wiops or len)" : " or wiops)"));
            if (ceiling && v == 1 && k != LEN) throw new ControlException(Errno.EINVAL, key + "=1 (expected: > 1 or max, as Linux 6.1)");
            if (n != null && (n.end() != value.length() || n.overflow())) throw KernelParse.invalid(key, value, "a decimal number below 2^64" + (ceiling ? " or max" : ""));
            if (split) throw new ControlException(Errno.EINVAL, "'" + token + "' is longer than " + MAX_TOKEN + " characters");
            if (k == LEN) {
                if (max) throw KernelParse.invalid(key, value, "seconds, 1 to " + MAX_LEN_SEC);
                if (Long.compareUnsigned(v, MAX_LEN_SEC) > 0) throw new ControlException(Errno.ERANGE, key + "=" + value + " (expected: seconds, 1 to " + MAX_LEN_SEC + ")");
            }
            given[k] = v;
        }
        return given;
    }

    private static int indexOf(String key) {
        for (int i = 0; i < KEYS.length; i++) if (KEYS[i].equals(key)) return i;
        return -1;
    }
}
