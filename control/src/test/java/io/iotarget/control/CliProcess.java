package io.iotarget.control;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code bin/iotarget}'s client commands as real processes: the launcher's Main on the test's
 * classpath, optionally as another user (setpriv). For another user the classpath is copied
 * to a world-readable directory first, since the build's repository may not be theirs to read.
 */
final class CliProcess {
    /** Runs as uid nobody, gid nogroup, no supplementary groups (the machines run tests as root). */
    static final List<String> AS_NOBODY = List.of("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups");

    record Result(int exit, String out, String err) {
    }

    private CliProcess() {
    }

    /** Runs {@code iotarget ARGS} with exactly {@code env} (plus PATH), prefixed by {@code asUser} (empty: this user). */
    static Result run(List<String> asUser, String classpath, Map<String, String> env, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(asUser);
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-XX:-UsePerfData", "-XX:TieredStopAtLevel=1", "-cp", classpath, Main.class.getName()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command).directory(Path.of("/").toFile());
        pb.environment().keySet().removeIf(k -> !k.equals("PATH"));
        pb.environment().putAll(env);
        Path out = Files.createTempFile("cli", ".out");
        Path err = Files.createTempFile("cli", ".err");
        try {
            Process p = pb.redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                    .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail(String.join(" ", command) + " timed out");
            }
            return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
        } finally {
            Files.delete(out);
            Files.delete(err);
        }
    }

    /** The test's own classpath, readable by this user. */
    static String classpath() {
        return System.getProperty("java.class.path");
    }

    /** A copy of the test's classpath under {@code dir} (created world-readable), for another user. */
    static String worldReadableClasspath(Path dir) throws IOException {
        Files.createDirectories(dir);
        List<String> entries = new ArrayList<>();
        int i = 0;
        for (String entry : classpath().split(java.io.File.pathSeparator)) {
            Path from = Path.of(entry);
            if (!Files.exists(from)) continue;
            Path to = dir.resolve(i++ + "-" + from.getFileName());
            try (Stream<Path> all = Files.walk(from)) {
                for (Path p : (Iterable<Path>) all::iterator) Files.copy(p, to.resolve(from.relativize(p).toString()));
            }
            entries.add(to.toString());
        }
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : (Iterable<Path>) all::iterator) {
                Files.setPosixFilePermissions(p, PosixFilePermissions.fromString(Files.isDirectory(p) ? "rwxr-xr-x" : "rw-r--r--"));
            }
        }
        return String.join(java.io.File.pathSeparator, entries);
    }

    static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) return;
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted(Comparator.reverseOrder()).toList()) Files.delete(p);
        }
    }
}
