package io.iotarget.transport;

import io.iotarget.model.Clock;
import io.iotarget.model.uring.LoopRing;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Loops that wait in io_uring ({@link Transport.Loops#IO_URING}): sockets, tasks from other
 * threads, timeouts and the operations a handler puts on the loop's ring all wake the one wait,
 * and a ring operation's completion runs on the loop that owns the connection.
 */
class UringLoopTest {
    private Transport transport;

    @AfterEach
    void tearDown() {
        if (transport != null) transport.close();
    }

    private InetSocketAddress start(Protocol protocol) throws IOException {
        Transport.Settings s = new Transport.Settings(2, Duration.ofSeconds(30), 100, 100, Transport.Settings.DEFAULT_SEND_BUFFER, Duration.ZERO);
        transport = new Transport(s, Clock.SYSTEM, Transport.Loops.IO_URING);
        assertEquals(Transport.Loops.IO_URING, transport.loops());
        return transport.listen(new InetSocketAddress("127.0.0.1", 0), protocol).localAddress();
    }

    /**
     * Each byte received becomes a NOP on the loop's ring; its completion, on the loop, sends the
     * byte back plus one. The reply comes only through the ring's completion, so it shows that
     * the loop waits for sockets and ring operations in the same wait.
     */
    @Test
    void shouldRunRingCompletionsOnTheConnectionsLoop() throws Exception {
        CompletableFuture<Thread> loopThread = new CompletableFuture<>();
        CompletableFuture<Thread> completionThread = new CompletableFuture<>();
        InetSocketAddress address = start(c -> new ConnectionHandler() {
            @Override
            public void received(Connection connection, ByteBuffer in) {
                LoopRing ring = LoopRing.current();
                loopThread.complete(Thread.currentThread());
                while (in.hasRemaining()) {
                    byte b = in.get();
                    int owner = ring.register((tag, res, flags) -> {
                        completionThread.complete(Thread.currentThread());
                        connection.send(ByteBuffer.wrap(new byte[]{(byte) (tag + 1)}));
                        connection.flush();
                    });
                    ring.prepare(owner, b, LoopRing.OP_NOP, -1, 0, 0, 0, 0);
                }
            }

            @Override
            public void closed(Connection connection, Throwable cause) {
            }
        });
        try (Socket s = new Socket(address.getAddress(), address.getPort())) {
            s.setSoTimeout(10_000);
            for (int i = 0; i < 50; i++) {
                s.getOutputStream().write(i);
                assertEquals(i + 1, s.getInputStream().read(), "reply " + i);
            }
        }
        assertSame(loopThread.get(), completionThread.get(5, TimeUnit.SECONDS));
        assertTrue(loopThread.get().getName().startsWith("iotarget-loop-"));
    }

    /** A task handed over from another thread and a scheduled timeout both end the ring's wait. */
    @Test
    void shouldWakeForTasksAndTimeouts() throws Exception {
        start(c -> null);
        EventLoop loop = transport.loop();
        CompletableFuture<Boolean> onRing = new CompletableFuture<>();
        loop.execute(() -> onRing.complete(loop.onRing()));
        assertTrue(onRing.get(5, TimeUnit.SECONDS), "the loop waits in its ring");
        CompletableFuture<Long> fired = new CompletableFuture<>();
        long start = System.nanoTime();
        loop.execute(() -> loop.schedule(50_000_000L, () -> fired.complete(System.nanoTime())));
        assertTrue(fired.get(5, TimeUnit.SECONDS) - start >= 50_000_000L, "the timeout ran after its delay");
    }

    /** Echo through the io_uring loops: bytes in, the same bytes out, over many round trips. */
    @Test
    void shouldEchoOverManyRoundTrips() throws Exception {
        InetSocketAddress address = start(c -> new ConnectionHandler() {
            @Override
            public void received(Connection connection, ByteBuffer in) {
                byte[] copy = new byte[in.remaining()];
                in.get(copy);
                connection.send(ByteBuffer.wrap(copy));
            }

            @Override
            public void closed(Connection connection, Throwable cause) {
            }
        });
        try (Socket s = new Socket(address.getAddress(), address.getPort())) {
            s.setSoTimeout(10_000);
            byte[] msg = new byte[1000];
            for (int i = 0; i < 500; i++) {
                java.util.Arrays.fill(msg, (byte) i);
                s.getOutputStream().write(msg);
                assertArrayEquals(msg, s.getInputStream().readNBytes(msg.length), "round trip " + i);
            }
        }
    }
}
