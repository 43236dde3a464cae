package io.iotarget.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A throwaway {@code redis-server} (the Debian package, scripts/install-test-deps) on loopback:
 * a free port, no persistence ({@code --save '' --appendonly no}), started and stopped by the
 * test. {@link #kill} and {@link #restart} (same port, empty) let tests lose the store on purpose,
 * {@link #pause} and {@link #resume} make it unreachable for a while with its data kept.
 */
public final class RedisServer implements AutoCloseable {
    public static final String BINARY = "/usr/bin/redis-server";

    private final int port;
    private final Path dir;
    private Process process;

    private RedisServer(int port, Path dir) {
        this.port = port;
        this.dir = dir;
    }

    /** Starts one on a free port, its working directory {@code dir}; skips the test when redis-server is not installed. */
    public static RedisServer start(Path dir) throws IOException, InterruptedException {
        Tools.require("redis-server", BINARY);
        int port;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = s.getLocalPort();
        }
        RedisServer server = new RedisServer(port, dir);
        server.restart();
        return server;
    }

    public int port() {
        return port;
    }

    /** {@code redis://127.0.0.1:PORT}. */
    public String uri() {
        return "redis://127.0.0.1:" + port;
    }

    /** Starts it (again) on the same port, empty, and waits until it answers PING. */
    public void restart() throws IOException, InterruptedException {
        process = new ProcessBuilder(List.of(BINARY, "--port", Integer.toString(port), "--bind", "127.0.0.1", "--save", "",
                                             "--appendonly", "no", "--dir", dir.toString()))
                .redirectErrorStream(true).redirectOutput(dir.resolve("redis-" + port + ".log").toFile())
                .redirectInput(ProcessBuilder.Redirect.from(Path.of("/dev/null").toFile())).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!answersPing()) {
            if (!process.isAlive()) throw new IOException("redis-server exited " + process.exitValue() + " (see " + dir + ")");
            if (System.nanoTime() > deadline) throw new IOException("redis-server did not answer PING within 10 s");
            Thread.sleep(20);
        }
    }

    private boolean answersPing() {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            InputStream in = s.getInputStream();
            byte[] reply = new byte[7];
            int n = in.readNBytes(reply, 0, reply.length);
            return new String(reply, 0, n, StandardCharsets.US_ASCII).equals("+PONG\r\n");
        } catch (IOException e) {
            return false;
        }
    }

    /** SIGSTOP: the store keeps its data and its connections but answers nothing, as behind a partition, until {@link #resume}. */
    public void pause() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** SIGCONT after {@link #pause}. */
    public void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    private void signal(String name) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) throw new IOException("kill -" + name + " " + process.pid() + " failed");
    }

    /** SIGKILL, as a crash: the data is gone. */
    public void kill() throws InterruptedException {
        process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        process.destroyForcibly();
        try {
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
