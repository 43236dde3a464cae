package io.iotarget.testkit;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Boots the shared QEMU guest (../shared/vm/run-guest.sh) with one guest script and collects
 * its output: the real Linux NVMe/TCP and NBD clients as the judges of the target. The harness
 * is found through {@code IOTARGET_VM_DIR}, else {@code shared/vm} in a parent directory of
 * the checkout, else {@code /work/shared/vm}.
 */
public final class GuestVm {
    public record Result(int exitCode, List<String> lines, double totalSeconds) {
        /** Lines starting with {@code prefix}. */
        public List<String> lines(String prefix) {
            return lines.stream().filter(l -> l.startsWith(prefix)).toList();
        }

        public String text() {
            return String.join("\n", lines);
        }
    }

    private GuestVm() {
    }

    /**
     * Whether to boot guests: {@code -Diotarget.vm=auto} (the default) when the harness exists,
     * {@code true} always (a missing harness fails the test), {@code false} never. Under CI
     * (CI=true) a missing harness fails too: CI must run these tests.
     */
    public static boolean enabled() {
        String mode = System.getProperty("iotarget.vm", "auto");
        if (mode.equals("false")) return false;
        boolean required = mode.equals("true") || "true".equals(System.getenv("CI"));
        if (harness() == null && required) throw new IllegalStateException("no shared/vm/run-guest.sh found, and the VM tests are required here");
        return harness() != null;
    }

    /** The shared/vm directory, or null when there is none. */
    public static Path harness() {
        String env = System.getenv("IOTARGET_VM_DIR");
        List<Path> candidates = new ArrayList<>();
        if (env != null) candidates.add(Path.of(env));
        Path here = Path.of("").toAbsolutePath();
        for (Path p = here; p != null; p = p.getParent()) candidates.add(p.resolve("shared/vm"));
        candidates.add(Path.of("/work/shared/vm"));
        for (Path c : candidates) if (Files.isExecutable(c.resolve("run-guest.sh"))) return c;
        return null;
    }

    /** A guest script kept with the calling module's tests, in {@code src/test/vm} (surefire runs in the module directory). */
    public static Path script(String name) {
        return Path.of("src/test/vm", name).toAbsolutePath();
    }

    /**
     * Runs {@code script} in a fresh guest with {@code env} exported and {@code files} copied to
     * /guest/files; guest output is echoed to stdout as it arrives.
     */
    public static Result run(Path script, Map<String, String> env, List<Path> files, int timeoutSeconds) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(harness().resolve("run-guest.sh").toString(), "--timeout", Integer.toString(timeoutSeconds)));
        env.forEach((k, v) -> command.addAll(List.of("--env", k + "=" + v)));
        for (Path f : files) command.addAll(List.of("--file", f.toString()));
        command.add(script.toString());
        Path stderr = Files.createTempFile("guestvm", ".err");
        long start = System.nanoTime();
        Process process = new ProcessBuilder(command).redirectError(stderr.toFile()).start();
        List<String> lines = new ArrayList<>();
        try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                System.out.println("guest| " + line);
                lines.add(line);
            }
        }
        if (!process.waitFor(timeoutSeconds + 60L, TimeUnit.SECONDS)) process.destroyForcibly();
        int rc = process.exitValue();
        double seconds = (System.nanoTime() - start) / 1e9;
        List<String> err = Files.readAllLines(stderr);
        Files.deleteIfExists(stderr);
        if (rc != 0) err.forEach(l -> System.out.println("guest-stderr| " + l));
        else err.stream().filter(l -> l.contains("rc=")).forEach(l -> System.out.println("guest-stderr| " + l));
        return new Result(rc, lines, seconds);
    }
}
