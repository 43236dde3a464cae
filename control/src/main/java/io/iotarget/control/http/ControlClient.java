package io.iotarget.control.http;

import io.iotarget.control.http.ControlToken.TokenUnavailableException;
import io.iotarget.model.Errno;
import io.iotarget.transport.Pem;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.HttpEntity;
import org.apache.hc.core5.http.HttpException;
import org.apache.hc.core5.http.config.Http1Config;
import org.apache.hc.core5.http.impl.io.DefaultBHttpClientConnection;
import org.apache.hc.core5.http.impl.io.HttpRequestExecutor;
import org.apache.hc.core5.http.io.entity.ByteArrayEntity;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.message.BasicClassicHttpRequest;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.protocol.HttpCoreContext;

import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Proxy;
import java.net.Socket;
import java.net.URLEncoder;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.function.Consumer;

/**
 * The CLI's side of the {@link ControlEndpoint}. It sends the token only to the endpoint it
 * belongs to, and only once that endpoint has proved it holds it: one connection, opened
 * directly (never through a proxy; over plain HTTP only to loopback), whose first request is
 * {@code GET /v1/proof} with a fresh challenge ({@link ControlToken} section 1). The token and
 * every request follow on that same connection, so nothing reaches a listener that has not
 * proved itself, even one that takes the port between two requests; a new connection proves
 * itself again. Without a token it sends nothing at all. One thread; not for the IO path.
 */
public final class ControlClient implements AutoCloseable {
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

    /** The listener on the address did not prove it holds the token: nothing was sent to it. */
    public static final class UnprovenServerException extends IOException {
        private static final long serialVersionUID = 1L;

        UnprovenServerException(String message) {
            super(message);
        }
    }

    private static final int CONNECT_TIMEOUT_MS = 5_000;
    /** The proof is a hash: a server that takes longer is not answering it. */
    private static final int PROOF_TIMEOUT_MS = 10_000;
    private static final int READ_TIMEOUT_MS = 60_000;
    private static final int CHALLENGE_BYTES = 32;
    private final InetAddress address;
    private final String host;
    private final int port;
    /** The Host header, and what the proof covers: {@code HOST:PORT} as named to {@link #connect}. */
    private final String hostPort;
    private final Path tokenFile;
    private final byte[] token;
    private final SSLContext tls;
    private final HttpRequestExecutor executor = new HttpRequestExecutor();
    /** The connection whose listener proved itself, or null before the first request and after it closed. */
    private DefaultBHttpClientConnection proven;

    private ControlClient(InetAddress address, String host, int port, String hostPort, Path tokenFile, byte[] token, SSLContext tls) {
        this.address = address;
        this.host = host;
        this.port = port;
        this.hostPort = hostPort;
        this.tokenFile = tokenFile;
        this.token = token;
        this.tls = tls;
    }

