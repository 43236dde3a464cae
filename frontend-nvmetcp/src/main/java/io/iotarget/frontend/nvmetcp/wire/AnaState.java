package io.iotarget.frontend.nvmetcp.wire;

/**
 * An ANA group's state on a port: the wire codes of the ANA log page ({@code enum
 * nvme_ana_state}) and the names nvmet's {@code ana_groups/GRPID/ana_state} shows and takes.
 */
public enum AnaState {
    OPTIMIZED(0x01, "optimized"),
    NON_OPTIMIZED(0x02, "non-optimized"),
    INACCESSIBLE(0x03, "inaccessible"),
    PERSISTENT_LOSS(0x04, "persistent-loss"),
    CHANGE(0x0F, "change");

    public final int code;
    public final String text;

    AnaState(int code, String text) {
        this.code = code;
        this.text = text;
    }

    /** The state named {@code text} (surrounding whitespace ignored, as sysfs_streq), or null. */
    public static AnaState named(String text) {
        String v = text.strip();
        for (AnaState s : values()) if (s.text.equals(v)) return s;
        return null;
    }
}
