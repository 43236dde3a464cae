package io.iotarget.control.http;

import io.iotarget.control.http.ControlEndpoint.Exchange;
import io.iotarget.control.http.ControlEndpoint.Reply;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpHeaders;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The live web view at {@code /}: hand-written HTML, CSS and JavaScript served from the jar
 * ({@code resources/io/iotarget/control/http/web/}), which poll {@code /metrics} and the
 * group tree's files and draw them. The server only serves the files and admits the browser.
 *
 * <h2>1. Logging in without the token in the browser</h2>
 * A browser cannot send the bearer token, and a token in a URL would stay in its history. So
 * {@code bin/iotarget web}, which has the token, asks for a one-time code
 * ({@code POST /v1/web-login}, which answers the line the CLI prints) and prints
 * {@code open http://127.0.0.1:9809/login?code=CODE ...}. Opening
 * it exchanges the code for a session ({@link WebSessions}) kept in a cookie
 * ({@code HttpOnly; SameSite=Strict}, {@code Secure} under TLS, named after the port since
 * cookies are shared by every port of a host) and redirects to {@code /}: the code is used up
 * and out of the address bar. Without a live session {@code /} answers a plain page that says
 * how to log in, and no data.
 *
 * <h2>2. What a session may do: read, and read little</h2>
 * The endpoint's Host and Origin checks apply to cookie requests as to every other. A session
 * admits only GETs, and of those only what the page reads ({@link #sessionMay}): the page's own
 * files, {@code /metrics}, {@code /v1/devices}, and {@code list}/{@code read} of the group tree
 * (relative paths: groups and their io.* files). Never a change, never {@code /v1/save}, never
 * the NBD and nvmet trees, whose files hold keys and paths; exports and namespaces reach the
 * page through the {@code _info} metrics.
 *
 * <p>Any thread.
 */
final class WebView {
    static final String LOGIN_PATH = "/login";
    /** Where the page's own files are, besides {@code /} itself. */
    private static final String ASSETS = "/web/";
    private static final String RESOURCES = "web/";
    private static final Map<String, String> TYPES = Map.of(
            "html", "text/html; charset=utf-8", "css", "text/css; charset=utf-8", "js", "text/javascript; charset=utf-8");
    /** Only the page's own files may run or be fetched, and no other page may frame it. */
    private static final String POLICY = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
                                         + "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

    private final WebSessions sessions = new WebSessions();
    private final String cookieName;
    private final boolean tls;

    WebView(int port, boolean tls) {
        this.cookieName = "iotarget-" + port;
        this.tls = tls;
    }

    /** A login code for {@code POST /v1/web-login}. */
    String newCode() {
        return sessions.newCode(System.nanoTime());
    }

    /** Whether a request path is the page or one of its files. */
    static boolean isPage(String path) {
        return path.equals("/") || path.startsWith(ASSETS);
    }

    /** Section 2: what a live session may GET. */
    static boolean sessionMay(String requestPath, Map<String, String> query) {
        if (isPage(requestPath) || requestPath.equals(ControlEndpoint.METRICS_PATH) || requestPath.equals("/v1/devices")) return true;
        String path = query.getOrDefault("path", "");
        return (requestPath.equals("/v1/list") || requestPath.equals("/v1/read")) && !path.startsWith("/");
    }

    /** Whether the request carries this endpoint's cookie with a live session. */
    boolean hasSession(HttpHeaders in) {
        return session(in) != null;
    }

    /** The live session the request's cookie names (equal for every request of one session), or null. */
    Object session(HttpHeaders in) {
        String session = cookie(in.getAll(HttpHeaderNames.COOKIE));
        return sessions.valid(session, System.nanoTime()) ? session : null;
    }

    private String cookie(List<String> headers) {
        for (String header : headers) {
            for (String pair : header.split(";")) {
                int eq = pair.indexOf('=');
                if (eq > 0 && pair.substring(0, eq).strip().equals(cookieName)) return pair.substring(eq + 1).strip();
            }
        }
        return null;
    }

    /** {@code GET /login?code=CODE}: a session cookie and a redirect to {@code /}, or the login page again. */
    Reply login(Exchange ex, String code) {
        HttpHeaders out = ex.out();
        guard(out);
        String session = sessions.redeem(code, System.nanoTime());
        if (session == null) return loginNeeded(ex, "This login link is used up or expired.");
        out.set("Set-Cookie", cookieName + "=" + session + "; Path=/; Max-Age=" + TimeUnit.NANOSECONDS.toSeconds(WebSessions.SESSION_LIFETIME_NS)
                              + "; HttpOnly; SameSite=Strict" + (tls ? "; Secure" : ""));
        out.set("Location", "/");
        return new Reply(303, null, null);
    }

    /** The page for a browser without a session: how to get one, and nothing else. */
    Reply loginNeeded(Exchange ex, String why) {
        guard(ex.out());
        return new Reply(401, """
                <!DOCTYPE html>
                <html lang="en"><head><meta charset="utf-8"><title>iotarget: log in</title></head>
                <body><h1>iotarget</h1><p>%s</p>
                <p>Run <code>bin/iotarget web</code> as the user who started the server, and open the address it prints.</p>
                </body></html>
                """.formatted(why), null, TYPES.get("html"));
    }

    /** {@code /} and {@code /web/NAME} from the jar's resources. */
    Reply asset(Exchange ex, String requestPath) throws IOException {
        String name = requestPath.equals("/") ? "index.html" : requestPath.substring(ASSETS.length());
        int dot = name.lastIndexOf('.');
        String type = dot < 0 ? null : TYPES.get(name.substring(dot + 1));
        if (type == null || !name.matches("[a-z0-9-]+\\.[a-z]+")) return new Reply(404, "nothing at " + requestPath + "\n", null);
        try (InputStream in = WebView.class.getResourceAsStream(RESOURCES + name)) {
            if (in == null) return new Reply(404, "nothing at " + requestPath + "\n", null);
            guard(ex.out());
            return new Reply(200, new String(in.readAllBytes(), StandardCharsets.UTF_8), null, type);
        }
    }

    /** Headers on everything the browser renders: its own files only, no framing, no caching, no referrer with a code in it. */
    private static void guard(HttpHeaders out) {
        out.set("Content-Security-Policy", POLICY);
        out.set("X-Frame-Options", "DENY");
        out.set("X-Content-Type-Options", "nosniff");
        out.set("Referrer-Policy", "same-origin");
        out.set("Cache-Control", "no-store");
    }
}
