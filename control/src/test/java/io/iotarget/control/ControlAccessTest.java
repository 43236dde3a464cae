package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.control.http.ControlClient;
import io.iotarget.control.http.ControlEndpoint;
import io.iotarget.control.http.ControlToken;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.testkit.Prerequisites;
import io.iotarget.testkit.Tools;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Who may drive the control endpoint: the server's own user with its token, and nobody else —
 * not another local user, not a client without the token, not a web page in a local browser.
 * Every refusal leaves the state as it was.
 */
class ControlAccessTest {
    private static final String IO_MAX = "259:0 rbps=max wbps=1048576 riops=max wiops=max\n";
    private static final String EXPORTS = "default/\n";

    private Server server;
    private int port;
    private String token;
    @TempDir
    Path tokens;

    @BeforeEach
    void start() throws Exception {
        server = Server.start(new ObjectMapper().readTree("""
                { "server": { "control": "127.0.0.1:0" },
                  "backends": { "default": { "type": "memory", "size": "64M", "enable": 1 } },
                  "nbd": { "exports": { "default": { "backend": "default", "enable": 1 } } },
                  "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "a": { "io.max": "default wbps=1048576" } } } }"""), tokens);
        port = server.controlAddress().getPort();
        token = Files.readString(tokens.resolve("control-127.0.0.1-" + port + ".token"));
    }

    @AfterEach
    void stop() {
        server.close();
    }

    private void assertUnchanged() throws ControlException {
        assertEquals(IO_MAX, server.mounts().read("tenants/a/io.max"), "io.max unchanged");
        assertEquals(EXPORTS, String.join("\n", server.mounts().list("/nbd/exports")) + "\n", "no new export");
    }

