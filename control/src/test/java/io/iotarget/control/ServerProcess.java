package io.iotarget.control;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code iotarget serve --config FILE} as its own process, started as {@code bin/iotarget serve}
 * starts it (the same JVM options) but from the test's classpath, optionally pinned to CPUs
 * with taskset: for tests that measure the server from outside (its resident memory, its CPU),
 * with nothing of the test's own JVM in the numbers.
 */
final class ServerProcess implements AutoCloseable {
    private static final Pattern NBD = Pattern.compile("NBD on 127\\.0\\.0\\.1:(\\d+)");
    private static final Pattern CONTROL = Pattern.compile("control endpoint http://(127\\.0\\.0\\.1:\\d+)");
    /** Clock ticks per second of /proc/PID/stat's times (USER_HZ, 100 on every Linux we run). */
    private static final long TICKS_PER_SECOND = 100;

    private final Process process;
    private final Path output;
    private final int nbdPort;
    private final String control;

    private ServerProcess(Process process, Path output, int nbdPort, String control) {
        this.process = process;
        this.output = output;
        this.nbdPort = nbdPort;
        this.control = control;
    }

    /**
     * Starts the server on {@code config} with its token file in {@code tokens}, pinned to
     * {@code cpus} (a taskset list; null: not pinned), and waits until it serves.
     */
    static ServerProcess start(Path config, Path tokens, String cpus) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        if (cpus != null) command.addAll(List.of("taskset", "-c", cpus));
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-XX:MaxDirectMemorySize=64g", "-XX:-UsePerfData",
                "-cp", CliProcess.classpath(), Main.class.getName(), "serve", "--config", config.toString()));
        Path output = Files.createTempFile(tokens, "server", ".out");
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()));
        pb.environment().put("IOTARGET_RUNTIME_DIR", tokens.toString());
        Process p = pb.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (System.nanoTime() < deadline) {
            String text = Files.readString(output, StandardCharsets.UTF_8);
            Matcher nbd = NBD.matcher(text);
            Matcher control = CONTROL.matcher(text);
            if (nbd.find() && control.find()) return new ServerProcess(p, output, Integer.parseInt(nbd.group(1)), control.group(1));
            if (!p.isAlive()) throw new IOException("iotarget serve exited " + p.exitValue() + ":\n" + text);
            Thread.sleep(50);
        }
        p.destroyForcibly();
        throw new IOException("iotarget serve did not start within 30 s:\n" + Files.readString(output, StandardCharsets.UTF_8));
    }

    int nbdPort() {
        return nbdPort;
    }

    /** HOST:PORT of the control endpoint. */
    String control() {
        return control;
    }

    /** A line of /proc/PID/status in bytes: "VmRSS", "VmHWM" (the peak of VmRSS). */
    long statusBytes(String field) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc", Long.toString(process.pid()), "status"))) {
            if (line.startsWith(field + ":")) return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
        }
        throw new IOException("no " + field + " in /proc/" + process.pid() + "/status");
    }

    /** CPU time the server used so far (user + system), in nanoseconds. */
    long cpuNs() throws IOException {
        String stat = Files.readString(Path.of("/proc", Long.toString(process.pid()), "stat"));
        String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        long ticks = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);     // utime, stime (fields 14, 15)
        return ticks * (1_000_000_000L / TICKS_PER_SECOND);
    }

    /** What the server printed so far. */
    String output() throws IOException {
        return Files.readString(output, StandardCharsets.UTF_8);
    }

    /**
     * Sends the server {@code signal} ("STOP", "CONT") with kill(1), as an operator (or a stalled
     * hypervisor) would. kill returns once the signal is queued, and a thread running on another
     * core stops only when it next enters the kernel: for STOP this waits until every thread of
     * the server is stopped (state T in /proc), so that nothing sent afterwards is read before.
     */
    void signal(String signal) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).redirectErrorStream(true).start();
        if (kill.waitFor() != 0) throw new IOException("kill -" + signal + " " + process.pid() + ": " + new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        if (!signal.equals("STOP")) return;
        io.iotarget.testkit.Await.until(java.time.Duration.ofSeconds(10), this::everyThreadStopped, () -> "every thread of " + process.pid() + " stopped");
    }

    private boolean everyThreadStopped() {
        try (var tasks = Files.list(Path.of("/proc", Long.toString(process.pid()), "task"))) {
            for (Path task : tasks.toList()) {
                String stat = Files.readString(task.resolve("stat"));
                char state = stat.charAt(stat.lastIndexOf(')') + 2);
                if (state != 'T' && state != 't') return false;
            }
            return true;
        } catch (IOException e) {
            return false;                                        // a thread ended while listed: look again
        }
    }

    /** Waits up to {@code timeout} for the server to exit by itself; its exit status, or -1 if it still runs. */
    int awaitExit(java.time.Duration timeout) throws InterruptedException {
        return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS) ? process.exitValue() : -1;
    }

    /** Kills the server (SIGKILL: no shutdown hook, no goodbye to anyone) and waits for it to exit. */
    void kill() throws InterruptedException {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    /** Stops the server (SIGTERM, then SIGKILL after 10 s) and waits for it to exit. */
    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
