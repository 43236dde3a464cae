package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlEndpoint;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code iotarget batch}: a real script on the standard input of a real CLI process, against a
 * running server, as a provisioning script uses it.
 */
class BatchTest {
    private Server server;
    private String control;
    @TempDir
    Path tokens;

    @BeforeEach
    void start() throws Exception {
        String config = """
                { "server": { "control": "127.0.0.1:0", "warm_up_ms": 0 },
                  "backends": { "disk": { "type": "memory", "size": "64M", "enable": 1 } },
                  "cgroup": { "cgroup.subtree_control": "+io" } }
                """;
        server = Server.start(new ObjectMapper().readTree(config), tokens);
        control = ControlEndpoint.hostPort(server.controlAddress());
    }

    @AfterEach
    void stop() {
        if (server != null) server.close();
    }

    private record Result(int exit, String out, String err) {
    }

    /** {@code iotarget ARGS} as its own JVM with {@code script} on stdin. */
    private Result cli(String script, String... args) throws Exception {
        Path in = Files.writeString(tokens.resolve("script.txt"), script);
        Path out = tokens.resolve("out.txt");
        Path err = tokens.resolve("err.txt");
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:TieredStopAtLevel=1", "-cp", CliProcess.classpath(), Main.class.getName(), "--control", control));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectInput(in.toFile()).redirectOutput(out.toFile()).redirectError(err.toFile());
        pb.environment().put("IOTARGET_RUNTIME_DIR", tokens.toString());
        Process p = pb.start();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the CLI did not finish");
        return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
    }

    private String read(String path) throws Exception {
        return server.mounts().read(path);
    }

    @Test
    void shouldRunEveryLineAndNameTheFailingOnesByLineNumber() throws Exception {
        Result r = cli("""
                # tenants for the batch test
                mkdir a

                write a/io.max "disk riops=1000 wbps=1048576"   # quoted, as in a shell
                write a/io.max 'disk wbps=0'
                read a/io.max
                mkdir
                mkdir b
                """, "batch");
        assertEquals(1, r.exit, r.err);
        assertEquals("259:0 rbps=max wbps=1048576 riops=1000 wiops=max\n", r.out);
        assertTrue(r.err.contains("iotarget: line 5: write a/io.max: "), r.err);
        assertTrue(r.err.contains("ERANGE"), r.err);
        assertTrue(r.err.contains("iotarget: line 7: usage: iotarget mkdir PATH"), r.err);
        assertEquals(2, r.err.lines().count(), r.err);
        read("b/io.weight");                                   // line 8 ran after the failures: b exists
    }

    @Test
    void shouldStopAtTheFirstFailureWithDashE() throws Exception {
        Result r = cli("mkdir a\nwrite a/io.weight 0\nmkdir b\n", "-", "-e");
        assertEquals(1, r.exit, r.err);
        assertTrue(r.err.startsWith("iotarget: line 2: write a/io.weight: "), r.err);
        assertTrue(r.err.contains("stopped at line 2 (-e)"), r.err);
        read("a/io.weight");
        assertThrows(Exception.class, () -> read("b/io.weight"), "line 3 ran after -e stopped the batch");
    }

    @Test
    void shouldExitZeroWhenEveryLineSucceeds() throws Exception {
        StringBuilder script = new StringBuilder();
        for (int i = 0; i < 50; i++) script.append("mkdir t").append(i).append("\nwrite t").append(i).append("/io.max \"disk riops=").append(100 + i).append("\"\n");
        Result r = cli(script.toString(), "batch");
        assertEquals(new Result(0, "", ""), r);
        assertEquals("259:0 rbps=max wbps=max riops=149 wiops=max\n", read("t49/io.max"));
    }

    @Test
    void shouldSplitLinesAsAShellDoesWithoutExpansion() {
        assertEquals(List.of("write", "a/io.max", "259:0 riops=1"), Batch.split("write a/io.max \"259:0 riops=1\""));
        assertEquals(List.of("a b", "c\"d", "e\\f", "$HOME"), Batch.split("'a b' \"c\\\"d\" e\\\\f $HOME # comment"));
        assertEquals(List.of(), Batch.split("   # only a comment"));
        assertEquals(List.of("x#y"), Batch.split("x#y"));
        assertThrows(IllegalArgumentException.class, () -> Batch.split("write a \"unclosed"));
    }
}
