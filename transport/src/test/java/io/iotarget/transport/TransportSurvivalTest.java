package io.iotarget.transport;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import io.iotarget.testkit.Await;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The loops' own housekeeping must outlive a protocol handler that throws — even an Error —
 * or one bad callback would switch off send timeouts (the sweep) or leak a socket.
 */
class TransportSurvivalTest {
    private Transport transport;
    private final List<Socket> sockets = new ArrayList<>();

    @AfterEach
    void tearDown() throws IOException {
        for (Socket s : sockets) s.close();
        if (transport != null) transport.close();
    }

    private InetSocketAddress start(Duration sendTimeout, Protocol protocol) throws IOException {
        transport = new Transport(new Transport.Settings(1, sendTimeout, 100, 100, Transport.Settings.DEFAULT_SEND_BUFFER, Duration.ZERO));
        return transport.listen(new InetSocketAddress("127.0.0.1", 0), protocol).localAddress();
    }

    private Socket connect(InetSocketAddress address) throws IOException {
        Socket s = new Socket(address.getAddress(), address.getPort());
        s.setSoTimeout(10_000);
        s.setReceiveBufferSize(4096);
        sockets.add(s);
        return s;
    }

    /** True when the server closes within the socket timeout (the peer sent nothing, so there is nothing to read). */
    private static boolean closedByServer(Socket s) throws IOException {
        try {
            return s.getInputStream().read() < 0;
        } catch (SocketTimeoutException e) {
            return false;
        } catch (IOException e) {
            return true;        // reset
        }
    }

    /** Waits up to 5 s for the server to hold {@code count} connections. */
    private void awaitConnections(int count, String what) throws InterruptedException {
        Await.until(Duration.ofSeconds(5), () -> transport.connectionCount() == count, () -> what + ": " + transport.connectionCount() + " connections");
    }

    /** Queues far more than the socket takes, so a peer that does not read stalls the output. */
    private static final class Flooder implements ConnectionHandler {
        @Override
        public void opened(Connection c) {
            c.send(ByteBuffer.allocate(32 << 20));
        }

        @Override
        public void received(Connection c, ByteBuffer in) {
            in.position(in.limit());
        }

        @Override
        public void closed(Connection c, Throwable cause) {
            throw new IllegalStateException("a handler bug in closed()");
        }
    }

    @Test
    void shouldDisconnectEveryStalledPeerEvenWhenHandlersThrowOnClose() throws Exception {
        InetSocketAddress address = start(Duration.ofMillis(300), c -> new Flooder());
        connect(address);
        connect(address);
        awaitConnections(0, "both stalled peers disconnected by the same sweep, though the first one's handler threw");
        connect(address);
        awaitConnections(0, "the sweep still runs after a handler threw in it");
        // counted just after the slot is given back
        Await.until(Duration.ofSeconds(1), () -> transport.unexpectedFailures() >= 3, () -> "each throw was counted: " + transport.unexpectedFailures());
        assertEquals(3, transport.unexpectedFailures(), "each throw was counted");
    }

    @Test
    void shouldCloseAConnectionWhoseProtocolCouldNotOpenIt() throws Exception {
        AtomicInteger opened = new AtomicInteger();
        InetSocketAddress address = start(Duration.ofSeconds(30), c -> {
            if (opened.incrementAndGet() == 1) throw new OutOfMemoryError("simulated: no memory for the handler");
            return new ConnectionHandler() {
                @Override
                public void received(Connection connection, ByteBuffer in) {
                    connection.send(ByteBuffer.wrap(new byte[]{in.get()}));
                }

                @Override
                public void closed(Connection connection, Throwable cause) {
                }
            };
        });
        Socket silent = connect(address);               // says nothing: only the server can end it
        assertTrue(closedByServer(silent), "the socket was closed, not left registered without a handler");
        awaitConnections(0, "its connection slot was given back");
        Socket next = connect(address);
        next.getOutputStream().write(7);
        assertEquals(7, next.getInputStream().read(), "the next connection is served");
    }
}
