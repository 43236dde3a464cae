package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.wire.Status;

import io.iotarget.frontend.nvmetcp.config.Subsystem;

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
 *   revalidate DEVICE BYTES a memory backend takes a new size (the backends tree's revalidate_size)
 *   auth-attack CNTLID QID HOSTNQN HOSTID
 *                           issue 19's hijack of a live controller by a client that knows its
 *                           host's NQN and host ID but not its key: one line per attack,
 *                           {@code attack-<name> ok|FAILED (detail)}
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
                case "revalidate" -> engine.revalidateSize(engine.device(arg), Long.parseLong(value)) + "\n";
                case "auth-attack" -> attack(Integer.parseInt(arg), value.split("\\s+"));
                default -> "ERR EINVAL unknown command " + p[0] + "\n";
            };
        } catch (ControlException e) {
            return "ERR " + e.errno() + " " + e.detail() + "\n";
        } catch (IOException | RuntimeException e) {
            return "ERR EIO " + e + "\n";
        }
    }

    /**
     * Adds IO queue {@code QID} to controller {@code cntlid} as the host the guest is: with
     * another host ID (refused), with its own and an out-of-sequence AUTH_Send, and with its own
     * and silence until the authentication deadline (3 s for this queue). Each attacker's queue
     * must close and nothing else: what the guest then checks of its own controller.
     */
    private String attack(int cntlid, String[] args) throws IOException, ControlException {
        int qid = Integer.parseInt(args[0]);
        String hostNqn = args[1];
        byte[] hostId = java.util.HexFormat.of().parseHex(args[2].replace("-", ""));
        String subsystem = null;
        target.lock();
        try {
            for (Subsystem s : target.subsystems.values()) if (target.controllers(s).find(cntlid) != null && target.controllers(s).find(cntlid).hostNqn.equals(hostNqn)) subsystem = s.nqn;
        } finally {
            target.unlock();
        }
        if (subsystem == null) return "ERR ENOENT no controller " + cntlid + " of " + hostNqn + "\n";
        int port = Integer.parseInt(tree.read("ports/1/addr_trsvcid").strip());
        StringBuilder out = new StringBuilder();
        try (TestHost h = new TestHost(port, false, false)) {
            byte[] otherId = hostId.clone();
            otherId[15] ^= 1;
            TestHost.Completion c = h.connect(subsystem, hostNqn, otherId, qid, cntlid, 32, 0, false);
            result(out, "other-hostid-refused", c.status() == (Status.CONNECT_INVALID_PARAMETERS | Status.DNR), "status 0x" + Integer.toHexString(c.status()));
        }
        try (TestHost h = new TestHost(port, false, false)) {
            TestHost.Completion c = h.connect(subsystem, hostNqn, hostId, qid, cntlid, 32, 0, false);
            byte[] success2 = new byte[16];
            success2[0] = 1;
            success2[1] = 4;
            boolean sent = c.status() == 0 && h.authSend(success2).status() == 0;
            result(out, "out-of-sequence-closes-own-queue", sent && h.closedByTargetWithin(5000), "connect status 0x" + Integer.toHexString(c.status()));
        }
        long deadline = target.authenticationDeadlineMs;
        target.authenticationDeadlineMs = 3000;
        try (TestHost h = new TestHost(port, false, false)) {
            TestHost.Completion c = h.connect(subsystem, hostNqn, hostId, qid, cntlid, 32, 0, false);
            target.authenticationDeadlineMs = deadline;
            result(out, "silent-closes-own-queue", c.status() == 0 && h.closedByTargetWithin(10_000), "connect status 0x" + Integer.toHexString(c.status()));
        } finally {
            target.authenticationDeadlineMs = deadline;
        }
        return out.toString();
    }

    private static void result(StringBuilder out, String name, boolean ok, String detail) {
        out.append("attack-").append(name).append(ok ? " ok" : " FAILED").append(" (").append(detail).append(")\n");
    }

    private String connections() {
        StringBuilder sb = new StringBuilder();
        target.lock();
        try {
            for (Port port : target.ports.values()) for (Queue c : target.connections(port)) sb.append(c.describe()).append('\n');
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
