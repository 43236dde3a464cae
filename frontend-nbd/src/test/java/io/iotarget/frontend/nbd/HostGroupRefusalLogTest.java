package io.iotarget.frontend.nbd;

import io.iotarget.testkit.LogCapture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 29 hole 6, NBD's twin: a client that connects over and over to a cgroup_per_host export
 * whose group has no room for its child (cgroup.max.descendants 0) is refused each time and
 * counted each time, but logged within {@link 5} lines a
 * second for the whole server, not one line per connection.
 */
class HostGroupRefusalLogTest {
    private static final int CONNECTIONS = 100;

    private TestTarget target;
    private final LogCapture log = new LogCapture(NbdConnection.class.getName());

    @BeforeEach
    void start() throws Exception {
        target = new TestTarget();
        target.memoryExport("shared", 1 << 20);
        target.server.tree().write("exports/shared/enable", "0");
        target.server.tree().write("exports/shared/cgroup_per_host", "1");
        target.server.tree().write("exports/shared/enable", "1");
        target.engine.controller().write("tenants/shared/cgroup.max.descendants", "0");
    }

    @AfterEach
    void stop() {
        log.close();
        target.close();
    }

    @Test
    void aFloodOfRefusedClientsLogsBoundedLinesAndCountsEveryOne() throws Exception {
        long startNs = System.nanoTime();
        for (int i = 0; i < CONNECTIONS; i++) {
            try (RawClient c = RawClient.connect(target.port, "shared", false)) {
                assertTrue(c.closedByServer(), "refused its group: disconnected");
            }
        }
        long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startNs) + 1;    // one-second windows begun
        assertEquals(CONNECTIONS, target.server.counters().counter(NbdCounter.HOST_GROUP_REFUSED), "every refusal counted");
        List<String> refusals = log.messages().stream().filter(m -> m.contains("cannot have its own group")).toList();
        long bound = NbdServer.HOST_GROUP_LINES_PER_SECOND * (seconds + 1);
        assertTrue(bound < CONNECTIONS, "the machine took " + seconds + " s for " + CONNECTIONS + " connections: too slow to judge the limit");
        assertFalse(refusals.isEmpty(), "the first refusals are logged");
        assertTrue(refusals.size() <= bound, refusals.size() + " lines for " + CONNECTIONS + " connections in " + seconds + " s (at most " + bound + ")");
        assertTrue(refusals.getFirst().startsWith("NBD export shared: client addr:127.0.0.1 cannot have its own group under /tenants/shared (cgroup_per_host)"),
                   refusals.getFirst());
    }

}