    /**
     * Reads the token; connects at the first request.
     *
     * @param control        {@code HOST:PORT} or {@code http://HOST:PORT} (loopback only), or {@code https://HOST:PORT}
     * @param tokenFile      the token to send; null: the one the server on that address wrote in {@code tokenDirectory}
     * @param tokenDirectory where servers of this user write their token files ({@link ControlToken#directory})
     * @param caFile         PEM certificates to trust for https; null: the JDK's trusted CAs
     * @throws TargetException a bad address or CA file, or no token to use (no file, or one another user could have placed)
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
        String bareHost = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        InetAddress address;
        try {
            address = InetAddress.getByName(bareHost);
        } catch (UnknownHostException e) {
            throw new TargetException("--control " + control + ": cannot resolve " + host);
        }
        if (!https && !address.isLoopbackAddress()) {
            throw new TargetException("--control " + control + ": not loopback, so only https://" + hostPort + " (the token never travels in clear)");
        }
        Path file = tokenFile != null ? tokenFile : ControlToken.file(tokenDirectory, new InetSocketAddress(address, Integer.parseInt(port)));
        byte[] token;
        try {
            token = ControlToken.read(file).getBytes(StandardCharsets.US_ASCII);
        } catch (TokenUnavailableException e) {
            throw new TargetException(e.getMessage() + "; nothing was sent");
        }
        SSLContext tls = null;
        if (https) {
            try {
                tls = caFile != null ? Pem.clientContext(caFile) : SSLContext.getDefault();
            } catch (Pem.PemException e) {
                throw new TargetException("--cacert " + e.getMessage());
            } catch (NoSuchAlgorithmException e) {
                throw new TargetException("no TLS in this JDK: " + e.getMessage());
            }
        } else if (caFile != null) {
            throw new TargetException("--cacert is for https:// endpoints; " + control + " is plain HTTP");
        }
        return new ControlClient(address, bareHost, Integer.parseInt(port), hostPort, file, token, tls);
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
        ClassicHttpRequest request = request("POST", "watch", path, null, trigger);
        try {
            ClassicHttpResponse response = execute(request);
            int status = response.getCode();
            if (status / 100 != 2) return reply(request, response);
            BufferedReader events = new BufferedReader(new InputStreamReader(response.getEntity().getContent(), StandardCharsets.UTF_8));
            String event = "";
            for (String line; (line = events.readLine()) != null; ) {
                if (line.startsWith("event: ")) event = line.substring("event: ".length());
                if (!line.startsWith("data: ")) continue;
                String data = line.substring("data: ".length()) + "\n";
                return event.equals("gone") ? new Reply(404, data, Errno.ENODEV.name()) : new Reply(status, data, null);
            }
            throw new IOException("the server ended the watch");
        } finally {
            close();
        }
    }

    /**
     * Calibrates {@code device} ({@code POST /v1/calibrate}): each progress line goes to
     * {@code progress} as it comes; the reply holds the io.cost.model and io.cost.qos lines, or
     * the refusal, or the error that stopped the run (its errno). Returning closes the
     * connection, which stops a calibration still running on the server.
     */
    public Reply calibrate(String device, String options, Consumer<String> progress) throws IOException {
        ClassicHttpRequest request = request("POST", "calibrate", device, null, options);
        try {
            ClassicHttpResponse response = execute(request);
            int status = response.getCode();
            if (status / 100 != 2) return reply(request, response);
            BufferedReader events = new BufferedReader(new InputStreamReader(response.getEntity().getContent(), StandardCharsets.UTF_8));
            String event = "";
            StringBuilder data = new StringBuilder();
            for (String line; (line = events.readLine()) != null; ) {
                if (line.startsWith("event: ")) event = line.substring("event: ".length());
                if (line.startsWith("data: ")) data.append(line.substring("data: ".length())).append('\n');
                if (!line.isEmpty()) continue;
                switch (event) {
                    case "progress" -> progress.accept(data.toString());
                    case "result" -> {
                        return new Reply(status, data.toString(), null);
                    }
                    case "error" -> {
                        String[] errnoAndMessage = data.toString().split(" ", 2);
                        return new Reply(400, errnoAndMessage.length == 2 ? errnoAndMessage[1] : data.toString(), errnoAndMessage[0]);
                    }
                    default -> { }
                }
                event = "";
                data.setLength(0);
            }
            throw new IOException("the server ended the calibration without a result");
        } finally {
            close();
        }
    }

    /** Closes the connection, if one is open. */
    @Override
    public void close() throws IOException {
        DefaultBHttpClientConnection c = proven;
        proven = null;
        if (c != null) c.close();
    }

    private Reply call(String method, String op, String path, String target, String body) throws IOException {
        ClassicHttpRequest request = request(method, op, path, target, body);
        return reply(request, execute(request));
    }

    /** Reads the whole answer; a connection the server will not keep is closed. */
    private Reply reply(ClassicHttpRequest request, ClassicHttpResponse response) throws IOException {
        HttpEntity entity = response.getEntity();
        String text = entity == null ? "" : new String(EntityUtils.toByteArray(entity), StandardCharsets.UTF_8);
        Header errno = response.getFirstHeader(ControlEndpoint.ERRNO_HEADER);
        if (!executor.keepAlive(request, response, proven, HttpCoreContext.create())) close();
        return new Reply(response.getCode(), text, errno == null ? null : errno.getValue());
    }

