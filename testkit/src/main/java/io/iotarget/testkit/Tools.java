package io.iotarget.testkit;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.fail;

/** Runs the real clients the tests are judged by. */
public final class Tools {
    private Tools() {
    }

    /** {@link Prerequisites#require}s {@code tool}, installed at {@code path}. */
    public static void require(String tool, String path) {
        Prerequisites.require(Files.exists(Path.of(path)), tool + " is not installed (" + path + "); apt-get install it to run this test");
    }

    /** {@link Prerequisites#require}s fio with its nbd engine (built with libnbd, as Debian's is): how the tests drive NBD load. */
    public static void requireFioNbd() throws IOException, InterruptedException {
        require("fio", "/usr/bin/fio");
        Prerequisites.require(ok(30, "fio", "--enghelp").lines().anyMatch(l -> l.strip().equals("nbd")), "fio has no nbd engine (fio built without libnbd)");
    }

    public record Result(int exit, String out) {
    }

    /** Runs a command (stdout and stderr merged) and returns its exit status and output. */
    public static Result run(long timeoutSeconds, List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
        byte[][] out = new byte[1][];
        Thread drain = Thread.ofPlatform().daemon().start(() -> {
            try {
                out[0] = p.getInputStream().readAllBytes();
            } catch (IOException e) {
                out[0] = new byte[0];
            }
        });
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            drain.join(5_000);
            fail(String.join(" ", command) + " timed out after " + timeoutSeconds + " s");
        }
        drain.join();
        return new Result(p.exitValue(), new String(out[0], StandardCharsets.UTF_8));
    }

    /** Runs a command that must succeed; returns its output. */
    public static String ok(long timeoutSeconds, String... command) throws IOException, InterruptedException {
        Result r = run(timeoutSeconds, List.of(command));
        if (r.exit() != 0) fail(String.join(" ", command) + " exited " + r.exit() + ":\n" + r.out());
        return r.out();
    }
}
