package io.iotarget.control.http;

import io.iotarget.control.http.ControlToken.TokenUnavailableException;
import io.iotarget.model.Errno;
import io.iotarget.transport.Pem;

import javax.net.ssl.HttpsURLConnection;
import javax.net.ssl.SSLContext;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.URI;
import java.net.URLEncoder;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The CLI's side of the {@link ControlEndpoint}. It sends the token only to the endpoint it
 * belongs to: by default the file named after the address it connects to, never through a
 * proxy, and over plain HTTP only to loopback. One request per call; not for the IO path.
 */
public final class ControlClient {
    /** What the endpoint answered: the body, and the errno when it refused. */
    public record Reply(int status, String body, String errno) {
        public boolean ok() {
            return status / 100 == 2;
        }
    }

    /** A {@code --control} address, token file or CA file that cannot be used. */
    public static final class TargetException extends Exception {
        private static final long serialVersionUID = 1L;

        TargetException(String message) {
            super(message);
        }
    }

    private final String base;
    private final String token;
    private final String tokenProblem;
    private final SSLContext tls;

    private ControlClient(String base, String token, String tokenProblem, SSLContext tls) {
        this.base = base;
        this.token = token;
        this.tokenProblem = tokenProblem;
        this.tls = tls;
    }

    /**
     * @param control        {@code HOST:PORT} or {@code http://HOST:PORT} (loopback only), or {@code https://HOST:PORT}
     * @param tokenFile      the token to send; null: the one the server on that address wrote in {@code tokenDirectory}
     * @param tokenDirectory where servers of this user write their token files ({@link ControlToken#directory})
     * @param caFile         PEM certificates to trust for https; null: the JDK's trusted CAs
     */
    public static ControlClient connect(String control, Path tokenFile, Path tokenDirectory, Path caFile) throws TargetException {
        boolean https = control.startsWith("https://");
        String hostPort = control.replaceFirst("^https?://", "").replaceFirst("/$", "");
        int colon = hostPort.lastIndexOf(':');
        String host = colon < 0 ? "" : hostPort.substring(0, colon);
        String port = colon < 0 ? "" : hostPort.substring(colon + 1);
        if (host.isEmpty() || !port.matches("\\d{1,5}")) {
            throw new TargetException("--control " + control + ": expected HOST:PORT, http://HOST:PORT or https://HOST:PORT");
        }
        InetAddress address;
        try {
            address = InetAddress.getByName(host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host);
        } catch (UnknownHostException e) {
            throw new TargetException("--control " + control + ": cannot resolve " + host);
        }
        if (!https && !address.isLoopbackAddress()) {
            throw new TargetException("--control " + control + ": not loopback, so only https://" + hostPort + " (the token never travels in clear)");
        }
        Path file = tokenFile != null ? tokenFile : ControlToken.file(tokenDirectory, new InetSocketAddress(address, Integer.parseInt(port)));
        String token = null;
        String problem = null;
        try {
            token = ControlToken.read(file);
        } catch (TokenUnavailableException e) {
            problem = e.getMessage();                       // ask anyway: the answer tells whether a server is there at all
        }
        SSLContext tls = null;
        if (caFile != null) {
            try {
                tls = Pem.clientContext(caFile);
            } catch (Pem.PemException e) {
                throw new TargetException("--cacert " + e.getMessage());
            }
        }
        return new ControlClient((https ? "https://" : "http://") + hostPort + "/v1/", token, problem, tls);
    }

    /** {@code http://HOST:PORT} or {@code https://HOST:PORT}, as the endpoint was named to {@link #connect}. */
    public String origin() {
        return base.substring(0, base.length() - "/v1/".length());
    }

    /** Why no token was sent (no file, or not readable), or null when one was. */
    public String tokenProblem() {
        return tokenProblem;
    }

    public Reply get(String op, String path) throws IOException {
        return call("GET", op, path, null, null);
    }

    public Reply post(String op, String path, String target, String body) throws IOException {
        return call("POST", op, path, target, body);
    }

    /**
     * Keeps {@code trigger} on the file at {@code path} until it fires once ({@code POST
     * /v1/watch}): the event's line as the body, or the refusal, or ENODEV (404) when the group
     * was removed meanwhile. Returning closes the connection, which removes the trigger on the
     * server.
     */
    public Reply watch(String path, String trigger) throws IOException {
        HttpURLConnection c = open("POST", "watch", path, null, trigger);
        try {
            int status = c.getResponseCode();
            if (status / 100 != 2) return reply(c, status);
            BufferedReader events = new BufferedReader(new InputStreamReader(c.getInputStream(), StandardCharsets.UTF_8));
            String event = "";
            for (String line; (line = events.readLine()) != null; ) {
                if (line.startsWith("event: ")) event = line.substring("event: ".length());
                if (!line.startsWith("data: ")) continue;
                String data = line.substring("data: ".length()) + "\n";
                return event.equals("gone") ? new Reply(404, data, Errno.ENODEV.name()) : new Reply(status, data, null);
            }
            throw new IOException("the server ended the watch");
        } finally {
            c.disconnect();
        }
    }

    private Reply call(String method, String op, String path, String target, String body) throws IOException {
        HttpURLConnection c = open(method, op, path, target, body);
        return reply(c, c.getResponseCode());
    }

    private static Reply reply(HttpURLConnection c, int status) throws IOException {
        InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream();
        String text = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        return new Reply(status, text, c.getHeaderField(ControlEndpoint.ERRNO_HEADER));
    }

    /** Sends the request; the answer is the caller's to read. */
    private HttpURLConnection open(String method, String op, String path, String target, String body) throws IOException {
        StringBuilder url = new StringBuilder(base).append(op);
        char sep = '?';
        if (path != null) {
            url.append(sep).append("path=").append(URLEncoder.encode(path, StandardCharsets.UTF_8));
            sep = '&';
        }
        if (target != null) url.append(sep).append("target=").append(URLEncoder.encode(target, StandardCharsets.UTF_8));
        HttpURLConnection c = (HttpURLConnection) URI.create(url.toString()).toURL().openConnection(Proxy.NO_PROXY);
        if (tls != null && c instanceof HttpsURLConnection secure) secure.setSSLSocketFactory(tls.getSocketFactory());
        c.setRequestMethod(method);
        c.setInstanceFollowRedirects(false);
        c.setConnectTimeout(5_000);
        c.setReadTimeout(60_000);
        if (token != null) c.setRequestProperty("Authorization", "Bearer " + token);
        if (method.equals("POST")) {
            c.setRequestProperty("Content-Type", ControlEndpoint.CONTENT_TYPE);
            c.setDoOutput(true);
            try (OutputStream out = c.getOutputStream()) {
                if (body != null) out.write(body.getBytes(StandardCharsets.UTF_8));
            }
        }
        return c;
    }
}
