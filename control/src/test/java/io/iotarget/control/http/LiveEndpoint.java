package io.iotarget.control.http;

import io.iotarget.control.calibrate.Calibration;
import io.iotarget.control.tree.CgroupTree;
import io.iotarget.control.tree.MountTable;
import io.iotarget.engine.Engine;
import io.iotarget.model.Clock;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A control endpoint on 127.0.0.1 (port chosen by the kernel) over a real group tree, for tests
 * that talk to it through sockets. Requests may name the token and the endpoint's host:port as
 * {@code TOKEN} and {@code HOST}; {@link #fill} puts the real ones in.
 */
final class LiveEndpoint implements AutoCloseable {
    final Engine engine = new Engine(Clock.SYSTEM, false);
    final Path tokens = Files.createTempDirectory("control-tokens");
    final ControlEndpoint endpoint;
    final String token;
    final String hostPort;

    LiveEndpoint() throws IOException {
        MountTable mounts = new MountTable().mount(MountTable.CGROUP, new CgroupTree(engine.controller()));
        endpoint = new ControlEndpoint(new InetSocketAddress("127.0.0.1", 0), null, tokens, mounts, () -> "NAME MAJ:MIN\n",
                new PrometheusRegistry(), () -> "{}\n", path -> "", (device, options) -> Calibration.prepare(engine, device, options));
        try {
            token = ControlToken.read(endpoint.tokenFile());
        } catch (ControlToken.TokenUnavailableException e) {
            throw new IOException(e.getMessage(), e);
        }
        hostPort = ControlEndpoint.hostPort(endpoint.address());
    }

    int port() {
        return endpoint.address().getPort();
    }

    /** The request with {@code TOKEN} and {@code HOST} made real. */
    byte[] fill(byte[] request) {
        String text = new String(request, StandardCharsets.ISO_8859_1).replace("TOKEN", token).replace("HOST", hostPort);
        return text.getBytes(StandardCharsets.ISO_8859_1);
    }

    /**
     * Sends {@code request}, half-closes, and reads the answer until the server closes or
     * {@code timeoutMs} passes with nothing new (an event stream, which only ends with the client).
     */
    String exchange(byte[] request, int timeoutMs) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port())) {
            s.setSoTimeout(timeoutMs);
            OutputStream out = s.getOutputStream();
            try {
                out.write(request);
                s.shutdownOutput();
            } catch (IOException e) {
                // the server refused part way and hung up: what it answered is still to be read
            }
            InputStream in = s.getInputStream();
            StringBuilder answer = new StringBuilder();
            byte[] b = new byte[8192];
            try {
                for (int n; (n = in.read(b)) >= 0; ) answer.append(new String(b, 0, n, StandardCharsets.ISO_8859_1));
            } catch (SocketTimeoutException e) {
                if (!answer.toString().contains(ControlEndpoint.EVENT_STREAM)) throw new SocketTimeoutException("no end to the answer after "
                        + timeoutMs + " ms: " + answer);
            } catch (java.net.SocketException reset) {
                // a reset after the answer (the server closed with our bytes unread)
            }
            return answer.toString();
        }
    }

    @Override
    public void close() throws IOException {
        endpoint.close();
        engine.close();
        Files.deleteIfExists(tokens);
    }
}
