package io.iotarget.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.List;

/**
 * Forwards a loopback port to a target, so a test can cut one client off from a server (a node
 * from its cluster store) while everyone else still reaches it: {@link #cut} black-holes the
 * relay as a network partition does — every connection stays open, nothing is refused or reset,
 * bytes sent either way simply stop arriving — and {@link #restore} heals it, delivering what
 * waited, as TCP does after a partition shorter than its retransmission timeout. Connections
 * made while cut are accepted but not forwarded until then.
 *
 * <p>Any thread may call; each connection is pumped by two virtual threads of its own.
 */
public final class TcpRelay implements AutoCloseable {
    private final ServerSocket server;
    private final InetSocketAddress target;
    private final Object gate = new Object();
    private final List<Socket> sockets = new ArrayList<>();     // guarded by gate
    private boolean cut;                                       // guarded by gate
    private boolean closed;                                    // guarded by gate

    private TcpRelay(ServerSocket server, InetSocketAddress target) {
        this.server = server;
        this.target = target;
    }

    /** Listens on a free loopback port and forwards each connection to {@code host:port}. */
    public static TcpRelay start(String host, int port) throws IOException {
        TcpRelay relay = new TcpRelay(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()), new InetSocketAddress(host, port));
        Thread.ofVirtual().name("relay-accept-" + relay.port()).start(relay::acceptLoop);
        return relay;
    }

    /** The relay's own port, to give the client instead of the target's. */
    public int port() {
        return server.getLocalPort();
    }

    /** {@code 127.0.0.1:PORT} of the relay. */
    public String hostPort() {
        return "127.0.0.1:" + port();
    }

    /** From now on nothing crosses the relay in either direction; sockets stay open and silent. */
    public void cut() {
        synchronized (gate) {
            cut = true;
        }
    }

    /** Forwards again, first what waited while cut. */
    public void restore() {
        synchronized (gate) {
            cut = false;
            gate.notifyAll();
        }
    }

    public boolean isCut() {
        synchronized (gate) {
            return cut;
        }
    }

    /** Blocks while cut; false once closed. */
    private boolean awaitOpen() {
        synchronized (gate) {
            while (cut && !closed) {
                try {
                    gate.wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
            return !closed;
        }
    }

    private boolean track(Socket s) throws IOException {
        synchronized (gate) {
            if (closed) {
                s.close();
                return false;
            }
            sockets.add(s);
            return true;
        }
    }

    private void acceptLoop() {
        while (true) {
            Socket client;
            try {
                client = server.accept();
            } catch (IOException e) {
                return;                                          // closed
            }
            Thread.ofVirtual().start(() -> connect(client));
        }
    }

    private void connect(Socket client) {
        try {
            if (!track(client) || !awaitOpen()) return;
            Socket upstream = new Socket();
            if (!track(upstream)) return;
            upstream.connect(target, 5_000);
            client.setTcpNoDelay(true);
            upstream.setTcpNoDelay(true);
            Thread.ofVirtual().start(() -> pump(client, upstream));
            pump(upstream, client);
        } catch (IOException e) {
            closeQuietly(client);
        }
    }

    /** Copies {@code from} to {@code to}, holding each chunk while cut; closes both at the end of either. */
    private void pump(Socket from, Socket to) {
        byte[] buffer = new byte[16 * 1024];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            int n;
            while ((n = in.read(buffer)) >= 0) {
                if (!awaitOpen()) break;
                out.write(buffer, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // one side closed or reset: end both
        } finally {
            closeQuietly(from);
            closeQuietly(to);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException e) {
            // closing: nothing to do
        }
    }

    /** Stops accepting and closes every connection. */
    @Override
    public void close() throws IOException {
        List<Socket> open;
        synchronized (gate) {
            closed = true;
            gate.notifyAll();
            open = new ArrayList<>(sockets);
            sockets.clear();
        }
        server.close();
        for (Socket s : open) closeQuietly(s);
    }
}
