package io.iotarget.frontend.nvmetcp;

import io.iotarget.model.ControlException;
import io.iotarget.model.tree.KernelParse;

/** The kernel's kstrtobool and kstrtoint as configfs attributes apply them (the rest is {@link KernelParse}'s). */
final class KernelText {
    private KernelText() {
    }

    /** kstrtobool: 1/y/Y/t/T/on are true, 0/n/N/f/F/off false. */
    static boolean bool(String what, String value) throws ControlException {
        String v = value.strip();
        if (v.isEmpty()) throw KernelParse.invalid(what, value, "0 or 1");
        return switch (v.charAt(0)) {
            case '1', 'y', 'Y', 't', 'T' -> true;
            case '0', 'n', 'N', 'f', 'F' -> false;
            case 'o', 'O' -> {
                if (v.length() > 1 && (v.charAt(1) == 'n' || v.charAt(1) == 'N')) yield true;
                if (v.length() > 1 && (v.charAt(1) == 'f' || v.charAt(1) == 'F')) yield false;
                throw KernelParse.invalid(what, value, "0 or 1");
            }
            default -> throw KernelParse.invalid(what, value, "0 or 1");
        };
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
