package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.model.ControlException;
import io.iotarget.model.tree.KernelParse;

/** The port parameters' integers (the rest of the kernel's parsing is {@link KernelParse}'s). */
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
}
