package io.iotarget.testkit;

import org.opentest4j.TestAbortedException;

/**
 * The one rule for what a test needs from its machine (a tool, root, a loop device, io_uring, a
 * kernel call, the VM harness): on a developer's machine a missing prerequisite skips the test,
 * saying why; under CI ({@code CI=true}), whose machines are set up with every prerequisite, it
 * fails it, so that no test passes there by not running. Any thread may call.
 */
public final class Prerequisites {
    private Prerequisites() {
    }

    /** True when this run is CI's ({@code CI=true}), where every prerequisite must be met. */
    public static boolean ci() {
        return "true".equals(System.getenv("CI"));
    }

    /**
     * Returns when {@code met}; otherwise skips the calling test with {@code missing} (what is
     * missing and how to get it), or under CI fails it with the same message.
     */
    public static void require(boolean met, String missing) {
        if (met) return;
        if (ci()) throw new AssertionError("prerequisite missing under CI=true: " + missing);
        throw new TestAbortedException("prerequisite missing (CI=true fails instead): " + missing);
    }
}
