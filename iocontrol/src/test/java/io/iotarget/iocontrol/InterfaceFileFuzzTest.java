package io.iotarget.iocontrol;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.iotarget.model.ControlException;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Coverage-guided fuzz target for every interface file of the group tree (and the paths that
 * name them): a write either succeeds — and then what reads back, written again line by line,
 * reads back the same — or fails with a {@link ControlException} that carries an errno and a
 * message, never another exception; reads never fail on an existing file; a refused write
 * changes nothing (but for the one kernel ordering docs/decisions.md keeps).
 */
class InterfaceFileFuzzTest {
    private static final List<String> FILES = List.of("io.max", "io.weight", "io.cost.qos", "io.cost.model", "io.stat",
            "cgroup.subtree_control", "cgroup.controllers", "cgroup.events", "cgroup.stat", "cgroup.max.descendants",
            "cgroup.max.depth");
    private static final List<String> DIRECTORIES = List.of("", "a/", "a/b/");

    @FuzzTest
    void writesAcceptAndReadBackOrRefuseWithAnErrno(FuzzedDataProvider data) throws Exception {
        ControllerHarness h = new ControllerHarness();
        h.group("a/b");
        for (int step = 0; step < 4 && data.remainingBytes() > 0; step++) {
            String path = data.consumeBoolean() ? data.pickValue(DIRECTORIES) + data.pickValue(FILES) : data.consumeString(64);
            String value = data.consumeString(200);
            String before = readOrNull(h, path);
            try {
                h.controller.write(path, value);
            } catch (ControlException e) {
                checkRefusal(e);
                assertUnchangedByRefusal(path, value, before, readOrNull(h, path));
                continue;
            }
            String after = readOrNull(h, path);
            // An empty write is taken by every file, read-only ones too (as Linux 6.1's), and changes nothing: no text to round-trip.
            if (value.isEmpty() || after == null || !path.substring(path.lastIndexOf('/') + 1).startsWith("io.")) continue;
            for (String line : after.split("\n")) {
                if (line.isEmpty()) continue;
                try {
                    h.controller.write(path, line);
                } catch (ControlException e) {
                    throw new AssertionError(path + ": what reads back (" + line + ") is refused: " + e.getMessage(), e);
                }
            }
            assertEquals(userControlled(after), userControlled(readOrNull(h, path)), path + " reads back the same after its own text is written back");
        }
        for (String dir : DIRECTORIES) {
            for (String file : FILES) readOrNull(h, dir + file);
        }
    }

    /**
     * A refused write changes nothing, with the one kernel ordering docs/decisions.md keeps: a
     * write to io.cost.qos or io.cost.model naming a device sets iocost up there (a line with the
     * built-in values) before its tokens fail. Then what was there before is still there.
     */
    private static void assertUnchangedByRefusal(String path, String value, String before, String after) {
        String why = "a refused write changes nothing: " + path + " <- " + value;
        if (before != null && after != null && (path.endsWith("io.cost.qos") || path.endsWith("io.cost.model"))) {
            List<String> lines = List.of(after.split("\n"));
            for (String line : before.split("\n")) assertTrue(line.isEmpty() || lines.contains(line), why + " (lost: " + line + ")");
            return;
        }
        assertEquals(before, after, why);
    }

    /**
     * io.cost.qos and io.cost.model read back {@code ctrl=auto} followed by the parameters in
     * force, and writing a parameter makes them user-controlled, as the kernel's
     * ioc_qos_write/ioc_cost_model_write do: the values survive the round trip, "auto" does not.
     */
    private static String userControlled(String text) {
        return text == null ? null : text.replace("ctrl=auto", "ctrl=user");
    }

    /** The file's text, or null when it does not exist there (or cannot be read, with an errno). */
    private static String readOrNull(ControllerHarness h, String path) {
        try {
            return h.controller.read(path);
        } catch (ControlException e) {
            checkRefusal(e);
            return null;
        }
    }

    private static void checkRefusal(ControlException e) {
        assertNotNull(e.errno(), "a refusal carries an errno");
        assertNotNull(e.getMessage());
        assertFalse(e.getMessage().isBlank(), "a refusal says why");
    }
}
