package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlEndpoint;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Issue 35: {@code scripts/cli-thin}, bin/iotarget's quick path for the one-request commands
 * (ls -l and save too: the server writes their text), prints and exits as the Java client does, and hands anything else to the Java client (its
 * {@code IOTARGET_CLI_FALLBACK}) before it has sent anything: never the token to a listener
 * that did not prove itself, nor a token read through a directory another user could change.
 * The fallback here is a script that records its arguments and exits 42.
 */
class ThinClientTest {
    private static final Path THIN = Path.of("..", "scripts", "cli-thin").toAbsolutePath().normalize();
    private static final String CONFIG = """
            { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0", "warm_up_ms": 0 },
              "backends": { "disk": { "type": "memory", "size": "64M", "enable": 1 } },
              "cgroup": { "cgroup.subtree_control": "+io" } }
            """;
    private static final int HANDED_OVER = 42;

    @TempDir
    Path work;
    private final List<Server> servers = new ArrayList<>();
    private Path fallback;
    private Path handedOver;

    @BeforeEach
    void setUp() throws IOException {
        handedOver = work.resolve("handed-over.txt");
        fallback = work.resolve("java-client");
        Files.writeString(fallback, "#!/bin/sh\nprintf '%s|' \"$IOTARGET_NO_THIN\" \"$@\" > '" + handedOver + "'\nexit " + HANDED_OVER + "\n");
        Files.setPosixFilePermissions(fallback, PosixFilePermissions.fromString("rwx------"));
    }

    @AfterEach
    void stop() {
        servers.forEach(Server::close);
    }

    private record Result(int exit, String out, String err) {
    }

