package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.config.Port;

import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ControlException;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

/**
 * A line-per-connection control channel for guest scripts (busybox {@code nc 10.0.2.2 PORT}),
 * standing in for the control plane's API in these tests: a guest phase can read io.stat, set
 * io.max or change the target between its own steps. Commands (one line, then the server
 * answers and closes):
 * <pre>
 *   cg-read PATH            the group file, e.g. tenants/a/io.stat
 *   cg-write PATH VALUE...  write it
 *   nvmet-read PATH / nvmet-write PATH VALUE... / nvmet-mkdir PATH / nvmet-rmdir PATH
 *   nvmet-connections       one line per live connection (Queue.describe)
 * </pre>
 * Errors come back as {@code ERR <errno> <detail>}.
 */
final class ControlServer implements AutoCloseable {
    private final ServerSocket server;
    private final Engine engine;
    private final ConfigTree tree;
    private final NvmeTarget target;

    ControlServer(Engine engine, NvmeTarget target) throws IOException {
        this.engine = engine;
        this.target = target;
        this.tree = target.tree();
        this.server = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().name("vm-control").start(this::serve);
    }

    int port() {
        return server.getLocalPort();
    }

    private void serve() {
        while (!server.isClosed()) {
            try (Socket s = server.accept()) {
                BufferedReader in = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8));
                String line = in.readLine();
                String answer = line == null ? "" : answer(line.strip());
                OutputStream out = s.getOutputStream();
                out.write(answer.getBytes(StandardCharsets.UTF_8));
                out.flush();
            } catch (IOException e) {
                // next connection
            }
        }
    }

    private String answer(String line) {
        String[] p = line.split("\\s+", 3);
        String arg = p.length > 1 ? p[1] : "";
        String value = p.length > 2 ? p[2] : "";
        try {
            return switch (p[0]) {
                case "cg-read" -> engine.controller().read(arg);
                case "cg-write" -> {
                    engine.controller().write(arg, value);
                    yield "OK\n";
                }
                case "nvmet-read" -> tree.read(arg);
                case "nvmet-write" -> {
                    tree.write(arg, value);
                    yield "OK\n";
                }
                case "nvmet-mkdir" -> {
                    tree.mkdir(arg);
                    yield "OK\n";
                }
                case "nvmet-rmdir" -> {
                    tree.rmdir(arg);
                    yield "OK\n";
                }
                case "nvmet-connections" -> connections();
                default -> "ERR EINVAL unknown command " + p[0] + "\n";
            };
        } catch (ControlException e) {
            return "ERR " + e.errno() + " " + e.detail() + "\n";
        }
    }

    private String connections() {
        StringBuilder sb = new StringBuilder();
        target.lock();
        try {
            for (Port port : target.ports.values()) for (Queue c : port.connections) sb.append(c.describe()).append('\n');
        } finally {
            target.unlock();
        }
        return sb.toString();
    }

    @Override
    public void close() throws IOException {
        server.close();
    }
}
