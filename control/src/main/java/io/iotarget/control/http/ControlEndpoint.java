package io.iotarget.control.http;

import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import javax.net.ssl.SSLContext;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The control endpoint: the configuration tree over HTTP, the same operations as the CLI
 * (which is its client).
 *
 * <pre>
 *  GET  /v1/read?path=P            200 file contents
 *  GET  /v1/list?path=P            200 one entry per line (directories end with '/')
 *  GET  /v1/read-below?path=P&amp;files=F,G   200 JSON: files F, G of P and of each directory in P,
 *                                  {"P": {"F": "...", "G": null}, "P/c": {...}}, null where one
 *                                  cannot be read; one request for {@code ls -l} of 10,000 groups
 *  GET  /v1/devices                200 the device table
 *  GET  /v1/save                   200 the whole configuration as config JSON (control's ConfigSaver)
 *  POST /v1/write?path=P           body = the value, as one write(2)
 *  POST /v1/mkdir?path=P    POST /v1/rmdir?path=P
 *  POST /v1/link?path=LINK&amp;target=T    POST /v1/unlink?path=LINK
 *  POST /v1/watch?path=P           body = a trigger (io.pressure's "some 150000 1000000"): 200 and
 *                                  a server-sent event stream, "event: fired" each time it fires,
 *                                  a last "event: gone" (ENODEV) if the group is removed
 *  GET  /metrics                   200 Prometheus text exposition format (docs/metrics.md)
 *  GET  /v1/proof?challenge=C      200 base64url HMAC-SHA256(token, C and the Host): no token needed ({@link ControlToken})
 *  POST /v1/web-login              200 a one-time code for GET /login?code=CODE (the web view, {@link WebView})
 *  GET  /                          the web view; with a session cookie, or the page that says how to log in
 * </pre>
 * A refused operation answers 4xx with {@code X-Iotarget-Errno: EINVAL} and the message as the
 * body; nothing changed. Any other failure answers 500 with its message and is logged: no
 * Throwable drops a client's connection.
 *
 * <h2>1. Who may ask: the token</h2>
 * At start the endpoint writes a fresh random token to a file only its user can read
 * ({@link ControlToken}); every request must carry {@code Authorization: Bearer TOKEN},
 * compared in constant time, or is refused with 401. Reads need it too: io.max lines, exports,
 * host NQNs and file paths are tenant configuration, not for other users of the machine — and
 * so is {@code /metrics}, whose labels name every group, export and subsystem. Prometheus
 * sends the token from the same file ({@code authorization.credentials_file}, read again at
 * every scrape, so a restart's new token is picked up).
 * <p>
 * The CLI sends the token only to a listener that has proved it holds it ({@code GET
 * /v1/proof}, {@link ControlToken} section 1), on the same connection as its requests: a
 * token file left behind by a crash, and whoever listens on the port next, get nothing.
 *
 * <h2>2. No browser may ask: origin, host, content type</h2>
 * A web page can make a local browser send requests here. Four checks keep it out, each
 * enough against a page that lacks the token:
 * <ol>
 *   <li>{@code Host} must name the endpoint ({@code 127.0.0.1:PORT} or {@code localhost:PORT}
 *       for 127.0.0.1): after DNS rebinding a page's requests carry its own name.
 *   <li>{@code Origin} (or, without it, {@code Referer}) when present must be the endpoint's
 *       own origin; browsers send it on every cross-origin POST.
 *   <li>Every POST must be {@code Content-Type: application/octet-stream}, which no HTML form
 *       and no {@code fetch()} can send to another origin without a CORS preflight — and the
 *       token header needs one too. No preflight is ever granted: OPTIONS is 405 and no
 *       {@code Access-Control-*} header is ever sent.
 *   <li>Reads are GET and changes are POST, never the other way.
 * </ol>
 *
 * A browser showing the web view holds no token but a session cookie, which admits the
 * view's few GETs and nothing else, after the same checks ({@link WebView}).
 *
 * <h2>3. Off loopback: TLS</h2>
 * A non-loopback address is served only with TLS (the config's PEM certificate and key), and
 * then the token is what admits a request. The Host check is left to TLS there: a rebound name
 * is not in the certificate, so no browser completes the handshake.
 *
 * <h2>4. Watches</h2>
 * A watch keeps its trigger while the client stays connected, as an open io.pressure file
 * keeps it in the kernel. The stream sends a comment every second ({@link #HEARTBEAT_NS}), so a
 * client that has gone (Ctrl-C, a dropped connection) fails a write within about two of them
 * and its trigger is removed; a refused trigger answers 4xx before the stream starts.
 *
 * <p>Requests run on virtual threads, any number at once; the tree serializes its own operations.
 */
public final class ControlEndpoint implements AutoCloseable {
    public static final String ERRNO_HEADER = "X-Iotarget-Errno";
    /** The only request body type: not one a browser may send cross-origin without asking. */
    public static final String CONTENT_TYPE = "application/octet-stream";
    /** The default address, loopback only. */
    public static final InetSocketAddress DEFAULT_ADDRESS = new InetSocketAddress("127.0.0.1", 9809);
    /** Longer than any attribute's value; a client cannot make the server buffer more. */
    static final int MAX_VALUE_BYTES = 64 * 1024;
    /** Where the CLI has the server prove it holds the token before it sends anything else; needs no token (class doc, section 1). */
    public static final String PROOF_PATH = "/v1/proof";
    /** Longer than the CLI's challenge; a challenge is never stored. */
    private static final int MAX_CHALLENGE_CHARS = 256;
    /** Where Prometheus scrapes; needs the token like every other request. */
    public static final String METRICS_PATH = "/metrics";
    private static final Set<String> READS = Set.of("read", "list", "read-below", "devices", "save");
    private static final Set<String> CHANGES = Set.of("write", "mkdir", "rmdir", "link", "unlink", "watch", "web-login");
    /** How often a watch's stream proves the client is still there. */
    static final long HEARTBEAT_NS = 1_000_000_000L;
    /** The content type of a watch's stream. */
    public static final String EVENT_STREAM = "text/event-stream";
    private static final System.Logger LOG = System.getLogger(ControlEndpoint.class.getName());
    private static final ObjectMapper JSON = new ObjectMapper();

    private final HttpServer server;
    private final boolean tls;
    private final ControlToken token;
    /** Host header values that name this endpoint (lower case); unused under TLS. */
    private final List<String> hostNames;
    private final ConfigTree tree;
    private final Supplier<String> devices;
    private final PrometheusRegistry metrics;
    private final PrometheusTextFormatWriter metricsFormat = PrometheusTextFormatWriter.create();

    private final Report save;
    private final WebView web;

    /** A text the endpoint serves whole, made when asked. */
    @FunctionalInterface
    public interface Report {
        String text() throws ControlException;
    }

    /**
     * Binds {@code address}, writes the token file in {@code tokenDirectory}, then serves.
     *
     * @param tls     null for plain HTTP, which only a loopback address may use
     * @param metrics what {@code GET /metrics} scrapes
     * @param save    the configuration as {@code serve --config} takes it
     * @throws java.net.BindException when the address is taken
     */
    public ControlEndpoint(InetSocketAddress address, SSLContext tls, Path tokenDirectory, ConfigTree tree, Supplier<String> devices,
                           PrometheusRegistry metrics, Report save) throws IOException {
        if (tls == null && !address.getAddress().isLoopbackAddress()) {
            throw new IllegalArgumentException(hostPort(address) + " is not loopback: the control endpoint serves it only with TLS");
        }
        this.tls = tls != null;
        this.tree = tree;
        this.devices = devices;
        this.metrics = metrics;
        this.save = save;
        if (tls == null) {
            this.server = HttpServer.create(address, 64);
        } else {
            HttpsServer https = HttpsServer.create(address, 64);
            https.setHttpsConfigurator(new HttpsConfigurator(tls));
            this.server = https;
        }
        InetSocketAddress bound = server.getAddress();
        this.hostNames = List.of(hostPort(bound), "localhost:" + bound.getPort());
        this.web = new WebView(bound.getPort(), this.tls);
        try {
            this.token = ControlToken.create(ControlToken.file(tokenDirectory, bound));
        } catch (IOException | RuntimeException e) {
            server.stop(0);
            throw e;
        }
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/v1/", this::handle);
        server.createContext(METRICS_PATH, this::handle);
        server.createContext("/", this::handle);
        server.start();
    }

    public InetSocketAddress address() {
        return server.getAddress();
    }

    /** {@code http://127.0.0.1:9809} or {@code https://...}. */
    public String url() {
        return (tls ? "https://" : "http://") + hostPort(address());
    }

    public boolean tls() {
        return tls;
    }

    /** The file holding the token every request needs. */
    public Path tokenFile() {
        return token.file();
    }

    /** {@code 127.0.0.1:9809}, {@code [::1]:9809}. */
    public static String hostPort(InetSocketAddress a) {
        String host = a.getAddress().getHostAddress();
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    record Reply(int status, String body, Errno errno, String contentType) {
        Reply(int status, String body, Errno errno) {
            this(status, body, errno, "text/plain; charset=utf-8");
        }
    }

    /** The operation answered on its own (a watch's stream): nothing more to send. */
    private static final Reply STREAMED = new Reply(200, null, null);

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            Reply reply;
            try {
                reply = serve(ex);
            } catch (ControlException e) {
                reply = new Reply(status(e.errno()), e.getMessage() + "\n", e.errno());
            } catch (Throwable t) {     // a bug, or a machine out of something: answer and log, never drop the client
                LOG.log(System.Logger.Level.ERROR, "control request " + ex.getRequestMethod() + " " + ex.getRequestURI() + " failed", t);
                reply = new Reply(500, "internal error: " + t + " (the server logged it)\n", Errno.EIO);
            }
            if (reply != STREAMED) send(ex, reply);
        }
    }

    /** Admission (sections 1 and 2 of the class doc), then the operation. */
    private Reply serve(HttpExchange ex) throws IOException, ControlException {
        Headers in = ex.getRequestHeaders();
        List<String> hosts = in.getOrDefault("Host", List.of());
        if (hosts.size() != 1 || !tls && !hostNames.contains(hosts.getFirst().toLowerCase(Locale.ROOT))) {
            throw new ControlException(Errno.EACCES, "Host " + String.join(", ", hosts) + " does not name this endpoint (expected "
                                                     + String.join(" or ", hostNames) + ")");
        }
        String ownOrigin = (tls ? "https://" : "http://") + hosts.getFirst();
        for (String origin : origins(in)) {
            if (!origin.equalsIgnoreCase(ownOrigin)) {
                throw new ControlException(Errno.EACCES, "cross-origin request from " + origin + " (this endpoint serves only " + ownOrigin + ")");
            }
        }
        String method = ex.getRequestMethod();
        if (!method.equals("GET") && !method.equals("POST")) {
            ex.getResponseHeaders().set("Allow", "GET, POST");
            return new Reply(405, method + " is not served: GET reads, POST changes (and no CORS preflight is granted)\n", Errno.EOPNOTSUPP);
        }
        String requestPath = ex.getRequestURI().getPath();
        boolean get = method.equals("GET");
        if (get && requestPath.equals(PROOF_PATH)) return prove(hosts.getFirst(), query(ex.getRequestURI().getRawQuery()).get("challenge"));
        if (!token.matches(in.getFirst("Authorization"))
            && !(get && web.hasSession(in) && WebView.sessionMay(requestPath, query(ex.getRequestURI().getRawQuery())))) {
            if (get && requestPath.equals(WebView.LOGIN_PATH)) return web.login(ex, query(ex.getRequestURI().getRawQuery()).get("code"));
            if (get && WebView.isPage(requestPath)) return web.loginNeeded(ex, "This page needs a login.");
            ex.getResponseHeaders().set("WWW-Authenticate", "Bearer realm=\"iotarget\"");
            String why = in.containsKey("Authorization") ? "wrong token" : "this endpoint needs its token (Authorization: Bearer TOKEN)";
            return new Reply(401, Errno.EACCES.message() + " (EACCES): " + why + "\n", Errno.EACCES);
        }
        boolean post = !get;
        if (WebView.isPage(requestPath) && get) return web.asset(ex, requestPath);
        if (!requestPath.startsWith("/v1/")) {
            if (!requestPath.equals(METRICS_PATH)) return new Reply(404, "nothing at " + requestPath + "\n", null);
            if (post) {
                ex.getResponseHeaders().set("Allow", "GET");
                return new Reply(405, "use GET for " + METRICS_PATH + "\n", Errno.EOPNOTSUPP);
            }
            return scrape();
        }
        String op = requestPath.substring("/v1/".length());
        if (post) {
            String type = in.getFirst("Content-Type");
            String media = type == null ? "" : type.split(";", 2)[0].strip().toLowerCase(Locale.ROOT);
            if (!media.equals(CONTENT_TYPE)) {
                return new Reply(415, Errno.EINVAL.message() + " (EINVAL): a POST must be Content-Type: " + CONTENT_TYPE
                                      + (type == null ? "" : " (got " + type + ")") + "\n", Errno.EINVAL);
            }
        }
        if (READS.contains(op) && post || CHANGES.contains(op) && !post) {
            ex.getResponseHeaders().set("Allow", post ? "GET" : "POST");
            return new Reply(405, "use " + (post ? "GET" : "POST") + " for " + op + "\n", Errno.EOPNOTSUPP);
        }
        return operate(ex, op);
    }

    private Reply operate(HttpExchange ex, String op) throws IOException, ControlException {
        Map<String, String> q = query(ex.getRequestURI().getRawQuery());
        String path = q.get("path");
        switch (op) {
            case "read" -> {
                return ok(tree.read(required(path)));
            }
            case "list" -> {
                return ok(String.join("\n", tree.list(path == null ? "" : path)) + "\n");
            }
            case "read-below" -> {
                return readBelow(path == null ? "" : path, required(q.get("files")));
            }
            case "devices" -> {
                return ok(devices.get());
            }
            case "save" -> {
                return ok(save.text());
            }
            case "web-login" -> {
                return ok(web.newCode() + "\n");
            }
            case "write" -> tree.write(required(path), value(ex));
            case "mkdir" -> tree.mkdir(required(path));
            case "rmdir" -> tree.rmdir(required(path));
            case "link" -> tree.link(required(q.get("target")), required(path));
            case "unlink" -> tree.unlink(required(path));
            case "watch" -> {
                return watch(ex, required(path), value(ex));
            }
            default -> {
                return new Reply(404, "unknown operation " + op + "\n", null);
            }
        }
        return new Reply(204, null, null);
    }

    /** {@code files} (comma-separated) of {@code dir} and of each directory in it, as a JSON object by directory, then by file. */
    private Reply readBelow(String dir, String files) throws ControlException {
        List<String> names = List.of(files.split(","));
        List<String> dirs = new ArrayList<>(List.of(dir));
        for (String e : tree.list(dir)) if (e.endsWith("/")) dirs.add(join(dir, e.substring(0, e.length() - 1)));
        ObjectNode all = JSON.createObjectNode();
        for (String d : dirs) {
            ObjectNode values = all.putObject(d);
            for (String f : names) {
                try {
                    values.put(f, tree.read(join(d, f)));
                } catch (ControlException unreadable) {                // not there (io.max in the root), or removed meanwhile
                    values.putNull(f);
                }
            }
        }
        return new Reply(200, all.toString(), null, "application/json");
    }

    /** {@code name} in directory {@code dir} of the tree: "" is the root group, "/" the root of every tree. */
    public static String join(String dir, String name) {
        return dir.isEmpty() || dir.endsWith("/") ? dir + name : dir + "/" + name;
    }

    /**
     * Keeps the trigger and streams an event each time it fires, a comment between them, until
     * a write fails (the client went away), the group is removed (a last {@code event: gone}
     * with the errno and reason) or the thread is interrupted; then the trigger goes.
     */
    private Reply watch(HttpExchange ex, String path, String trigger) throws ControlException, IOException {
        try (ConfigTree.Watch watch = tree.watch(path, trigger)) {
            ex.getResponseHeaders().set("Content-Type", EVENT_STREAM + "; charset=utf-8");
            ex.getResponseHeaders().set("Cache-Control", "no-store");
            ex.sendResponseHeaders(200, 0);
            try (OutputStream out = ex.getResponseBody()) {
                out.write((": watching " + path + " " + trigger.strip() + "\n\n").getBytes(StandardCharsets.UTF_8));
                out.flush();
                while (true) {
                    String event;
                    try {
                        String fired = watch.await(HEARTBEAT_NS);
                        event = fired == null ? ":\n\n" : "event: fired\ndata: " + fired + "\n\n";
                    } catch (ControlException removed) {
                        out.write(("event: gone\ndata: " + removed.getMessage() + "\n\n").getBytes(StandardCharsets.UTF_8));
                        return STREAMED;
                    }
                    out.write(event.getBytes(StandardCharsets.UTF_8));
                    out.flush();
                }
            } catch (IOException gone) {
                return STREAMED;
            } catch (InterruptedException stopping) {
                Thread.currentThread().interrupt();
                return STREAMED;
            }
        }
    }

    /** Section 1's proof: the HMAC of the challenge and the Host under the token; the token itself is not needed, nor given. */
    private Reply prove(String host, String challenge) throws ControlException {
        if (challenge == null || challenge.isEmpty() || challenge.length() > MAX_CHALLENGE_CHARS) {
            throw new ControlException(Errno.EINVAL, "a proof needs a challenge of 1 to " + MAX_CHALLENGE_CHARS + " characters");
        }
        return ok(token.prove(challenge, host) + "\n");
    }

    /** Every metric, as Prometheus' text format (version 0.0.4). */
    private Reply scrape() throws IOException {
        ByteArrayOutputStream text = new ByteArrayOutputStream(16 * 1024);
        metricsFormat.write(text, metrics.scrape());
        return new Reply(200, text.toString(StandardCharsets.UTF_8), null, metricsFormat.getContentType());
    }

    /** Every Origin header, or the origin of every Referer when there is no Origin; empty for non-browser clients. */
    private static List<String> origins(Headers in) {
        List<String> origins = in.get("Origin");
        if (origins != null) return origins;
        return in.getOrDefault("Referer", List.of()).stream().map(referer -> {
            try {
                URI uri = new URI(referer);
                return uri.getScheme() + "://" + uri.getRawAuthority();
            } catch (URISyntaxException e) {
                return referer;                             // never equal to the endpoint's origin
            }
        }).toList();
    }

    private static String value(HttpExchange ex) throws IOException, ControlException {
        byte[] body = ex.getRequestBody().readNBytes(MAX_VALUE_BYTES + 1);
        if (body.length > MAX_VALUE_BYTES) throw new ControlException(Errno.EINVAL, "a value may be at most " + MAX_VALUE_BYTES + " bytes");
        return new String(body, StandardCharsets.UTF_8);
    }

    private static String required(String v) throws ControlException {
        if (v == null || v.isEmpty()) throw new ControlException(Errno.EINVAL, "missing path");
        return v;
    }

    private static int status(Errno errno) {
        return switch (errno) {
            case ENOENT, ENODEV -> 404;
            case EEXIST, EBUSY, ENOTEMPTY -> 409;
            case EPERM, EACCES -> 403;
            default -> 400;
        };
    }

    private static Reply ok(String body) {
        return new Reply(200, body, null);
    }

    private static void send(HttpExchange ex, Reply reply) throws IOException {
        if (reply.errno != null) ex.getResponseHeaders().set(ERRNO_HEADER, reply.errno.name());
        ex.getResponseHeaders().set("Content-Type", reply.contentType);
        byte[] bytes = reply.body == null ? new byte[0] : reply.body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(reply.status, bytes.length == 0 ? -1 : bytes.length);
        if (bytes.length > 0) {
            try (OutputStream out = ex.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> q = new HashMap<>();
        if (raw == null) return q;
        for (String pair : raw.split("&")) {
            int eq = pair.indexOf('=');
            String k = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            String v = eq < 0 ? "" : URLDecoder.decode(pair.substring(eq + 1), StandardCharsets.UTF_8);
            q.put(k, v);
        }
        return q;
    }

    /** Voids the token (its file goes first, so a server started next on this address cannot lose its own), then stops. */
    @Override
    public void close() {
        try {
            token.delete();
        } catch (IOException e) {
            LOG.log(System.Logger.Level.WARNING, "cannot remove the token file " + token.file() + ": " + e.getMessage());
        }
        server.stop(0);
    }
}
