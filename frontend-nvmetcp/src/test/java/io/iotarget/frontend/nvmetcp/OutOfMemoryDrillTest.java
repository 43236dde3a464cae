package io.iotarget.frontend.nvmetcp;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Runs {@link OutOfMemoryDrill} in a JVM whose direct memory is limited to 72 MiB, so that a
 * host queueing 100 writes of 1 MiB finds memory for only some: the target must fail the
 * others, survive, release everything and serve again.
 */
class OutOfMemoryDrillTest {
    @Test
    void theServerSurvivesRunningOutOfDirectMemoryAndServesAgain() throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        Process drill = new ProcessBuilder(List.of(java, "-XX:MaxDirectMemorySize=72m", "-Xmx512m", "--enable-native-access=ALL-UNNAMED",
                "-cp", System.getProperty("java.class.path"), OutOfMemoryDrill.class.getName()))
                .redirectErrorStream(true).start();
        drill.getOutputStream().close();
        boolean finished = drill.waitFor(120, TimeUnit.SECONDS);
        if (!finished) drill.destroyForcibly();
        String output = new String(drill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(finished, "the drill finished within 120 s:\n" + output);
        assertEquals(0, drill.exitValue(), output);
        assertTrue(output.contains("DRILL PASSED"), output);
    }
}