    private ClassicHttpRequest request(String method, String op, String path, String target, String body) {
        StringBuilder uri = new StringBuilder("/v1/").append(op);
        char sep = '?';
        if (path != null) {
            uri.append(sep).append("path=").append(URLEncoder.encode(path, StandardCharsets.UTF_8));
            sep = '&';
        }
        if (target != null) uri.append(sep).append("target=").append(URLEncoder.encode(target, StandardCharsets.UTF_8));
        ClassicHttpRequest request = new BasicClassicHttpRequest(method, uri.toString());
        request.setHeader("Authorization", "Bearer " + new String(token, StandardCharsets.US_ASCII));
        if (method.equals("POST")) {
            byte[] content = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
            request.setEntity(new ByteArrayEntity(content, ContentType.create(ControlEndpoint.CONTENT_TYPE)));
            request.setHeader("Content-Type", ControlEndpoint.CONTENT_TYPE);
            request.setHeader("Content-Length", Integer.toString(content.length));
        }
        return request;
    }

    /** Sends {@code request} on the proven connection (proving a new one first); the answer's body is the caller's to read. */
    private ClassicHttpResponse execute(ClassicHttpRequest request) throws IOException {
        DefaultBHttpClientConnection c = proven();
        request.setHeader("Host", hostPort);
        try {
            return executor.execute(request, c, HttpCoreContext.create());
        } catch (HttpException e) {
            close();
            throw new IOException("a malformed answer from " + hostPort + ": " + e.getMessage(), e);
        }
    }

    /** The open connection, or a new one whose listener answered the proof of a fresh challenge; sends nothing else before. */
    private DefaultBHttpClientConnection proven() throws IOException {
        if (proven != null && proven.isOpen()) return proven;   // not isStale(): it waits a millisecond each time
        close();
        Socket socket = new Socket(Proxy.NO_PROXY);
        DefaultBHttpClientConnection c = new DefaultBHttpClientConnection(Http1Config.DEFAULT);
        try {
            socket.connect(new InetSocketAddress(address, port), CONNECT_TIMEOUT_MS);
            socket.setTcpNoDelay(true);                              // a request is one write; never wait for an ACK to send it
            socket.setSoTimeout(PROOF_TIMEOUT_MS);
            if (tls == null) {
                c.bind(socket);
            } else {
                SSLSocket secure = (SSLSocket) tls.getSocketFactory().createSocket(socket, host, port, true);
                SSLParameters parameters = secure.getSSLParameters();
                parameters.setEndpointIdentificationAlgorithm("HTTPS");    // the certificate must name the host, as HttpsURLConnection checks
                secure.setSSLParameters(parameters);
                secure.startHandshake();
                c.bind(secure, socket);
            }
            byte[] random = new byte[CHALLENGE_BYTES];
            new SecureRandom().nextBytes(random);
            String challenge = Base64.getUrlEncoder().withoutPadding().encodeToString(random);
            ClassicHttpRequest ask = new BasicClassicHttpRequest("GET", ControlEndpoint.PROOF_PATH + "?challenge=" + challenge);
            ask.setHeader("Host", hostPort);
            ClassicHttpResponse answer = executor.execute(ask, c, HttpCoreContext.create());
            String proof = answer.getEntity() == null ? "" : new String(EntityUtils.toByteArray(answer.getEntity()), StandardCharsets.UTF_8).strip();
            String expected = ControlToken.proof(token, challenge, hostPort);
            if (answer.getCode() != 200 || !MessageDigest.isEqual(proof.getBytes(StandardCharsets.UTF_8), expected.getBytes(StandardCharsets.UTF_8))) {
                throw unproven("it answered " + answer.getCode() + (answer.getCode() == 200 ? " with a wrong proof" : ""));
            }
            if (!executor.keepAlive(ask, answer, c, HttpCoreContext.create())) throw unproven("it closed the connection after its proof");
            socket.setSoTimeout(READ_TIMEOUT_MS);
            proven = c;
            return c;
        } catch (HttpException e) {
            c.close();
            throw unproven("it does not speak HTTP/1.1 (" + e.getMessage() + ")");
        } catch (IOException | RuntimeException e) {
            c.close();
            socket.close();
            throw e;
        }
    }

    private UnprovenServerException unproven(String what) {
        return new UnprovenServerException("the listener did not prove it holds the token in " + tokenFile + ": " + what
                                           + ". It is not the server that wrote that file (a file left behind by a server that"
                                           + " stopped, or another program on the port); nothing was sent to it");
    }
}
