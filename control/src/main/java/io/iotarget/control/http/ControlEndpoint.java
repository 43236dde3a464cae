package io.iotarget.control.http;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.iotarget.control.calibrate.Calibration;
import io.iotarget.model.Clock;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.iotarget.model.LogText;
import io.iotarget.model.RateLimitedLog;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;
import io.netty.handler.codec.http.DefaultHttpContent;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import io.netty.handler.codec.http.DefaultHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import javax.net.ssl.SSLContext;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The control endpoint: the configuration tree over HTTP, the same operations as the CLI
 * (which is its client).
 *
 * <pre>
 *  GET  /v1/read?path=P            200 file contents
 *  GET  /v1/list?path=P            200 one entry per line (directories end with '/')
 *  GET  /v1/list-long?path=P       200 what {@code iotarget ls -l P} prints: a group's rates measured
 *                                  over one second, its limits; elsewhere each attribute and its value
 *  GET  /v1/read-below?path=P&amp;files=F,G   200 JSON: files F, G of P and of each directory in P,
 *                                  {"P": {"F": "...", "G": null}, "P/c": {...}}, null where one
 *                                  cannot be read; one request for {@code ls -l} of 10,000 groups
 *  GET  /v1/devices                200 the device table
 *  GET  /v1/save                   200 the whole configuration as config JSON (control's ConfigSaver)
 *  POST /v1/write?path=P           body = the value, as one write(2)
 *  POST /v1/mkdir?path=P    POST /v1/rmdir?path=P
 *  POST /v1/link?path=LINK&amp;target=T    POST /v1/unlink?path=LINK
 *  POST /v1/calibrate?path=DEV     body = options ("seconds=3 force=0"): 200 and a server-sent event
 *                                  stream, "event: progress" lines, then "event: result" (the
 *                                  io.cost.model and io.cost.qos lines) or "event: error" (ERRNO message);
 *                                  a device that cannot be measured is refused before the stream
 *                                  ({@link io.iotarget.control.calibrate.Calibration})
 *  POST /v1/watch?path=P           body = a trigger (io.pressure's "some 150000 1000000"): 200 and
 *                                  a server-sent event stream, "event: fired" each time it fires,
 *                                  a last "event: gone" (ENODEV) if the group is removed
 *  GET  /metrics                   200 Prometheus text exposition format (docs/metrics.md)
 *  GET  /v1/proof?challenge=C      200 base64url HMAC-SHA256(token, C and the Host): no token needed ({@link ControlToken})
 *  POST /v1/web-login              200 what {@code iotarget web} prints: "open ORIGIN/login?code=CODE   (once,
 *                                  within 2 minutes)", ORIGIN as the request's Host names this endpoint
 *                                  (the web view, {@link WebView})
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
 * <h2>5. What a peer without the token can hold</h2>
 * Opening a connection needs nothing, so what a connection may hold before it proves anything
 * is bounded, as in a production HTTP server (docs/control.md compares the numbers with nginx's
 * and Jetty's):
 * <ul>
 *   <li>{@link #MAX_CONNECTIONS} connections in all and {@link #MAX_CONNECTIONS_PER_PEER} from one
 *       address; at a cap the lowest-ranked connection is closed to make room: the oldest that
 *       never sent a whole request, else the oldest that sent one without the token or a session,
 *       else a web session's least recently used, never one that showed the token
 *       ({@link ConnectionBudget}); so a flood of stalled connections cannot keep out a client
 *       that sends its requests as soon as it has connected, nor push out the CLI between its
 *       proof and its token;
 *   <li>{@link #MAX_CONNECTIONS_PER_SESSION} connections for one web session and
 *       {@link #MAX_SESSION_CONNECTIONS} for all of them, a quarter of one address's cap, past
 *       which a session's least recently used connection is closed: a read-only session never
 *       fills a cap and so never locks out the owner;
 *   <li>the request line and headers within {@link #HEAD_TIMEOUT_NS} of connecting (TLS
 *       handshake included) or of the first byte of a kept-alive connection's next request,
 *       {@link #MAX_LINE_BYTES} and {@link #MAX_HEADER_BYTES} long at most; the body within
 *       {@link #BODY_TIMEOUT_NS} of the headers, {@link #MAX_VALUE_BYTES} long at most;
 *   <li>{@link #IDLE_TIMEOUT_NS} between a response and the next request once the connection
 *       has shown the token or a session ({@link #HEAD_TIMEOUT_NS} before), {@link #SEND_TIMEOUT_NS}
 *       for the client to take a response (or a watch's next event).
 * </ul>
 * Past a deadline the connection is closed. A stalled connection costs a channel and its
 * handlers on the endpoint's one event loop, no thread: Netty's HTTP codec
 * (docs/decisions.md). A complete request runs on a virtual thread while the connection
 * reads nothing more, so there are never more requests in service than connections.
 */
public final class ControlEndpoint implements AutoCloseable {
    public static final String ERRNO_HEADER = "X-Iotarget-Errno";
    /** The only request body type: not one a browser may send cross-origin without asking. */
    public static final String CONTENT_TYPE = "application/octet-stream";
    /** The default address, loopback only. */
    public static final InetSocketAddress DEFAULT_ADDRESS = new InetSocketAddress("127.0.0.1", 9809);
    /**
     * {@link #DEFAULT_ADDRESS} as the CLI names it: a constant, so that a client command does not
     * initialise this class: its logger and JSON mapper would load ~450 classes into every command.
     */
    public static final String DEFAULT_HOST_PORT = "127.0.0.1:9809";
    /** Longer than any attribute's value; a client cannot make the server buffer more. */
    static final int MAX_VALUE_BYTES = 64 * 1024;
    /** Where the CLI has the server prove it holds the token before it sends anything else; needs no token (class doc, section 1). */
    public static final String PROOF_PATH = "/v1/proof";
    /** Longer than the CLI's challenge; a challenge is never stored. */
    private static final int MAX_CHALLENGE_CHARS = 256;
    /** Where Prometheus scrapes; needs the token like every other request. */
    public static final String METRICS_PATH = "/metrics";
    /**
     * Connections kept at once: the CLI uses one per command, Prometheus one, a browser six, a
     * watch one each; 1,024 is far beyond that and a small share of the descriptors
     * (the server checks at start that every listener's caps fit under RLIMIT_NOFILE).
     */
    public static final int MAX_CONNECTIONS = 1024;
    /** Connections from one address: a quarter, so that a few remote peers cannot fill the rest. */
    public static final int MAX_CONNECTIONS_PER_PEER = 256;
    /**
     * Connections one web session may hold: a browser opens at most six to one host (Chromium's
     * and Firefox's default) and shares them among its tabs; 16 leaves room for a reload that
     * opens new ones before the old ones close. Past it the session's least recently used
     * connection is closed ({@link ConnectionBudget} section 3).
     */
    public static final int MAX_CONNECTIONS_PER_SESSION = 16;
    /**
     * Connections every web session together may hold: ten browsers' six, and a quarter of
     * {@link #MAX_CONNECTIONS_PER_PEER}, so that read-only sessions never fill a cap and the
     * owner's CLI always finds room ({@link ConnectionBudget} section 3).
     */
    public static final int MAX_SESSION_CONNECTIONS = 64;
    /** The request line and headers: a client sends them at once; 10 s covers a TLS handshake over a slow link. */
    public static final long HEAD_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);
    /** A body of at most {@link #MAX_VALUE_BYTES}: 64 KiB in 10 s is 6.5 KB/s, slower than any link we serve. */
    static final long BODY_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);
    /**
     * Between a response and the next request on a connection that has shown the token or a
     * session: longer than the CLI's and Prometheus' reuse of a connection needs. Others get
     * {@link #HEAD_TIMEOUT_NS} from the response on.
     */
    static final long IDLE_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(30);
    /** For a client to take a response or a watch's next event, as the front ends' send timeout. */
    static final long SEND_TIMEOUT_NS = TimeUnit.SECONDS.toNanos(10);
    /** The request line: a path and a query of file paths, never near this. */
    static final int MAX_LINE_BYTES = 8 * 1024;
    /** All headers together (Netty's, nginx's and Jetty's default). */
    static final int MAX_HEADER_BYTES = 8 * 1024;
    private static final int BACKLOG = 1024;
    private static final Set<String> READS = Set.of("read", "list", "list-long", "read-below", "devices", "save");
    private static final Set<String> CHANGES = Set.of("write", "mkdir", "rmdir", "link", "unlink", "watch", "web-login", "calibrate");
    /** How often a watch's stream proves the client is still there. */
    static final long HEARTBEAT_NS = 1_000_000_000L;
    /** The content type of a watch's stream. */
    public static final String EVENT_STREAM = "text/event-stream";
    private static final System.Logger LOG = System.getLogger(ControlEndpoint.class.getName());

    static {
        // Netty's own logs go where the JDK's go, before any Netty class makes its logger: left to
        // itself Netty picks SLF4J whenever an slf4j-api is on the class path (a test's is, through
        // ArchUnit) and, without a provider, SLF4J prints its warnings into the server's output.
        io.netty.util.internal.logging.InternalLoggerFactory.setDefaultFactory(io.netty.util.internal.logging.JdkLoggerFactory.INSTANCE);
    }
    private static final ObjectMapper JSON = new ObjectMapper();
    /** Requests that failed unexpectedly (a bug a client may trigger over and over): this many lines a second, the rest counted. */
    static final int REQUEST_FAILURE_LINES_PER_SECOND = 5;
    /** The request line is the client's: clipped and escaped, so that it cannot fill or forge lines. */
    private final RateLimitedLog requestFailures = new RateLimitedLog(
            LOG, System.Logger.Level.ERROR, Clock.SYSTEM, REQUEST_FAILURE_LINES_PER_SECOND, "failed control request(s)");

    private final SSLContext tls;
    /** The endpoint's one event loop: accepts, reads, deadlines. */
    private final EventLoopGroup loop;
    private final Channel listener;
    /** Every connection's caps, deadlines and requests ({@link HttpConnections}). */
    private final HttpConnections connections;
    private final InetSocketAddress bound;
    private final ControlToken token;
    /** Host header values that name this endpoint (lower case); unused under TLS. */
    private final List<String> hostNames;
    private final ConfigTree tree;
    private final Supplier<String> devices;
    private final PrometheusRegistry metrics;
    private final PrometheusTextFormatWriter metricsFormat = PrometheusTextFormatWriter.create();

    private final Report save;
    private final Listing longListing;
    private final Calibrator calibrator;
    private final WebView web;

    /** Starts the calibration of a device; a refusal (no device, in use) is thrown here, before any stream. */
    @FunctionalInterface
    public interface Calibrator {
        Calibration prepare(String device, String options) throws ControlException;
    }

    /** A text the endpoint serves whole, made when asked. */
    @FunctionalInterface
    public interface Report {
        String text() throws ControlException;
    }

    /** A text about one directory of the tree, made when asked; a refusal (no such directory) is thrown. */
    @FunctionalInterface
    public interface Listing {
        String text(String path) throws ControlException;
    }

    /**
     * Binds {@code address}, writes the token file in {@code tokenDirectory}, then serves.
     *
     * @param tls     null for plain HTTP, which only a loopback address may use
     * @param metrics what {@code GET /metrics} scrapes
     * @param save       the configuration as {@code serve --config} takes it
     * @param longListing what {@code ls -l PATH} prints (control's LongListing): made here, so that
     *                    every client prints the same text without formatting it
     * @param calibrator {@code calibrate}'s measurements of a device
     * @throws java.net.BindException when the address is taken
     */
    public ControlEndpoint(InetSocketAddress address, SSLContext tls, Path tokenDirectory, ConfigTree tree, Supplier<String> devices,
                           PrometheusRegistry metrics, Report save, Listing longListing, Calibrator calibrator) throws IOException {
        if (tls == null && !address.getAddress().isLoopbackAddress()) {
            throw new IllegalArgumentException(hostPort(address) + " is not loopback: the control endpoint serves it only with TLS");
        }
        this.tls = tls;
        this.tree = tree;
        this.devices = devices;
        this.metrics = metrics;
        this.save = save;
        this.longListing = longListing;
        this.calibrator = calibrator;
        this.connections = new HttpConnections(tls, this::shows, this::answer);
        this.loop = new MultiThreadIoEventLoopGroup(1, Thread.ofPlatform().name("iotarget-control").daemon().factory(),
                                                   NioIoHandler.newFactory());
        ChannelFuture bind = new ServerBootstrap().group(loop).channel(NioServerSocketChannel.class)
                .option(ChannelOption.SO_BACKLOG, BACKLOG)
                .option(ChannelOption.AUTO_READ, false)         // no accepting before the token exists
                .childOption(ChannelOption.ALLOW_HALF_CLOSURE, true)   // a request then FIN is still answered
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(SocketChannel channel) {
                        connections.open(channel);
                    }
                })
                .bind(address).awaitUninterruptibly();
        if (!bind.isSuccess()) {
            loop.shutdownGracefully(0, 0, TimeUnit.SECONDS);
            if (bind.cause() instanceof IOException e) throw e;
            throw new IOException("cannot listen on " + hostPort(address) + ": " + bind.cause(), bind.cause());
        }
        this.listener = bind.channel();
        listener.pipeline().addLast(connections.acceptFailures());     // after Netty's acceptor, which is in place once bound
        this.bound = (InetSocketAddress) listener.localAddress();
        this.hostNames = List.of(hostPort(bound), "localhost:" + bound.getPort());
        this.web = new WebView(bound.getPort(), tls != null);
        try {
            this.token = ControlToken.create(ControlToken.file(tokenDirectory, bound));
        } catch (IOException | RuntimeException e) {
            stop();
            throw e;
        }
        listener.config().setAutoRead(true);
    }

    public InetSocketAddress address() {
        return bound;
    }

    /** {@code http://127.0.0.1:9809} or {@code https://...}. */
    public String url() {
        return (tls() ? "https://" : "http://") + hostPort(address());
    }

    public boolean tls() {
        return tls != null;
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

    /**
     * What the endpoint holds and has shed, for tests and the log. Any thread.
     *
     * @param connections connections kept now
     * @param unproven    of those, the ones no request has yet admitted with the token or a session
     * @param sessions    of those, the ones a web session admitted (at most {@link #MAX_SESSION_CONNECTIONS})
     * @param refused     connections closed at once: every connection at a cap had shown the token
     * @param evicted     connections closed to make room: unproven or session ones for a newcomer, a session's past its caps
     * @param timedOut    connections closed at a deadline (head, body, idle, send)
     */
    public record Load(int connections, int unproven, int sessions, long refused, long evicted, long timedOut) {
    }

    public Load load() {
        try {
            return loop.submit(connections::load).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    // ------------------------------------------------------------------ requests (a virtual thread each)

    /**
     * One complete request: its head, its body, and the response's headers being built.
     *
     * @param keepAlive whether the connection stays after the response (HTTP/1.1 unless {@code Connection: close})
     */
    record Exchange(String method, URI uri, HttpHeaders in, byte[] body, Channel channel, boolean keepAlive, HttpHeaders out) {
        Exchange(String method, URI uri, HttpHeaders in, byte[] body, Channel channel, boolean keepAlive) {
            this(method, uri, in, body, channel, keepAlive, new DefaultHttpHeaders());
        }
    }

    record Reply(int status, String body, Errno errno, String contentType) {
        Reply(int status, String body, Errno errno) {
            this(status, body, errno, "text/plain; charset=utf-8");
        }
    }

    /** The operation answered on its own (a watch's stream): nothing more to send. */
    static final Reply STREAMED = new Reply(200, null, null);

    /** The answer to one request, whatever happens: the connection layer sends it. On the request's virtual thread. */
    private Reply answer(Exchange ex) {
        try {
            return serve(ex);
        } catch (ControlException e) {
            return new Reply(status(e.errno()), e.getMessage() + "\n", e.errno());
        } catch (Throwable t) {     // a bug, or a machine out of something: answer and log, never drop the client
            try {
                requestFailures.log("control request " + LogText.clip(ex.method()) + " " + LogText.clip(String.valueOf(ex.uri()))
                                    + " failed", t);
            } catch (Throwable unlogged) {
                // out of memory for the log too: the answer still goes out
            }
            return new Reply(500, "internal error: " + t + " (the server logged it)\n", Errno.EIO);
        }
    }

    /** What a request shows, which ranks its connection (section 5): the token, else a live web session, else nothing. */
    private ConnectionBudget.Shown shows(HttpHeaders in) {
        if (token.matches(in.get(HttpHeaderNames.AUTHORIZATION))) return ConnectionBudget.Shown.TOKEN;
        Object session = web.session(in);
        return session == null ? ConnectionBudget.Shown.NOTHING : new ConnectionBudget.Shown.Session(session);
    }

    /** Admission (sections 1 and 2 of the class doc), then the operation. */
    private Reply serve(Exchange ex) throws IOException, ControlException {
        HttpHeaders in = ex.in();
        List<String> hosts = in.getAll(HttpHeaderNames.HOST);
        if (hosts.size() != 1 || !tls() && !hostNames.contains(hosts.getFirst().toLowerCase(Locale.ROOT))) {
            throw new ControlException(Errno.EACCES, "Host " + String.join(", ", hosts) + " does not name this endpoint (expected "
                                                     + String.join(" or ", hostNames) + ")");
        }
        String ownOrigin = (tls() ? "https://" : "http://") + hosts.getFirst();
        for (String origin : origins(in)) {
            if (!origin.equalsIgnoreCase(ownOrigin)) {
                throw new ControlException(Errno.EACCES, "cross-origin request from " + origin + " (this endpoint serves only " + ownOrigin + ")");
            }
        }
        String method = ex.method();
        if (!method.equals("GET") && !method.equals("POST")) {
            ex.out().set("Allow", "GET, POST");
            return new Reply(405, method + " is not served: GET reads, POST changes (and no CORS preflight is granted)\n", Errno.EOPNOTSUPP);
        }
        String requestPath = ex.uri().getPath();
        if (requestPath == null || requestPath.isEmpty()) return new Reply(404, "nothing at " + ex.uri() + "\n", null);
        boolean get = method.equals("GET");
        if (get && requestPath.equals(PROOF_PATH)) return prove(hosts.getFirst(), query(ex.uri().getRawQuery()).get("challenge"));
        if (!token.matches(in.get(HttpHeaderNames.AUTHORIZATION))
            && !(get && web.hasSession(in) && WebView.sessionMay(requestPath, query(ex.uri().getRawQuery())))) {
            if (get && requestPath.equals(WebView.LOGIN_PATH)) return web.login(ex, query(ex.uri().getRawQuery()).get("code"));
            if (get && WebView.isPage(requestPath)) return web.loginNeeded(ex, "This page needs a login.");
            ex.out().set("WWW-Authenticate", "Bearer realm=\"iotarget\"");
            String why = in.contains(HttpHeaderNames.AUTHORIZATION) ? "wrong token" : "this endpoint needs its token (Authorization: Bearer TOKEN)";
            return new Reply(401, Errno.EACCES.message() + " (EACCES): " + why + "\n", Errno.EACCES);
        }
        boolean post = !get;
        if (WebView.isPage(requestPath) && get) return web.asset(ex, requestPath);
        if (!requestPath.startsWith("/v1/")) {
            if (!requestPath.equals(METRICS_PATH)) return new Reply(404, "nothing at " + requestPath + "\n", null);
            if (post) {
                ex.out().set("Allow", "GET");
                return new Reply(405, "use GET for " + METRICS_PATH + "\n", Errno.EOPNOTSUPP);
            }
            return scrape();
        }
        String op = requestPath.substring("/v1/".length());
        if (post) {
            String type = in.get(HttpHeaderNames.CONTENT_TYPE);
            String media = type == null ? "" : type.split(";", 2)[0].strip().toLowerCase(Locale.ROOT);
            if (!media.equals(CONTENT_TYPE)) {
                return new Reply(415, Errno.EINVAL.message() + " (EINVAL): a POST must be Content-Type: " + CONTENT_TYPE
                                      + (type == null ? "" : " (got " + type + ")") + "\n", Errno.EINVAL);
            }
        }
        if (READS.contains(op) && post || CHANGES.contains(op) && !post) {
            ex.out().set("Allow", post ? "GET" : "POST");
            return new Reply(405, "use " + (post ? "GET" : "POST") + " for " + op + "\n", Errno.EOPNOTSUPP);
        }
        return operate(ex, op, ownOrigin);
    }

    /** {@code origin}: this endpoint as the client named it (its Host), for the web view's address. */
    private Reply operate(Exchange ex, String op, String origin) throws ControlException {
        Map<String, String> q = query(ex.uri().getRawQuery());
        String path = q.get("path");
        String value = new String(ex.body(), StandardCharsets.UTF_8);
        switch (op) {
            case "read" -> {
                return ok(tree.read(required(path)));
            }
            case "list" -> {
                return ok(String.join("\n", tree.list(path == null ? "" : path)) + "\n");
            }
            case "list-long" -> {
                return ok(longListing.text(path == null ? "" : path));
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
                return ok("open " + origin + WebView.LOGIN_PATH + "?code=" + web.newCode() + "   (once, within "
                          + TimeUnit.NANOSECONDS.toMinutes(WebSessions.CODE_LIFETIME_NS) + " minutes)\n");
            }
            case "write" -> tree.write(required(path), value);
            case "mkdir" -> tree.mkdir(required(path));
            case "rmdir" -> tree.rmdir(required(path));
            case "link" -> tree.link(required(q.get("target")), required(path));
            case "unlink" -> tree.unlink(required(path));
            case "watch" -> {
                return watch(ex, required(path), value);
            }
            case "calibrate" -> {
                return calibrate(ex, required(path), value);
            }
            default -> {
                return new Reply(404, "unknown operation " + op + "\n", null);
            }
        }
        return new Reply(204, null, null);
    }

    /** {@code files} (comma-separated) of {@code dir} and of each directory in it, as a JSON object by directory, then by file. */
    private Reply readBelow(String dir, String files) throws ControlException {
        ObjectNode all = JSON.createObjectNode();
        readBelow(tree, dir, List.of(files.split(","))).forEach((d, values) -> {
            ObjectNode json = all.putObject(d);
            values.forEach(json::put);                                  // null: a JSON null
        });
        return new Reply(200, all.toString(), null, "application/json");
    }

    /**
     * {@code files} of {@code dir} and of each directory in it, by directory ({@code dir} first,
     * then the tree's order), then by file; null where one cannot be read: not there (io.max in
     * the root), or removed meanwhile. Not one snapshot: each file is read when its turn comes.
     * ENOENT (thrown) when {@code dir} cannot be listed. Any thread.
     */
    public static Map<String, Map<String, String>> readBelow(ConfigTree tree, String dir, List<String> files) throws ControlException {
        List<String> dirs = new ArrayList<>(List.of(dir));
        for (String e : tree.list(dir)) if (e.endsWith("/")) dirs.add(join(dir, e.substring(0, e.length() - 1)));
        Map<String, Map<String, String>> all = new LinkedHashMap<>();
        for (String d : dirs) {
            Map<String, String> values = new LinkedHashMap<>();
            for (String f : files) {
                try {
                    values.put(f, tree.read(join(d, f)));
                } catch (ControlException unreadable) {
                    values.put(f, null);
                }
            }
            all.put(d, values);
        }
        return all;
    }

    /** {@code name} in directory {@code dir} of the tree: "" is the root group, "/" the root of every tree. */
    public static String join(String dir, String name) {
        return dir.isEmpty() || dir.endsWith("/") ? dir + name : dir + "/" + name;
    }

    /**
     * Keeps the trigger and streams an event each time it fires, a comment between them, until
     * a write fails or is not taken within {@link #SEND_TIMEOUT_NS} (the client went away or
     * stopped reading), the group is removed (a last {@code event: gone} with the errno and
     * reason) or the thread is interrupted; then the trigger goes.
     */
    private Reply watch(Exchange ex, String path, String trigger) throws ControlException {
        try (ConfigTree.Watch watch = tree.watch(path, trigger)) {
            DefaultHttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, EVENT_STREAM + "; charset=utf-8");
            head.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-store");
            HttpUtil.setTransferEncodingChunked(head, true);
            if (!sent(ex.channel(), head) || !sent(ex.channel(), chunk(": watching " + path + " " + trigger.strip() + "\n\n"))) return STREAMED;
            while (true) {
                String event;
                try {
                    String fired = watch.await(HEARTBEAT_NS);
                    event = fired == null ? ":\n\n" : "event: fired\ndata: " + fired + "\n\n";
                } catch (ControlException removed) {
                    if (sent(ex.channel(), chunk("event: gone\ndata: " + removed.getMessage() + "\n\n"))) sent(ex.channel(), LastHttpContent.EMPTY_LAST_CONTENT);
                    return STREAMED;
                }
                if (!sent(ex.channel(), chunk(event))) return STREAMED;
            }
        } catch (InterruptedException stopping) {
            Thread.currentThread().interrupt();
            return STREAMED;
        }
    }

    /**
     * Measures the device, streaming each progress line as an event; the last event is the
     * result or the error that stopped it. A client that goes away (a write not taken within
     * {@link #SEND_TIMEOUT_NS}) stops the calibration at its next line, within a second.
     */
    private Reply calibrate(Exchange ex, String device, String options) throws ControlException {
        try (Calibration calibration = calibrator.prepare(device, options)) {
            DefaultHttpResponse head = new DefaultHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.OK);
            head.headers().set(HttpHeaderNames.CONTENT_TYPE, EVENT_STREAM + "; charset=utf-8");
            head.headers().set(HttpHeaderNames.CACHE_CONTROL, "no-store");
            HttpUtil.setTransferEncodingChunked(head, true);
            if (!sent(ex.channel(), head)) return STREAMED;
            String last;
            try {
                Calibration.Result result = calibration.run(line -> sent(ex.channel(), chunk("event: progress\ndata: " + line + "\n\n")));
                last = "event: result\ndata: " + result.modelLine() + "\ndata: " + result.qosLine() + "\n\n";
            } catch (ControlException failed) {
                last = "event: error\ndata: " + failed.errno().name() + " " + failed.getMessage() + "\n\n";
            }
            if (sent(ex.channel(), chunk(last))) sent(ex.channel(), LastHttpContent.EMPTY_LAST_CONTENT);
            return STREAMED;
        } catch (InterruptedException stopping) {
            Thread.currentThread().interrupt();
            return STREAMED;
        }
    }

    private static HttpContent chunk(String text) {
        return new DefaultHttpContent(Unpooled.copiedBuffer(text, StandardCharsets.UTF_8));
    }

    /** Writes and waits until the client has taken it into its socket buffer, at most {@link #SEND_TIMEOUT_NS}. */
    private static boolean sent(Channel channel, Object message) throws InterruptedException {
        ChannelFuture written = channel.writeAndFlush(message);
        return written.await(SEND_TIMEOUT_NS, TimeUnit.NANOSECONDS) && written.isSuccess();
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
    private static List<String> origins(HttpHeaders in) {
        List<String> origins = in.getAll(HttpHeaderNames.ORIGIN);
        if (!origins.isEmpty()) return origins;
        return in.getAll(HttpHeaderNames.REFERER).stream().map(referer -> {
            try {
                URI uri = new URI(referer);
                return uri.getScheme() + "://" + uri.getRawAuthority();
            } catch (URISyntaxException e) {
                return referer;                             // never equal to the endpoint's origin
            }
        }).toList();
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
        stop();
    }

    /** Closes the listening socket and every connection, ends the watches, and waits for the loop to end. */
    private void stop() {
        listener.close().awaitUninterruptibly();
        loop.shutdownGracefully(0, 2, TimeUnit.SECONDS).awaitUninterruptibly();
        connections.close();
    }
}
