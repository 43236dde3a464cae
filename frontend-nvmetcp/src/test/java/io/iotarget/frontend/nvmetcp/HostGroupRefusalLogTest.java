package io.iotarget.frontend.nvmetcp;

import io.iotarget.testkit.LogCapture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.SimpleFormatter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 29 hole 6: a host that connects controller after controller under NQNs that cannot have
 * a cgroup_per_host group (here: the parent's cgroup.max.descendants is 0) gets
 * {@link NvmeTarget#HOST_GROUP_LINES_PER_SECOND} WARNING lines a second for the whole target,
 * not one per controller; and a NQN with a line feed cannot forge a line of its own.
 */
class HostGroupRefusalLogTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    /** Controllers connected: far more than the limit lets through in the seconds they take. */
    private static final int CONTROLLERS = 100;

    private TargetFixture fixture;
    private final LogCapture log = new LogCapture(Controller.class.getName());

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
        var cg = fixture.engine.controller();
        cg.mkdir("tenant");
        cg.write("tenant/cgroup.max.descendants", "0");
        fixture.tree.write(NS + "/enable", "0");
        fixture.tree.write(NS + "/cgroup", "tenant");
        fixture.tree.write(NS + "/cgroup_per_host", "1");
        fixture.tree.write(NS + "/enable", "1");
    }

    @AfterEach
    void stop() throws Exception {
        log.close();
        fixture.close();
    }

    @Test
    void aFloodOfControllersWithoutTheirGroupLogsBoundedEscapedLines() throws Exception {
        long startNs = System.nanoTime();
        for (int i = 0; i < CONTROLLERS; i++) {
            String nqn = String.format("nqn.2014-08.org.nvmexpress:uuid:%08x\nSEVERE: control request POST /forged failed\u2028", i);
            try (TestHost admin = new TestHost(fixture.port, false, false)) {
                admin.bringUp(TargetFixture.NQN, nqn, 5000);
            }
        }
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startNs) + 1;    // one-second windows begun
        List<LogRecord> refusals = log.records().stream().filter(r -> r.getMessage().contains("cannot have its own group")).toList();
        long bound = NvmeTarget.HOST_GROUP_LINES_PER_SECOND * (seconds + 1);
        assertTrue(bound < CONTROLLERS, "the machine took " + seconds + " s for " + CONTROLLERS + " connects: too slow to judge the limit");
        assertFalse(refusals.isEmpty(), "the first refusals are logged");
        assertTrue(refusals.size() <= bound, refusals.size() + " lines for " + CONTROLLERS + " controllers in " + seconds + " s (at most " + bound + ")");
        assertEquals(Level.WARNING, refusals.getFirst().getLevel());
        assertTrue(refusals.getFirst().getMessage().startsWith("host nqn.2014-08.org.nvmexpress:uuid:00000000\\nSEVERE: control request POST /forged failed"
                                                              + "\\u2028 cannot have its own group under /tenant (cgroup_per_host)"),
                   refusals.getFirst().getMessage());
        SimpleFormatter formatter = new SimpleFormatter();
        for (LogRecord r : log.records()) {
            String formatted = formatter.format(r);
            for (String line : formatted.split("\\R")) {
                assertFalse(line.startsWith("SEVERE:"), "a line forged by a host: " + formatted);
            }
        }
    }

}
