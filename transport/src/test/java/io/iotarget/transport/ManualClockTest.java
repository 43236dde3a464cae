package io.iotarget.transport;

import io.iotarget.model.ManualClock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The loops measure every deadline on the transport's clock, read once per pass: on a manual
 * clock a deadline holds at one nanosecond before and has passed one nanosecond after, however
 * long the test takes in real time.
 */
class ManualClockTest {
    private static final long START_NS = 1_000_000_000L;
    private static final Duration SEND_TIMEOUT = Duration.ofSeconds(30);

    private final ManualClock clock = new ManualClock(START_NS);
    private Transport transport;
    private Socket peer;

    @AfterEach
    void tearDown() throws IOException {
        if (peer != null) peer.close();
        if (transport != null) transport.close();
    }

    /** Starts one loop on the manual clock, connects a peer that never reads, and returns the server's side. */
    private Connection connect(ConnectionHandler handler) throws Exception {
        transport = new Transport(new Transport.Settings(1, SEND_TIMEOUT, 100, 100, Transport.Settings.DEFAULT_SEND_BUFFER, Duration.ZERO), clock);
        CompletableFuture<Connection> opened = new CompletableFuture<>();
        InetSocketAddress address = transport.listen(new InetSocketAddress("127.0.0.1", 0), new Protocol() {
            @Override
            public ConnectionHandler open(Connection connection) {
                opened.complete(connection);
                return handler;
            }
        }).localAddress();
        peer = new Socket(address.getAddress(), address.getPort());
        peer.setReceiveBufferSize(4096);
        return opened.get(10, TimeUnit.SECONDS);
    }

    /**
     * Moves the clock to {@code nowNs} and runs {@code task} on the loop as a timeout due then:
     * in the first pass that reads the moved clock, after the timeouts due before it.
     */
    private <T> T onLoopAt(long nowNs, java.util.function.Supplier<T> task) throws Exception {
        clock.set(nowNs);
        CompletableFuture<T> result = new CompletableFuture<>();
        EventLoop loop = transport.loop();
        loop.execute(() -> loop.schedule(nowNs - loop.nowNs(), () -> {
            try {
                assertEquals(nowNs, loop.nowNs(), "the pass read the clock after the move");
                result.complete(task.get());
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        }));
        return result.get(10, TimeUnit.SECONDS);
    }

    /** Moves the clock to {@code nowNs} and lets the timeouts due by then run. */
    private void passAt(long nowNs) throws Exception {
        onLoopAt(nowNs, () -> null);
    }

    @Test
    void shouldDisconnectAPeerThatTakesNothingOnlyOnceTheSendTimeoutHasPassed() throws Exception {
        AtomicReference<Throwable> cause = new AtomicReference<>();
        Connection c = connect(new ConnectionHandler() {
            @Override
            public void opened(Connection connection) {
                connection.send(ByteBuffer.allocate(32 << 20));       // far more than the socket takes
            }

            @Override
            public void received(Connection connection, ByteBuffer in) {
                in.position(in.limit());
            }

            @Override
            public void closed(Connection connection, Throwable why) {
                cause.set(why);
            }
        });
        // Let the socket take what it takes while the clock stands at START_NS: that is the last progress.
        for (long before = -1, now; (now = onLoopAt(START_NS, c::queuedBytes)) != before; before = now) Thread.sleep(100);
        long deadlineNs = START_NS + SEND_TIMEOUT.toNanos();
        assertEquals(SEND_TIMEOUT.toNanos() - 1, (long) onLoopAt(deadlineNs - 1, () -> c.stalledNs(deadlineNs - 1)));

        assertFalse(onLoopAt(deadlineNs - 1, () -> {
            transport.loop().sweep(transport.loop().nowNs());
            return c.isClosed();
        }), "a nanosecond before the send timeout the peer keeps its connection");
        assertTrue(onLoopAt(deadlineNs + 1, () -> {
            transport.loop().sweep(transport.loop().nowNs());
            return c.isClosed();
        }), "a nanosecond after it the peer is cut off");
        assertTrue(cause.get().getMessage().contains("took no reply bytes"), cause.get().getMessage());
    }

    @Test
    void shouldRunAScheduledTaskOnlyOnceItsDeadlineHasPassed() throws Exception {
        connect(new ConnectionHandler() {
            @Override
            public void received(Connection connection, ByteBuffer in) {
                in.position(in.limit());
            }

            @Override
            public void closed(Connection connection, Throwable why) {
            }
        });
        long delayNs = TimeUnit.SECONDS.toNanos(10);
        AtomicBoolean ran = new AtomicBoolean();
        long deadlineNs = onLoopAt(START_NS, () -> {
            transport.loop().schedule(delayNs, () -> ran.set(true));
            return transport.loop().nowNs() + delayNs;
        });
        passAt(deadlineNs - 1);
        assertFalse(ran.get(), "not a nanosecond early");
        passAt(deadlineNs + 1);
        assertTrue(ran.get(), "due once the clock has passed it");
    }

    @Test
    void shouldPauseInputForAnIssuerDelayUntilItsEndOnTheClock() throws Exception {
        AtomicBoolean resumed = new AtomicBoolean();
        Connection c = connect(new ConnectionHandler() {
            @Override
            public void received(Connection connection, ByteBuffer in) {
                in.position(in.limit());
            }

            @Override
            public void closed(Connection connection, Throwable why) {
            }
        });
        AtomicBoolean ending = new AtomicBoolean();
        IssuerDelay delay = new IssuerDelay(c, ending::get, () -> {
            resumed.set(true);
            c.resumeInput();
        });
        long delayNs = TimeUnit.MILLISECONDS.toNanos(300);
        delay.delay(delayNs);                                   // read at START_NS: the clock has not moved
        long endNs = START_NS + delayNs;
        assertTrue(onLoopAt(START_NS, () -> delay.active() && c.inputPaused()), "input pauses at once");

        delay.delay(delayNs / 3);                               // a shorter delay does not cut the first one short
        passAt(endNs - 1);
        assertTrue(onLoopAt(endNs - 1, () -> delay.active() && c.inputPaused()), "still paused a nanosecond before the end");
        assertFalse(resumed.get());

        delay.delay(2 * delayNs);                               // read at endNs - 1: a longer delay extends the pause
        long extendedNs = endNs - 1 + 2 * delayNs;
        passAt(endNs + 1);
        assertTrue(onLoopAt(endNs + 1, () -> delay.active() && c.inputPaused()), "the first end passed, the pause goes on");
        passAt(extendedNs - 1);
        assertTrue(onLoopAt(extendedNs - 1, () -> delay.active() && c.inputPaused()), "still paused a nanosecond before the new end");
        assertFalse(resumed.get());

        passAt(extendedNs + 1);
        assertTrue(onLoopAt(extendedNs + 1, () -> !delay.active() && !c.inputPaused()), "reading again a nanosecond after it");
        assertTrue(resumed.get());

        ending.set(true);
        delay.delay(delayNs);
        assertFalse(onLoopAt(extendedNs + 1, delay::active), "an owner that takes no more requests is not delayed");
    }
}
