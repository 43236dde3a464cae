package io.iotarget.control.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;

/** The CLI's side of the {@link ControlEndpoint}. One request per call; not for the IO path. */
public final class ControlClient {
    /** What the endpoint answered: the body, and the errno when it refused. */
    public record Reply(int status, String body, String errno) {
        public boolean ok() {
            return status / 100 == 2;
        }
    }

    private final String base;

    /** @param hostPort e.g. {@code 127.0.0.1:9809} */
    public ControlClient(String hostPort) {
        this.base = "http://" + hostPort + "/v1/";
    }

    public Reply get(String op, String path) throws IOException {
        return call("GET", op, path, null, null);
    }

    public Reply post(String op, String path, String target, String body) throws IOException {
        return call("POST", op, path, target, body);
    }

    private Reply call(String method, String op, String path, String target, String body) throws IOException {
        StringBuilder url = new StringBuilder(base).append(op);
        char sep = '?';
        if (path != null) {
            url.append(sep).append("path=").append(URLEncoder.encode(path, StandardCharsets.UTF_8));
            sep = '&';
        }
        if (target != null) url.append(sep).append("target=").append(URLEncoder.encode(target, StandardCharsets.UTF_8));
        HttpURLConnection c = (HttpURLConnection) URI.create(url.toString()).toURL().openConnection();
        c.setRequestMethod(method);
        c.setConnectTimeout(5_000);
        c.setReadTimeout(60_000);
        if (body != null) {
            c.setDoOutput(true);
            try (OutputStream out = c.getOutputStream()) {
                out.write(body.getBytes(StandardCharsets.UTF_8));
            }
        } else if (method.equals("POST")) {
            c.setDoOutput(true);
            c.getOutputStream().close();
        }
        int status = c.getResponseCode();
        InputStream in = status < 400 ? c.getInputStream() : c.getErrorStream();
        String text = in == null ? "" : new String(in.readAllBytes(), StandardCharsets.UTF_8);
        return new Reply(status, text, c.getHeaderField(ControlEndpoint.ERRNO_HEADER));
    }
}
