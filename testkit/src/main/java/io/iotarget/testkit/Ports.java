package io.iotarget.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;

/**
 * Ports for the servers a test starts on loopback. Any thread may call.
 *
 * <p>{@link #freePort} only probes: the port is free when it returns, and another process may
 * take it before the test's server binds it. A test that cannot retry and needs several ports
 * distinct from one another holds them all while it picks (as {@link EtcdCluster} does).
 */
public final class Ports {
    private Ports() {
    }

    /**
     * A port nobody listens on at 127.0.0.1 right now: the kernel's next ephemeral choice, bound
     * and released. Unchecked, so that helpers without {@code throws IOException} can call it; a
     * failure here is the machine's (no loopback, no free port), not the test's.
     */
    public static int freePort() {
        try (ServerSocket probe = new ServerSocket()) {
            probe.bind(new InetSocketAddress("127.0.0.1", 0));
            return probe.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free port on 127.0.0.1", e);
        }
    }
}
