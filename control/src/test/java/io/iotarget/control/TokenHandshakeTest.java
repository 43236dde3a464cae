package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlToken;
import io.iotarget.testkit.Tools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Issue 19 item 5: the CLI sends its token and its requests only to the server that wrote the
 * token file, proved on the connection itself, and reads and removes token files without
 * following anything another user planted. The other user is uid nobody (setpriv): it squats
 * the port with {@link Squatter}, which records every byte it receives, and plants links in a
 * directory it may write.
 */
class TokenHandshakeTest {
    private static final String KEY_PATH = "/nvmet/hosts/nqn.2014-08.org.nvmexpress:uuid:squat/dhchap_key";
    private static final String SECRET = "DHHC-1:01:FZutw06N2trA/TvbhG4i6jXua32pSJce08/ZmPlk0jMEPvkB:";
    private static final String NOBODY_UID = "65534";

    @TempDir
    Path tokens;
    /** World-readable: another user runs the squatter from it. */
    private Path shared;
    private String classpath;
    private final List<Process> squatters = new ArrayList<>();

    @BeforeEach
    void setUp() throws IOException {
        Tools.require("setpriv", "/usr/bin/setpriv");
        assertEquals("root", System.getProperty("user.name"), "runs another user's processes with setpriv: needs root");
        shared = Files.createTempDirectory("iotarget-squat-");
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxr-xr-x"));
        classpath = CliProcess.worldReadableClasspath(shared.resolve("cp"));
    }

    @AfterEach
    void tearDown() throws Exception {
        for (Process p : squatters) p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        CliProcess.deleteTree(shared);
    }

    @Test
    void shouldSendNothingToAListenerOnThePortOfAServerKilledWithSignal9() throws Exception {
        Path config = tokens.resolve("serve.json");
        Files.writeString(config, """
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0" },
                  "nvmet": { "hosts": { "nqn.2014-08.org.nvmexpress:uuid:squat": {} } } }""");
        Map<String, String> env;
        Path tokenFile;
        int port;
        try (ServerProcess server = ServerProcess.start(config, tokens, null)) {
            port = Integer.parseInt(server.control().substring(server.control().indexOf(':') + 1));
            env = Map.of("IOTARGET_CONTROL", server.control(), ControlToken.DIRECTORY_ENV, tokens.toString());
            tokenFile = tokens.resolve("control-127.0.0.1-" + port + ".token");
            assertEquals(new CliProcess.Result(0, "", ""), CliProcess.run(List.of(), CliProcess.classpath(), env, "write", KEY_PATH, SECRET),
                    "the live server proves itself");
            server.kill();
        }
        String token = Files.readString(tokenFile).strip();
        Path record = squat(port);

        CliProcess.Result r = CliProcess.run(List.of(), CliProcess.classpath(), env, "write", KEY_PATH, SECRET);
        assertEquals(3, r.exit(), r.err());
        assertEquals("iotarget: 127.0.0.1:" + port + ": the listener did not prove it holds the token in " + tokenFile
                     + ": it answered 200 with a wrong proof. It is not the server that wrote that file (a file left behind by a server"
                     + " that stopped, or another program on the port); nothing was sent to it\n", r.err());
        String received = Files.readString(record, StandardCharsets.ISO_8859_1);
        assertTrue(received.contains("GET /v1/proof?challenge="), "the squatter was asked for a proof: " + received);
        assertFalse(received.contains(token), "no token");
        assertFalse(received.contains("Authorization"), "no credentials of any kind");
        assertFalse(received.contains("DHHC-1"), "no secret");
        assertFalse(received.contains("dhchap_key"), "not even the request");
    }

    @Test
    void shouldNotConnectAtAllWithoutATokenFile() throws Exception {
        int port = freePort();
        Path record = squat(port);
        CliProcess.Result r = CliProcess.run(List.of(), CliProcess.classpath(),
                Map.of("IOTARGET_CONTROL", "127.0.0.1:" + port, ControlToken.DIRECTORY_ENV, tokens.toString()), "write", KEY_PATH, SECRET);
        assertEquals(new CliProcess.Result(2, "", "iotarget: no token file " + tokens.resolve("control-127.0.0.1-" + port + ".token")
                                                  + " (a server writes it at start: is one running as this user on this address? Another user's"
                                                  + " server needs --token-file); nothing was sent\n"), r);
        assertEquals("", Files.readString(record), "no connection");
    }

    /** Root's CLI with its runtime directory under one another user may write: that user's link to a root-only file is not followed. */
    @Test
    void shouldNotFollowALinkAnotherUserPlanted() throws Exception {
        int port = freePort();
        Path record = squat(port);
        String name = "control-127.0.0.1-" + port + ".token";
        Path rootOnly = Files.createDirectory(tokens.resolve("root-only"));
        Files.writeString(rootOnly.resolve(name), "root-only secret\n");
        Files.setPosixFilePermissions(rootOnly.resolve(name), PosixFilePermissions.fromString("rw-------"));
        Path theirs = Files.createDirectory(shared.resolve("theirs"));
        UserPrincipal nobody = theirs.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
        Files.setOwner(theirs, nobody);
        asNobody("ln", "-s", rootOnly.toString(), theirs.resolve("rt").toString());
        Path stickyLink = Path.of("/tmp", "iotarget-rt-" + port);
        asNobody("ln", "-s", rootOnly.toString(), stickyLink.toString());
        try {
            CliProcess.Result r = cli(port, theirs.resolve("rt"));
            assertEquals(2, r.exit(), r.err());
            assertEquals("iotarget: cannot read the token file " + theirs.resolve("rt").resolve(name) + ": token directory " + theirs.resolve("rt")
                         + ": " + theirs + " is owned by uid " + NOBODY_UID + ", not by this user (uid 0) or root; refused: another user could"
                         + " swap the token file (use a directory only this user can change, or set IOTARGET_RUNTIME_DIR); nothing was sent\n", r.err());
            r = cli(port, stickyLink);
            assertEquals(2, r.exit(), r.err());
            assertTrue(r.err().contains(stickyLink + " is owned by uid " + NOBODY_UID + " (in /tmp, which others may write)"), r.err());
            // In a directory only root may change, only root could have made the link; the file is still not followed.
            Path own = Files.createDirectory(tokens.resolve("own"));
            Files.createSymbolicLink(own.resolve(name), rootOnly.resolve(name));
            r = cli(port, own);
            assertEquals(new CliProcess.Result(2, "", "iotarget: the token file " + own.resolve(name) + " is a symbolic link; refused (a server"
                                                      + " writes a regular file); nothing was sent\n"), r);
        } finally {
            Files.deleteIfExists(stickyLink);
        }
        assertEquals("", Files.readString(record), "no connection");
    }

