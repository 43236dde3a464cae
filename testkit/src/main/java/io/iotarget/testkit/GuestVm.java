package io.iotarget.testkit;

import org.opentest4j.TestAbortedException;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * Boots the shared QEMU guest (../shared/vm/run-guest.sh) with one guest script and collects
 * its output: the real Linux NVMe/TCP and NBD clients as the judges of the target. The harness
 * is found through {@code IOTARGET_VM_DIR}, else {@code shared/vm} in a parent directory of
 * the checkout, else {@code /work/shared/vm}. Which kernel the guest boots is a {@link Kernel}.
 * Any thread may call; each call is one QEMU process of its own.
 */
public final class GuestVm {
    /** The guest's kernel. */
    public enum Kernel {
        /** The harness's own: Debian 12's stock 6.1, whose NVMe host driver cannot authenticate. */
        STOCK,
        /**
         * Debian 12's linux-6.12, pinned and cached by the checkout's {@code scripts/guest-6.12}
         * (which drives the same harness): its NVMe host driver has DH-HMAC-CHAP (CONFIG_NVME_AUTH).
         */
        DEBIAN_6_12
    }

    /** Seconds a guest may take to reach its script; see {@link #run}. */
    private static final int BOOT_LIMIT_SECONDS = 120;
    /** run-guest.sh's exit code when it could not start a guest (bad usage, prepare.sh failed, QEMU did not start). */
    private static final int HARNESS_ERROR = 125;
    /** What the harness's guest init prints to its console when the script starts. */
    private static final String SCRIPT_BEGINS = "@@@GUESTVM-BEGIN";

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
     * Called first by every test that boots a guest. {@code -Diotarget.vm=false} skips the test
     * (asked for, on any machine); {@code true} fails it when there is no harness; {@code auto}
     * (the default) takes the harness as a {@link Prerequisites prerequisite}: a missing one skips
     * the test, or fails it under CI.
     */
    public static void require() {
        String mode = System.getProperty("iotarget.vm", "auto");
        if (mode.equals("false")) throw new TestAbortedException("-Diotarget.vm=false: no guest is booted");
        String missing = "no shared/vm/run-guest.sh found (IOTARGET_VM_DIR, shared/vm in a parent directory, or /work/shared/vm)";
        if (mode.equals("true") && harness() == null) throw new AssertionError("-Diotarget.vm=true, but " + missing);
        Prerequisites.require(harness() != null, missing);
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

    /** {@link #run(Kernel, Path, Map, List, int)} on the {@link Kernel#STOCK} kernel. */
    public static Result run(Path script, Map<String, String> env, List<Path> files, int timeoutSeconds) throws IOException, InterruptedException {
        return run(Kernel.STOCK, script, env, files, timeoutSeconds);
    }

    /**
     * Runs {@code script} in a fresh guest booting {@code kernel}, with {@code env} exported and
     * {@code files} copied to /guest/files; guest output is echoed to stdout as it arrives. The
     * harness first builds the guest's kernel and initramfs if their cache is not up to date (as
     * scripts/install-test-deps does); when it cannot, the test fails with the harness's messages,
     * under CI as anywhere. A guest that has not reached
     * its script {@value #BOOT_LIMIT_SECONDS} s after QEMU started (5–13 s is normal under
     * emulation) is hung in boot, and one that ended before its script started died in boot (the
     * 6.12 kernel has panicked at 0.8 s under emulation, an int3 Oops in hrtimer code while its
     * second CPU came up): either way nothing of the project ran, so the guest is killed if it
     * must be and one fresh guest is booted in its place. When the run fails, the tail of the
     * guest's console is printed too.
     */
    public static Result run(Kernel kernel, Path script, Map<String, String> env, List<Path> files, int timeoutSeconds) throws IOException, InterruptedException {
        Attempt first = boot(kernel, script, env, files, timeoutSeconds);
        Result result = first.report();
        if (first.failedInBoot() == null) return result;
        System.out.println("guest| the guest " + first.failedInBoot() + " before its script started; booting a fresh guest");
        return boot(kernel, script, env, files, timeoutSeconds).report();
    }

    /** The command that runs the harness's run-guest.sh on {@code kernel}; its arguments follow. */
    private static List<String> runGuest(Kernel kernel) {
        return switch (kernel) {
            case STOCK -> List.of(harness().resolve("run-guest.sh").toString());
            case DEBIAN_6_12 -> List.of(checkoutFile("scripts/guest-6.12").toString(), "run");
        };
    }

    /** {@code relative} in the checkout: the first parent directory of the working directory that has it. */
    private static Path checkoutFile(String relative) {
        for (Path p = Path.of("").toAbsolutePath(); p != null; p = p.getParent()) {
            if (Files.exists(p.resolve(relative))) return p.resolve(relative);
        }
        throw new IllegalStateException("no " + relative + " in any parent of " + Path.of("").toAbsolutePath());
    }

    private static Attempt boot(Kernel kernel, Path script, Map<String, String> env, List<Path> files, int timeoutSeconds) throws IOException, InterruptedException {
        // --verbose copies the console to stderr: how the start of the script is seen, and what a failure report shows.
        List<String> command = new ArrayList<>(runGuest(kernel));
        command.addAll(List.of("--verbose", "--timeout", Integer.toString(timeoutSeconds)));
        env.forEach((k, v) -> command.addAll(List.of("--env", k + "=" + v)));
        for (Path f : files) command.addAll(List.of("--file", f.toString()));
        command.add(script.toString());
        Path console = Files.createTempFile("guestvm", ".console");
        try {
            long start = System.nanoTime();
            ProcessBuilder builder = new ProcessBuilder(command).redirectError(console.toFile());
            builder.environment().put("IOTARGET_VM_DIR", harness().toString());   // scripts/guest-6.12 drives the same harness
            Process process = builder.start();
            AtomicBoolean hung = new AtomicBoolean();
            Thread watchdog = Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(Duration.ofSeconds(BOOT_LIMIT_SECONDS));
                    if (!text(console).contains(SCRIPT_BEGINS)) {
                        hung.set(true);
                        process.destroy();
                    }
                } catch (InterruptedException | IOException e) {
                    // the guest finished first, or its console is gone: nothing to watch
                }
            });
            List<String> lines = new ArrayList<>();
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = r.readLine()) != null; ) {
                    System.out.println("guest| " + line);
                    lines.add(line);
                }
            }
            if (!process.waitFor(timeoutSeconds + 60L, TimeUnit.SECONDS)) process.destroyForcibly();
            watchdog.interrupt();
            watchdog.join();
            int rc = process.waitFor();
            Result result = new Result(rc, lines, (System.nanoTime() - start) / 1e9);
            String consoleText = text(console);
            String failedInBoot = hung.get() ? "hung for " + BOOT_LIMIT_SECONDS + " s"
                    : rc != 0 && rc != HARNESS_ERROR && !consoleText.contains(SCRIPT_BEGINS) ? "died (exit " + rc + ")" : null;
            return new Attempt(result, failedInBoot, consoleText.lines().toList());
        } finally {
            Files.deleteIfExists(console);
        }
    }

    /** A file's text; bytes that are not UTF-8 (a garbled console line) become replacement characters. */
    private static String text(Path file) throws IOException {
        return new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
    }

    /**
     * One boot: its result, how it failed in boot (hung, died) or null when its script started or
     * the harness could not start it, and its console (run-guest.sh's stderr).
     */
    private record Attempt(Result result, String failedInBoot, List<String> console) {
        /**
         * Prints the harness's summary line, or the console's tail when the run failed; returns the
         * result. Fails the test when the harness could not start a guest at all (its exit code
         * {@value #HARNESS_ERROR}: the guest could not be built, or QEMU not started), so that the
         * cause, not the steps that never ran, is the failure's message.
         */
        Result report() {
            List<String> shown = result.exitCode() == 0
                    ? console.stream().filter(l -> l.startsWith("run-guest: rc=")).toList()
                    : console.subList(Math.max(0, console.size() - 60), console.size());
            shown.forEach(l -> System.out.println("guest-console| " + l));
            if (result.exitCode() == HARNESS_ERROR) {
                fail("no guest could be started (harness exit " + HARNESS_ERROR + "):\n"
                     + String.join("\n", console.subList(Math.max(0, console.size() - 10), console.size())));
            }
            return result;
        }
    }
}
