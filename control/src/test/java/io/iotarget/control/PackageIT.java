package io.iotarget.control;

import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 23 item 1: {@code bin/iotarget package} makes an image that a host without Maven or a
 * JDK runs. Built from the jar this build packaged, unpacked elsewhere (the image is moved, as an
 * install moves it), then started as systemd would start it: a bare environment (the system's
 * java is 17, so only the image's own runtime can serve), {@code $NOTIFY_SOCKET} on a datagram
 * socket that Python, not this project, listens on, and the AOT cache required to load
 * ({@code -XX:AOTMode=on} refuses to start otherwise). Ready means READY=1 with every listener
 * open: nbdinfo reads the export; the image's CLI drives the server; SIGTERM says STOPPING=1 and
 * the server exits 143, which the unit counts as success. The systemd unit passes {@code systemd-analyze verify}.
 */
class PackageIT {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    @TempDir
    Path work;

    @Test
    void theImageServesWithoutAJdkTellsSystemdItIsReadyAndStopsCleanly() throws Exception {
        Tools.requireFioNbd();
        Tools.require("nbdinfo", "/usr/bin/nbdinfo");
        Tools.require("python3", "/usr/bin/python3");
        Tools.require("systemd-analyze", "/usr/bin/systemd-analyze");
        Path out = work.resolve("out");
        Tools.Result built = Tools.run(900, List.of(ROOT.resolve("scripts/package").toString(), "--out", out.toString()));
        assertEquals(0, built.exit(), "scripts/package: " + built.out());
        Path tarball;
        try (Stream<Path> s = Files.list(out)) {
            tarball = s.filter(p -> p.getFileName().toString().endsWith(".tar.gz")).findFirst().orElseThrow();
        }
        Path installed = Files.createDirectory(work.resolve("opt"));
        Tools.ok(120, "tar", "-C", installed.toString(), "-xzf", tarball.toString());
        Path image = installed.resolve("iotarget");
        Path launcher = image.resolve("bin/iotarget");

        Path unit = work.resolve("iotarget.service");
        Files.writeString(unit, Files.readString(image.resolve("systemd/iotarget.service")).replace("/opt/iotarget", image.toString()));
        Tools.Result verified = Tools.run(60, List.of("systemd-analyze", "verify", "--man=no", unit.toString()));
        assertEquals(0, verified.exit(), "systemd-analyze verify: " + verified.out());
        assertEquals("", verified.out().strip(), "systemd-analyze verify has nothing to say");

        Path runtime = Files.createDirectory(work.resolve("run"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
        Path socket = work.resolve("notify");
        Process listener = new ProcessBuilder("/usr/bin/python3", "-u", "-c", """
                import socket, sys
                s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                s.bind(sys.argv[1])
                print("listening", flush=True)
                for _ in range(2):
                    print(s.recv(4096).decode().replace("\\n", " "), flush=True)
                """, socket.toString()).redirectErrorStream(true).start();
        var notifications = listener.inputReader(StandardCharsets.UTF_8);
        assertEquals("listening", notifications.readLine());

        int nbdPort = freePort();
        int controlPort = freePort();
        Path config = work.resolve("iotarget.json");
        Files.writeString(config, """
                {"server": {"control": "127.0.0.1:%d", "nbd": "127.0.0.1:%d"},
                 "backends": {"disk": {"type": "memory", "size": "64M", "enable": 1}},
                 "nbd": {"exports": {"disk": {"backend": "disk", "enable": 1}}}}
                """.formatted(controlPort, nbdPort));
        Map<String, String> env = Map.of("PATH", "/usr/bin:/bin", "IOTARGET_RUNTIME_DIR", runtime.toString(),
                                         "NOTIFY_SOCKET", socket.toString(), "IOTARGET_JAVA_OPTS", "-XX:AOTMode=on");
        ProcessBuilder serve = new ProcessBuilder(launcher.toString(), "serve", "--config", config.toString())
                .redirectErrorStream(true).redirectOutput(work.resolve("server.log").toFile());
        serve.environment().clear();
        serve.environment().putAll(env);
        Process server = serve.start();
        try {
            String ready = notifications.readLine();
            assertTrue(ready != null && ready.startsWith("READY=1 ") && ready.contains("MAINPID="),
                    "the first notification: " + ready + "; server: " + Files.readString(work.resolve("server.log")));
            assertEquals("67108864", Tools.ok(30, "nbdinfo", "--size", "nbd://127.0.0.1:" + nbdPort + "/disk").strip(), "nbdinfo as soon as READY=1");

            ProcessBuilder cli = new ProcessBuilder(launcher.toString(), "--control", "127.0.0.1:" + controlPort, "devices").redirectErrorStream(true);
            cli.environment().clear();
            cli.environment().putAll(env);
            Process devices = cli.start();
            String table = new String(devices.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertEquals(0, devices.waitFor(), "the image's CLI: " + table);
            assertTrue(table.contains("disk") && table.contains("67108864"), table);
            String java = Tools.ok(30, image.resolve("runtime/bin/java").toString(), "-version");
            assertTrue(java.contains("version \"25"), "the image's runtime: " + java);

            server.toHandle().destroy();       // SIGTERM, as systemctl stop sends
            assertTrue(server.waitFor(60, TimeUnit.SECONDS), "the server stopped within 60 s of SIGTERM");
            String log = Files.readString(work.resolve("server.log"));
            assertEquals(143, server.exitValue(), "exit status after SIGTERM (the JVM's 128+15 once its shutdown hooks ran); server: " + log);
            assertTrue(Files.readString(unit).contains("\nSuccessExitStatus=143\n"), "the unit takes 143 for a clean stop");
            String stopping = notifications.readLine();
            assertTrue(stopping != null && stopping.startsWith("STOPPING=1"), "the second notification: " + stopping);
            assertTrue(!log.contains("warning"), "no warning from the server or the JVM (an unusable AOT cache warns): " + log);
        } finally {
            server.destroyForcibly().waitFor();
            listener.destroyForcibly().waitFor();
        }
    }
}