    /** The server refuses such a directory too, and at stop removes only the file it wrote, wherever its directory's path now leads. */
    @Test
    void shouldRemoveOnlyItsOwnTokenFile() throws Exception {
        Path theirs = Files.createDirectory(shared.resolve("theirs"));
        Files.setOwner(theirs, theirs.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody"));
        IOException refused = assertThrows(IOException.class, () -> start(theirs.resolve("rt")));
        assertTrue(refused.getMessage().startsWith("token directory " + theirs + " is owned by uid " + NOBODY_UID),
                refused.getMessage());

        Path first = Files.createDirectory(tokens.resolve("first"));
        Path second = Files.createDirectory(tokens.resolve("second"));
        Path link = Files.createSymbolicLink(tokens.resolve("rt"), first);
        Server server = start(link);
        String name = ControlToken.file(link, server.controlAddress()).getFileName().toString();
        Files.delete(link);
        Files.createSymbolicLink(link, second);                       // re-pointed while it runs
        Files.writeString(second.resolve(name), "someone else's\n");
        server.close();
        assertFalse(Files.exists(first.resolve(name)), "its own token is gone");
        assertEquals("someone else's\n", Files.readString(second.resolve(name)), "the other file is left alone");

        server = start(first);
        Path file = ControlToken.file(first, server.controlAddress());
        Files.delete(file);
        Files.writeString(file, "a new file of that name\n");
        server.close();
        assertEquals("a new file of that name\n", Files.readString(file), "not the file it wrote: left alone");
    }

    private Server start(Path runtimeDirectory) throws Exception {
        return Server.start(new ObjectMapper().readTree("{ \"server\": { \"control\": \"127.0.0.1:0\" } }"), runtimeDirectory);
    }

    private CliProcess.Result cli(int port, Path runtimeDirectory) throws Exception {
        return CliProcess.run(List.of(), CliProcess.classpath(),
                Map.of("IOTARGET_CONTROL", "127.0.0.1:" + port, ControlToken.DIRECTORY_ENV, runtimeDirectory.toString()), "write", KEY_PATH, SECRET);
    }

    private static void asNobody(String... command) throws Exception {
        List<String> c = new ArrayList<>(CliProcess.AS_NOBODY);
        c.addAll(List.of(command));
        Tools.ok(10, c.toArray(String[]::new));
    }

    /** Starts {@link Squatter} as nobody on {@code port}; returns the file its record goes to. */
    private Path squat(int port) throws Exception {
        Path record = tokens.resolve("squatter-" + port + ".out");
        List<String> command = new ArrayList<>(CliProcess.AS_NOBODY);
        command.addAll(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:-UsePerfData",
                "-cp", classpath, Squatter.class.getName(), Integer.toString(port)));
        Path ready = tokens.resolve("squatter-" + port + ".err");
        Process p = new ProcessBuilder(command).directory(Path.of("/").toFile()).redirectOutput(record.toFile()).redirectError(ready.toFile()).start();
        squatters.add(p);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.readString(ready).contains("listening")) {
            if (!p.isAlive() || System.nanoTime() > deadline) fail("the squatter did not start: " + Files.readString(ready));
            Thread.sleep(20);
        }
        return record;
    }

    /**
     * Another user's listener: prints every byte it receives to stdout, and answers each read
     * with a 200 and a made-up proof, as a program that wanted the token would.
     */
    public static final class Squatter {
        public static void main(String[] args) throws IOException {
            try (ServerSocket listener = new ServerSocket()) {
                listener.setReuseAddress(true);
                listener.bind(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])));
                System.err.println("listening");
                PrintStream record = new PrintStream(System.out, true, StandardCharsets.ISO_8859_1);
                while (true) {
                    try (Socket s = listener.accept()) {
                        s.setSoTimeout(2_000);
                        record.print("[connection]\n");
                        InputStream in = s.getInputStream();
                        OutputStream out = s.getOutputStream();
                        byte[] buffer = new byte[8192];
                        for (int n; (n = in.read(buffer)) > 0; ) {
                            record.print(new String(buffer, 0, n, StandardCharsets.ISO_8859_1));
                            out.write(("HTTP/1.1 200 OK\r\nContent-Length: 44\r\n\r\n" + "A".repeat(43) + "\n").getBytes(StandardCharsets.US_ASCII));
                            out.flush();
                        }
                    } catch (SocketTimeoutException | java.net.SocketException e) {
                        // the client went quiet or away: wait for the next
                    }
                }
            }
        }
    }
}
