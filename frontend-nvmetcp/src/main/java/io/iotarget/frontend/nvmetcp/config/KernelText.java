package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.model.ControlException;
import io.iotarget.model.tree.KernelParse;

/** The integers of ports, ids and attributes as nvmet parses them (the rest of the kernel's parsing is {@link KernelParse}'s). */
final class KernelText {
    private KernelText() {
    }

    /** kstrtoint with base 10: an optionally signed decimal int. */
    static int integer(String what, String value) throws ControlException {
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw KernelParse.invalid(what, value, "a decimal integer");
        }
    }

    /** kstrtou16 / kstrtou32 with base 0, as nvmet reads ids and attributes: {@link KernelParse#kstrtou64} up to {@code max}. */
    static long unsigned(String what, String value, long max, String expected) throws ControlException {
        long v = KernelParse.kstrtou64(what, value);
        if (Long.compareUnsigned(v, max) > 0) throw KernelParse.invalid(what, value, expected);
        return v;
    }
}