    /** One HTTP/1.1 request written by hand, so that every header is the test's: returns the status line and body. */
    private String raw(String method, String target, Map<String, String> headers, String body) throws IOException {
        StringBuilder request = new StringBuilder(method + " " + target + " HTTP/1.1\r\n");
        if (!headers.containsKey("Host")) request.append("Host: 127.0.0.1:").append(port).append("\r\n");
        headers.forEach((k, v) -> request.append(k).append(": ").append(v).append("\r\n"));
        byte[] content = body.getBytes(StandardCharsets.UTF_8);
        request.append("Content-Length: ").append(content.length).append("\r\nConnection: close\r\n\r\n");
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(request.toString().getBytes(StandardCharsets.UTF_8));
            out.write(content);
            out.flush();
            InputStream in = s.getInputStream();
            String response = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            String status = response.substring(0, response.indexOf("\r\n"));
            return status.substring("HTTP/1.1 ".length()) + (response.contains("Access-Control-") ? " CORS" : "")
                   + " | " + response.substring(response.indexOf("\r\n\r\n") + 4).strip();
        }
    }

    private Map<String, String> withToken(String... headers) {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        m.put("Authorization", "Bearer " + token);
        for (int i = 0; i < headers.length; i += 2) m.put(headers[i], headers[i + 1]);
        return m;
    }

    @Test
    void shouldAdmitTheTokenAndNothingElse() throws Exception {
        String write = "/v1/write?path=tenants/a/io.max";
        assertEquals("401 Unauthorized | Permission denied (EACCES): this endpoint needs its token (Authorization: Bearer TOKEN)",
                raw("POST", write, Map.of("Content-Type", "application/octet-stream"), "default wbps=max"));
        assertEquals("401 Unauthorized | Permission denied (EACCES): wrong token",
                raw("POST", write, Map.of("Authorization", "Bearer " + token.substring(1) + "x", "Content-Type", "application/octet-stream"), "default wbps=max"));
        assertEquals("401 Unauthorized | Permission denied (EACCES): wrong token",
                raw("POST", write, Map.of("Authorization", "Basic " + token, "Content-Type", "application/octet-stream"), "default wbps=max"));
        assertTrue(raw("GET", "/v1/read?path=tenants/a/io.max", Map.of(), "").startsWith("401 "), "reads need the token too");
        assertTrue(raw("POST", "/v1/mkdir?path=/nbd/exports/evil", Map.of("Content-Type", "application/octet-stream"), "").startsWith("401 "));
        assertUnchanged();
        assertEquals("204 No Content | ", raw("POST", write, withToken("Content-Type", "application/octet-stream"), "default wbps=2097152"));
        assertEquals("259:0 rbps=max wbps=2097152 riops=max wiops=max\n", server.mounts().read("tenants/a/io.max"), "the token admits");
    }

    /** What a web page can make a browser send: simple content types, its own Origin; even with the token none gets through. */
    @Test
    void shouldRefuseAForgedCrossOriginPost() throws Exception {
        String write = "/v1/write?path=tenants/a/io.max";
        String mkdir = "/v1/mkdir?path=/nbd/exports/evil";
        String crossOrigin = "403 Forbidden | Permission denied (EACCES): cross-origin request from http://evil.example "
                             + "(this endpoint serves only http://127.0.0.1:" + port + ")";
        assertEquals(crossOrigin, raw("POST", write, Map.of("Origin", "http://evil.example", "Content-Type", "text/plain"), "default wbps=max"));
        assertEquals(crossOrigin, raw("POST", write, withToken("Origin", "http://evil.example", "Content-Type", "text/plain"), "default wbps=max"));
        assertEquals(crossOrigin, raw("POST", mkdir, withToken("Origin", "http://evil.example", "Content-Type", "application/x-www-form-urlencoded"), "a=b"));
        assertEquals(crossOrigin, raw("POST", mkdir, withToken("Referer", "http://evil.example/page.html", "Content-Type", "application/octet-stream"), ""));
        assertTrue(raw("POST", mkdir, withToken("Origin", "null", "Content-Type", "application/octet-stream"), "").startsWith("403 "), "a sandboxed page");
        // The endpoint's own origin with a form's or fetch()'s content type: still refused.
        String own = "http://127.0.0.1:" + port;
        assertEquals("415 Unsupported Media Type | Invalid argument (EINVAL): a POST must be Content-Type: application/octet-stream (got text/plain)",
                raw("POST", write, withToken("Origin", own, "Content-Type", "text/plain"), "default wbps=max"));
        assertTrue(raw("POST", mkdir, withToken("Origin", own, "Content-Type", "multipart/form-data; boundary=x"), "").startsWith("415 "));
        assertTrue(raw("POST", mkdir, withToken("Origin", own), "").startsWith("415 "), "no content type at all (fetch without a body)");
        // No preflight is ever granted, and a change never rides on GET.
        String preflight = raw("OPTIONS", write, Map.of("Origin", own, "Access-Control-Request-Method", "POST",
                "Access-Control-Request-Headers", "authorization,content-type"), "");
        assertEquals("405 Method Not Allowed | OPTIONS is not served: GET reads, POST changes (and no CORS preflight is granted)", preflight);
        assertEquals("405 Method Not Allowed | use POST for mkdir", raw("GET", mkdir, withToken(), ""));
        assertUnchanged();
    }

    /** A page whose name was rebound to 127.0.0.1 is same-origin with itself: its Host gives it away. */
    @Test
    void shouldRefuseARebindingHost() throws Exception {
        assertEquals("403 Forbidden | Permission denied (EACCES): Host evil.example:" + port + " does not name this endpoint "
                     + "(expected 127.0.0.1:" + port + " or localhost:" + port + ")",
                raw("POST", "/v1/mkdir?path=/nbd/exports/evil", withToken("Host", "evil.example:" + port, "Origin", "http://evil.example:" + port,
                        "Content-Type", "application/octet-stream"), ""));
        assertTrue(raw("GET", "/v1/read?path=tenants/a/io.max", withToken("Host", "evil.example:" + port), "").startsWith("403 "));
        assertTrue(raw("GET", "/v1/list?path=/", withToken("Host", "localhost:" + port), "").startsWith("200 "), "localhost names it");
        assertUnchanged();
    }

    /** uid nobody, with curl and with the CLI itself: the token file is not theirs to read, so the endpoint refuses them. */
    @Test
    void shouldRefuseAnotherLocalUser() throws Exception {
        Prerequisites.require("root".equals(System.getProperty("user.name")), "not root: running commands as nobody needs it");
        Tools.require("setpriv", "/usr/bin/setpriv");
        Tools.require("curl", "/usr/bin/curl");
        Path file = tokens.resolve("control-127.0.0.1-" + port + ".token");
        assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
        String curl = "curl -s --noproxy '*' -w ' %{http_code}' -X POST -H \"Authorization: Bearer $(cat " + file + ")\""
                      + " -H 'Content-Type: application/octet-stream' --data-binary 'default wbps=max' 'http://127.0.0.1:" + port
                      + "/v1/write?path=tenants/a/io.max'";
        List<String> id = new java.util.ArrayList<>(CliProcess.AS_NOBODY);
        id.addAll(List.of("id", "-u"));
        assertEquals("65534\n", Tools.ok(10, id.toArray(String[]::new)));
        List<String> sh = new java.util.ArrayList<>(CliProcess.AS_NOBODY);
        sh.addAll(List.of("sh", "-c", curl));
        Tools.Result c = Tools.run(30, sh);
        assertTrue(c.out().contains("Permission denied"), "nobody cannot read the token: " + c.out());
        assertTrue(c.out().endsWith(" 401"), c.out());
        assertUnchanged();

        Path copy = Files.createTempDirectory("iotarget-cli-");
        try {
            Files.setPosixFilePermissions(copy, PosixFilePermissions.fromString("rwxr-xr-x"));
            String classpath = CliProcess.worldReadableClasspath(copy.resolve("cp"));
            Map<String, String> env = Map.of("IOTARGET_CONTROL", "127.0.0.1:" + port, ControlToken.DIRECTORY_ENV, tokens.toString());
            CliProcess.Result r;
            for (String[] args : List.of(new String[]{"write", "tenants/a/io.max", "default wbps=max"}, new String[]{"mkdir", "/nbd/exports/evil"},
                                         new String[]{"read", "tenants/a/io.max"})) {
                r = CliProcess.run(CliProcess.AS_NOBODY, classpath, env, args);
                assertEquals(new CliProcess.Result(2, "", "iotarget: cannot read the token file " + tokens.resolve("control-127.0.0.1-" + port + ".token")
                                                          + ": permission denied (only the server's user may drive it); nothing was sent\n"), r);
            }
            r = CliProcess.run(CliProcess.AS_NOBODY, classpath, env, "--token-file", "/dev/null", "read", "tenants/a/io.max");
            assertEquals("iotarget: the token file /dev/null is not a regular file; refused (a server writes a regular file); nothing was sent\n", r.err(),
                    "a token nobody can read");
        } finally {
            CliProcess.deleteTree(copy);
        }
        assertUnchanged();
    }

    /** README's flow: the same user, the CLI without flags, the server's token found in the default place. */
    @Test
    void shouldLetTheSameUserDriveItWithoutFlags() throws Exception {
        Path home = ControlToken.directory(Map.of());
        assertEquals(Path.of(System.getProperty("user.home"), ".local", "state", "iotarget"), home);
        Server own = Server.start(new ObjectMapper().readTree("""
                { "server": { "control": "127.0.0.1:0" },
                  "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "b": {} } } }"""), home);
        Path file = home.resolve("control-127.0.0.1-" + own.controlAddress().getPort() + ".token");
        try {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(file)));
            assertEquals("rwx------", PosixFilePermissions.toString(Files.getPosixFilePermissions(home)));
            Map<String, String> env = Map.of("IOTARGET_CONTROL", "127.0.0.1:" + own.controlAddress().getPort());
            CliProcess.Result r = CliProcess.run(List.of(), CliProcess.classpath(), env, "mkdir", "tenants/b/c");
            assertEquals(new CliProcess.Result(0, "", ""), r);
            assertEquals(List.of("c/"), own.mounts().list("tenants/b").stream().filter(n -> n.endsWith("/")).toList());
        } finally {
            own.close();
        }
        assertFalse(Files.exists(file), "closing removes the token file");
    }

    /** A tree that fails with an Error (here an OutOfMemoryError) still answers: 500 with the message, not a dropped connection. */
    @Test
    void shouldAnswerEveryFailureInsteadOfDroppingTheConnection() throws Exception {
        ConfigTree broken = new ConfigTree() {
            @Override
            public Kind kind(String path) {
                return Kind.FILE;
            }

            @Override
            public List<String> list(String path) {
                throw new IllegalStateException("a bug");
            }

            @Override
            public String read(String path) {
                throw new OutOfMemoryError("Java heap space");
            }

            @Override
            public void write(String path, String value) {
            }

            @Override
            public List<String> replay(String path) {
                return List.of();
            }

            @Override
            public void mkdir(String path) {
            }

            @Override
            public void rmdir(String path) {
            }
        };
        try (ControlEndpoint endpoint = new ControlEndpoint(new InetSocketAddress("127.0.0.1", 0), null, tokens, broken, () -> "", new PrometheusRegistry(), () -> "{}\n", path -> "", (device, options) -> { throw new ControlException(Errno.ENODEV, "no device " + device); })) {
            ControlClient client = ControlClient.connect(ControlEndpoint.hostPort(endpoint.address()), null, tokens, null);
            assertEquals(new ControlClient.Reply(500, "internal error: java.lang.OutOfMemoryError: Java heap space (the server logged it)\n", "EIO"),
                    client.get("read", "x"));
            assertEquals(new ControlClient.Reply(500, "internal error: java.lang.IllegalStateException: a bug (the server logged it)\n", "EIO"),
                    client.get("list", "x"));
            assertEquals(200, client.get("devices", null).status(), "and it goes on serving");
        }
    }
}
