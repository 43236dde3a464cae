package io.iotarget.control.http;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The control endpoint: the configuration tree over HTTP on loopback, the same operations as
 * the CLI (which is its client).
 *
 * <pre>
 *  GET  /v1/read?path=P            200 file contents
 *  GET  /v1/list?path=P            200 one entry per line (directories end with '/')
 *  POST /v1/write?path=P           body = the value, as one write(2)
 *  POST /v1/mkdir?path=P    POST /v1/rmdir?path=P
 *  POST /v1/link?path=LINK&amp;target=T    POST /v1/unlink?path=LINK
 *  GET  /v1/devices                200 the device table
 * </pre>
 * A refused operation answers 4xx with {@code X-Iotarget-Errno: EINVAL} and the message as the
 * body; nothing changed.
 */
public final class ControlEndpoint implements AutoCloseable {
    public static final String ERRNO_HEADER = "X-Iotarget-Errno";

    private final HttpServer server;
    private final ConfigTree tree;
    private final Supplier<String> devices;

    public ControlEndpoint(InetSocketAddress address, ConfigTree tree, Supplier<String> devices) throws IOException {
        this.tree = tree;
        this.devices = devices;
        this.server = HttpServer.create(address, 64);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/v1/", this::handle);
        server.start();
    }

    public InetSocketAddress address() {
        return server.getAddress();
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            String op = ex.getRequestURI().getPath().substring("/v1/".length());
            Map<String, String> q = query(ex.getRequestURI().getRawQuery());
            boolean post = ex.getRequestMethod().equals("POST");
            String path = q.get("path");
            try {
                switch (op) {
                    case "read" -> ok(ex, tree.read(required(path)));
                    case "list" -> ok(ex, String.join("\n", tree.list(path == null ? "" : path)) + "\n");
                    case "devices" -> ok(ex, devices.get());
                    case "write", "mkdir", "rmdir", "link", "unlink" -> {
                        if (!post) {
                            send(ex, 405, "use POST for " + op + "\n", null);
                            return;
                        }
                        String p = required(path);
                        switch (op) {
                            case "write" -> tree.write(p, new String(ex.getRequestBody().readAllBytes(), StandardCharsets.UTF_8));
                            case "mkdir" -> tree.mkdir(p);
                            case "rmdir" -> tree.rmdir(p);
                            case "link" -> tree.link(required(q.get("target")), p);
                            default -> tree.unlink(p);
                        }
                        send(ex, 204, null, null);
                    }
                    default -> send(ex, 404, "unknown operation " + op + "\n", null);
                }
            } catch (ControlException e) {
                send(ex, status(e.errno()), e.getMessage() + "\n", e.errno());
            } catch (RuntimeException e) {
                send(ex, 500, "internal error: " + e + "\n", Errno.EIO);
            }
        }
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

    private static void ok(HttpExchange ex, String body) throws IOException {
        send(ex, 200, body, null);
    }

    private static void send(HttpExchange ex, int status, String body, Errno errno) throws IOException {
        if (errno != null) ex.getResponseHeaders().add(ERRNO_HEADER, errno.name());
        ex.getResponseHeaders().add("Content-Type", "text/plain; charset=utf-8");
        if (body == null) {
            ex.sendResponseHeaders(status, -1);
            return;
        }
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
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

    @Override
    public void close() {
        server.stop(0);
    }
}