    /** {@code perl scripts/cli-thin ARGS} against {@code control} with tokens in {@code tokens}. */
    private Result thin(String control, Path tokens, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("perl", THIN.toString()));
        command.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().keySet().removeIf(k -> !k.equals("PATH") && !k.equals("HOME"));
        pb.environment().putAll(Map.of("IOTARGET_CONTROL", control, "IOTARGET_RUNTIME_DIR", tokens.toString(),
                "IOTARGET_CLI_FALLBACK", fallback.toString()));
        Path out = work.resolve("out.txt");
        Path err = work.resolve("err.txt");
        Process p = pb.redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile()))
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(command + " timed out");
        }
        return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
    }

    /** The Java client, in-process, as bin/iotarget runs it with IOTARGET_NO_THIN=1. */
    private static Result java(String control, Path tokens, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int exit = Main.run(args, Map.of("IOTARGET_CONTROL", control, "IOTARGET_RUNTIME_DIR", tokens.toString()),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    private String start(Path tokens) throws Exception {
        Server server = Server.start(new ObjectMapper().readTree(CONFIG), tokens);
        servers.add(server);
        return ControlEndpoint.hostPort(server.controlAddress());
    }

    /** Two servers from one config: the same script through each client, line by line the same answers. */
    @Test
    void shouldPrintAndExitAsTheJavaClientForEachOneRequestCommand() throws Exception {
        Path thinTokens = Files.createDirectory(work.resolve("thin"));
        Path javaTokens = Files.createDirectory(work.resolve("java"));
        String thinServer = start(thinTokens);
        String javaServer = start(javaTokens);
        List<List<String>> script = List.of(
                List.of("mkdir", "tenants/a"),
                List.of("write", "tenants/a/io.max", "259:0 riops=1000", "wbps=1048576"),
                List.of("read", "tenants/a/io.max"),
                List.of("write", "tenants/a/io.weight", "0"),
                List.of("read", "tenants/a/no.such.file"),
                List.of("mkdir", "tenants/a"),
                List.of("mkdir", "tenants/x y+%&=?#"),
                List.of("ls", "tenants"),
                List.of("ls"),
                List.of("ls", "/nvmet/nothing"),
                List.of("devices"),
                List.of("mkdir", "/nvmet/hosts/nqn.2026-11.io.iotarget:h"),
                List.of("mkdir", "/nvmet/subsystems/nqn.2026-11.io.iotarget:s"),
                List.of("ln", "/nvmet/hosts/nqn.2026-11.io.iotarget:h", "/nvmet/subsystems/nqn.2026-11.io.iotarget:s/allowed_hosts/nqn.2026-11.io.iotarget:h"),
                List.of("ls", "/nvmet/subsystems/nqn.2026-11.io.iotarget:s/allowed_hosts"),
                List.of("unlink", "/nvmet/subsystems/nqn.2026-11.io.iotarget:s/allowed_hosts/nqn.2026-11.io.iotarget:h"),
                List.of("unlink", "/nvmet/subsystems/nqn.2026-11.io.iotarget:s/allowed_hosts/nqn.2026-11.io.iotarget:h"),
                List.of("rmdir", "tenants/a"),
                List.of("rmdir", "tenants/a"));
        for (List<String> line : script) {
            String[] args = line.toArray(String[]::new);
            Result expected = java(javaServer, javaTokens, args);
            assertEquals(expected, thin(thinServer, thinTokens, args), "iotarget " + line);
            assertFalse(Files.exists(handedOver), "handed to the Java client: " + line);
        }
        assertEquals(1, thin(thinServer, thinTokens, "read", "tenants/a/io.max").exit(), "the script ended with tenants/a removed");
    }

    /**
     * ls -l and save, whose text the server makes whole (LongListing, ConfigSaver): from one
     * server, the perl client prints the Java client's bytes, a group's listing, an attribute
     * directory's, a refusal and the saved configuration alike; and web's line, but for its code.
     */
    @Test
    void shouldPrintTheServersLongListingsAndSavedConfigurationAsTheJavaClient() throws Exception {
        Path tokens = Files.createDirectory(work.resolve("tokens"));
        String control = start(tokens);
        String subsystem = "/nvmet/subsystems/nqn.2026-11.io.iotarget:s";
        for (List<String> setUp : List.of(List.of("mkdir", "tenants"), List.of("write", "tenants/cgroup.subtree_control", "+io"),
                List.of("mkdir", "tenants/a"), List.of("mkdir", "tenants/b"),
                List.of("write", "tenants/a/io.max", "259:0 riops=1000 wbps=1048576"), List.of("write", "tenants/a/io.weight", "300"),
                List.of("mkdir", "/nbd/exports/e"), List.of("write", "/nbd/exports/e/backend", "disk"),
                List.of("write", "/nbd/exports/e/cgroup", "tenants/a"), List.of("mkdir", subsystem))) {
            assertEquals(0, java(control, tokens, setUp.toArray(String[]::new)).exit(), "iotarget " + setUp);
        }
        for (List<String> line : List.of(List.of("ls", "-l"), List.of("ls", "-l", "tenants"), List.of("ls", "-l", "/nbd/exports/e"),
                List.of("ls", "-l", subsystem), List.of("ls", "-l", "tenants/nope"), List.of("save"))) {
            String[] args = line.toArray(String[]::new);
            Result expected = java(control, tokens, args);
            assertEquals(expected, thin(control, tokens, args), "iotarget " + line);
            assertFalse(Files.exists(handedOver), "handed to the Java client: " + line);
        }
        assertTrue(java(control, tokens, "ls", "-l", "tenants").out().lines()
                .anyMatch(l -> l.startsWith("tenants/a ") && l.endsWith(" 300  wbps=1048576 riops=1000")), "a's limits in the listing");
        assertTrue(java(control, tokens, "ls", "-l", "/nbd/exports/e").out().lines().anyMatch(l -> l.matches("cgroup +/tenants/a")),
                "an attribute and its value");
        assertEquals(1, thin(control, tokens, "ls", "-l", "tenants/nope").exit());
        Result web = java(control, tokens, "web");
        assertTrue(web.out().matches("open http://" + control.replace(".", "\\.") + "/login\\?code=[A-Za-z0-9_-]{43} {3}\\(once, within 2 minutes\\)\n"),
                web.out());
        assertEquals(withoutCode(web), withoutCode(thin(control, tokens, "web")), "web: the same line, with a code of its own");
        assertFalse(Files.exists(handedOver), "web handed to the Java client");
        assertTrue(thin(control, tokens, "save").out().contains("riops=1000"), "the saved configuration holds a's io.max");

        // save FILE: the same bytes in a file of mode 0600 that replaced the old one, no temporary file left.
        Path saves = Files.createDirectory(work.resolve("saves"));
        Path byJava = saves.resolve("java.json");
        Path byThin = saves.resolve("thin.json");
        Files.writeString(byThin, "old");
        assertEquals(new Result(0, "", ""), java(control, tokens, "save", byJava.toString()));
        assertEquals(new Result(0, "", ""), thin(control, tokens, "save", byThin.toString()));
        assertFalse(Files.exists(handedOver), "save FILE handed to the Java client");
        assertEquals(Files.readString(byJava), Files.readString(byThin));
        assertEquals(java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"), Files.getPosixFilePermissions(byThin));
        try (var names = Files.list(saves)) {
            assertEquals(List.of("java.json", "thin.json"), names.map(n -> n.getFileName().toString()).sorted().toList());
        }
    }

    private static Result withoutCode(Result r) {
        return new Result(r.exit(), r.out().replaceAll("code=[A-Za-z0-9_-]+", "code=CODE"), r.err());
    }

    @Test
    void shouldHandUsageErrorsOptionsAndFilesToTheJavaClient() throws Exception {
        Path tokens = Files.createDirectory(work.resolve("tokens"));
        String control = start(tokens);
        for (List<String> args : List.of(List.of("read"), List.of("read", "a", "b"), List.of("write", "tenants/a/io.max"),
                List.of("ls", "-l", "tenants", "b"), List.of("ln", "a"), List.of("--control", control, "read", "io.stat"),
                List.of("save", "/no/such/dir/target.json"), List.of("nosuchcommand"))) {
            Files.deleteIfExists(handedOver);
            assertEquals(new Result(HANDED_OVER, "", ""), thin(control, tokens, args.toArray(String[]::new)), "iotarget " + args);
            assertEquals("1|" + String.join("|", args) + "|", Files.readString(handedOver), "the same arguments, with IOTARGET_NO_THIN=1");
        }
        for (String other : List.of("localhost:" + control.split(":")[1], "https://" + control, "127.0.0.1:0" + control.split(":")[1])) {
            Files.deleteIfExists(handedOver);
            assertEquals(HANDED_OVER, thin(other, tokens, "read", "io.stat").exit(), "--control " + other + ": the Java client resolves it");
        }
    }

    @Test
    void shouldHandOverWhenNoServerListens() throws Exception {
        Path tokens = Files.createDirectory(work.resolve("tokens"));
        String control = start(tokens);
        servers.removeFirst().close();
        int port = Integer.parseInt(control.split(":")[1]);
        Files.writeString(tokens.resolve("control-127.0.0.1-" + port + ".token"), "left-behind");
        Files.setPosixFilePermissions(tokens.resolve("control-127.0.0.1-" + port + ".token"), PosixFilePermissions.fromString("rw-------"));
        assertEquals(HANDED_OVER, thin(control, tokens, "mkdir", "tenants/a").exit(), "the Java client says there is no server");
    }

    /** A listener that answers the proof wrongly (the token's file left by a server killed with -9) gets the challenge and nothing else. */
    @Test
    void shouldSendNothingButTheChallengeToAListenerThatDoesNotProveItself() throws Exception {
        Path tokens = Files.createDirectory(work.resolve("tokens"));
        String token = "T".repeat(43);
        try (Listener squatter = new Listener()) {
            Path file = tokens.resolve("control-127.0.0.1-" + squatter.port() + ".token");
            Files.writeString(file, token + "\n");
            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
            assertEquals(HANDED_OVER, thin("127.0.0.1:" + squatter.port(), tokens, "write", "tenants/a/io.max", "SECRET-VALUE").exit());
            String received = squatter.received();
            assertTrue(received.startsWith("GET /v1/proof?challenge="), received);
            assertFalse(received.contains(token), "no token: " + received);
            assertFalse(received.contains("Authorization"), "no credentials: " + received);
            assertFalse(received.contains("SECRET-VALUE") || received.contains("io.max"), "not the request: " + received);
        }
    }

    /** Anything ControlToken might refuse is the Java client's to refuse: it is never read here. */
    @Test
    void shouldNotReadATokenThroughADirectoryOthersMayWriteNorThroughALink() throws Exception {
        try (Listener squatter = new Listener()) {
            String name = "control-127.0.0.1-" + squatter.port() + ".token";
            Path open = Files.createDirectory(work.resolve("group-writable"));
            Files.setPosixFilePermissions(open, PosixFilePermissions.fromString("rwxrwx---"));
            Files.writeString(open.resolve(name), "token-in-a-group-writable-directory");
            Files.setPosixFilePermissions(open.resolve(name), PosixFilePermissions.fromString("rw-------"));
            assertEquals(HANDED_OVER, thin("127.0.0.1:" + squatter.port(), open, "read", "io.stat").exit());

            Path real = Files.createDirectory(work.resolve("real"));
            Path link = Files.createSymbolicLink(work.resolve("link"), real);
            Files.writeString(real.resolve(name), "token-behind-a-link");
            Files.setPosixFilePermissions(real.resolve(name), PosixFilePermissions.fromString("rw-------"));
            assertEquals(HANDED_OVER, thin("127.0.0.1:" + squatter.port(), link, "read", "io.stat").exit());

            Path loose = Files.createDirectory(work.resolve("loose"));
            Files.writeString(loose.resolve(name), "token-readable-by-the-group");
            Files.setPosixFilePermissions(loose.resolve(name), PosixFilePermissions.fromString("rw-r-----"));
            assertEquals(HANDED_OVER, thin("127.0.0.1:" + squatter.port(), loose, "read", "io.stat").exit());

            assertEquals("", squatter.received(), "no connection at all");
        }
    }

    /** Records what it receives; answers each read with a 200 and a made-up proof. One thread. */
    private static final class Listener implements AutoCloseable {
        private final ServerSocket socket = new ServerSocket(0, 8, InetAddress.getLoopbackAddress());
        private final ByteArrayOutputStream record = new ByteArrayOutputStream();
        private final Thread thread = Thread.ofVirtual().start(this::serve);

        Listener() throws IOException {
        }

        int port() {
            return socket.getLocalPort();
        }

        private void serve() {
            while (!socket.isClosed()) {
                try (Socket s = socket.accept()) {
                    InputStream in = s.getInputStream();
                    OutputStream out = s.getOutputStream();
                    byte[] buffer = new byte[8192];
                    for (int n; (n = in.read(buffer)) > 0; ) {
                        synchronized (record) {
                            record.write(buffer, 0, n);
                        }
                        out.write(("HTTP/1.1 200 OK\r\nContent-Length: 44\r\n\r\n" + "A".repeat(43) + "\n").getBytes(StandardCharsets.US_ASCII));
                        out.flush();
                    }
                } catch (IOException e) {
                    // closed, or the client went away: the next
                }
            }
        }

        String received() {
            synchronized (record) {
                return record.toString(StandardCharsets.ISO_8859_1);
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
            try {
                thread.join(10_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
