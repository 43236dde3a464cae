package io.iotarget.control.http;

import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;
import io.iotarget.model.Errno;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A request that meets a bug is answered 500 and logged at ERROR, but at most
 * {@link ControlEndpoint#REQUEST_FAILURE_LINES_PER_SECOND} lines a second however often a client
 * repeats it, and a line feed the client put in its request (here a path, percent-encoded, that
 * the failure quotes) cannot start a line of the log.
 */
class RequestFailureLogTest {
    private static final int REQUESTS = 60;

    /** A tree with a bug: reading quotes the path in an exception that is no refusal. */
    private static final class BuggyTree implements ConfigTree {
        @Override
        public Kind kind(String path) {
            return Kind.FILE;
        }

        @Override
        public List<String> list(String path) {
            return List.of();
        }

        @Override
        public String read(String path) {
            throw new IllegalStateException("no entry for " + path);
        }

        @Override
        public void write(String path, String value) throws ControlException {
            throw new ControlException(Errno.EPERM, "read only");
        }

        @Override
        public List<String> replay(String path) {
            return List.of();
        }

        @Override
        public void mkdir(String path) throws ControlException {
            throw new ControlException(Errno.EPERM, "read only");
        }

        @Override
        public void rmdir(String path) throws ControlException {
            throw new ControlException(Errno.EPERM, "read only");
        }
    }

    @Test
    void aRepeatedFailureLogsBoundedLinesThatTheClientCannotForge() throws Exception {
        Path tokens = Files.createTempDirectory("control-tokens");
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Logger logger = Logger.getLogger(ControlEndpoint.class.getName());
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                records.add(r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        logger.addHandler(handler);
        try (ControlEndpoint endpoint = new ControlEndpoint(new InetSocketAddress("127.0.0.1", 0), null, tokens, new BuggyTree(), () -> "",
                new PrometheusRegistry(), () -> "{}\n", path -> "", (device, options) -> {
                    throw new ControlException(Errno.ENODEV, device);
                })) {
            String token = ControlToken.read(endpoint.tokenFile());
            String host = ControlEndpoint.hostPort(endpoint.address());
            String request = "GET /v1/read?path=x%0ASEVERE:%20control%20request%20POST%20/forged%20failed HTTP/1.1\r\nHost: " + host
                             + "\r\nAuthorization: Bearer " + token + "\r\nConnection: close\r\n\r\n";
            long startNs = System.nanoTime();
            int failed = 0;
            for (int i = 0; i < REQUESTS; i++) {
                if (exchange(endpoint.address().getPort(), request).startsWith("HTTP/1.1 500")) failed++;
            }
            long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startNs) + 1;    // one-second windows begun
            long bound = ControlEndpoint.REQUEST_FAILURE_LINES_PER_SECOND * (seconds + 1);
            assertTrue(bound < failed, failed + " requests failed in " + seconds + " s: too few or too slow to judge the limit");
            List<LogRecord> lines = records.stream().filter(r -> r.getMessage().startsWith("control request GET")).toList();
            assertFalse(lines.isEmpty(), "the first failures are logged");
            assertTrue(lines.size() <= bound, lines.size() + " lines for " + failed + " failures in " + seconds + " s (at most " + bound + ")");
            assertEquals(Level.SEVERE, lines.getFirst().getLevel());
            assertEquals("java.lang.IllegalStateException: no entry for x\\nSEVERE: control request POST /forged failed",
                         lines.getFirst().getThrown().toString(), "the failure quotes the client's path: escaped");
            SimpleFormatter formatter = new SimpleFormatter();
            for (LogRecord r : records) {
                String formatted = formatter.format(r);
                for (String line : formatted.split("\\R")) {
                    assertFalse(line.startsWith("SEVERE: control request POST"), "a line forged by a client: " + formatted);
                }
            }
        } finally {
            logger.removeHandler(handler);
        }
    }

    private static String exchange(int port, String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            OutputStream out = s.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            InputStream in = s.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
        }
    }
}
