package io.iotarget.frontend.nvmetcp;

import io.iotarget.engine.Engine;
import io.iotarget.model.ConfigTree;
import io.iotarget.model.ManualClock;
import io.iotarget.transport.EventLoop;
import io.iotarget.transport.Transport;
import org.junit.jupiter.api.Test;

import java.io.InputStream;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A connection that never completes a Fabrics Connect is closed after
 * {@link TcpQueue#CONNECT_LIMIT_NS}, measured on the transport's clock: on a manual clock it
 * is still open a nanosecond before the limit and closed a nanosecond after.
 */
class ConnectLimitTest {
    private static final String NQN = "nqn.2026-11.io.iotarget:limit";

    @Test
    void shouldCloseAConnectionWithoutConnectAtTheLimitAndNotANanosecondBefore() throws Exception {
        ManualClock clock = new ManualClock(1_000_000_000L);
        try (Engine engine = new Engine();
             Transport transport = new Transport(new Transport.Settings(1, Duration.ofSeconds(30), 100, 100, Transport.Settings.DEFAULT_SEND_BUFFER,
                                                                        Duration.ZERO), clock);
             NvmeTarget target = new NvmeTarget(engine, transport)) {
            ConfigTree tree = target.tree();
            tree.mkdir("subsystems/" + NQN);
            tree.write("subsystems/" + NQN + "/attr_allow_any_host", "1");
            tree.mkdir("ports/1");
            tree.write("ports/1/addr_trtype", "tcp");
            tree.write("ports/1/addr_adrfam", "ipv4");
            tree.write("ports/1/addr_traddr", "127.0.0.1");
            int port = TargetFixture.listen(tree, "subsystems/" + NQN, "ports/1", NQN);

            try (Socket silent = new Socket("127.0.0.1", port)) {
                silent.setSoTimeout(10_000);
                long start = clock.nanoTime();
                for (long end = System.nanoTime() + 10_000_000_000L; transport.connectionCount() == 0 && System.nanoTime() < end; ) Thread.sleep(5);
                passAt(clock, transport.loop(), start);           // accepted, then opened: the limit runs from start
                assertEquals(1, transport.connectionCount());

                passAt(clock, transport.loop(), start + TcpQueue.CONNECT_LIMIT_NS - 1);
                assertEquals(1, transport.connectionCount(), "a nanosecond before the limit the connection stays");
                passAt(clock, transport.loop(), start + TcpQueue.CONNECT_LIMIT_NS + 1);
                assertEquals(0, transport.connectionCount(), "a nanosecond after it the connection is closed");
                InputStream in = silent.getInputStream();
                assertEquals(-1, in.read(), "the host sees the close");
            }
        }
    }

    /** Moves {@code clock} to {@code nowNs} and waits for {@code loop} to run what is due by then. */
    private static void passAt(ManualClock clock, EventLoop loop, long nowNs) throws Exception {
        clock.set(nowNs);
        CompletableFuture<Void> done = new CompletableFuture<>();
        loop.execute(() -> loop.schedule(nowNs - loop.nowNs(), () -> done.complete(null)));
        done.get(10, TimeUnit.SECONDS);
    }
}
