package io.iotarget.testkit;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TcpRelayTest {
    /** An echo server on loopback: what comes in goes back, one connection at a time. */
    private static ServerSocket echo() throws IOException {
        ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().start(() -> {
            while (true) {
                try {
                    Socket s = server.accept();
                    Thread.ofVirtual().start(() -> {
                        try (s) {
                            s.getInputStream().transferTo(s.getOutputStream());
                        } catch (IOException e) {
                            // the test closed it
                        }
                    });
                } catch (IOException e) {
                    return;
                }
            }
        });
        return server;
    }

    private static int roundTrip(Socket s, int b) throws IOException {
        OutputStream out = s.getOutputStream();
        out.write(b);
        out.flush();
        InputStream in = s.getInputStream();
        return in.read();
    }

    @Test
    void cutConnectionStaysOpenButSilentAndRestoreDeliversWhatWaited() throws Exception {
        try (ServerSocket server = echo(); TcpRelay relay = TcpRelay.start("127.0.0.1", server.getLocalPort());
             Socket s = new Socket(InetAddress.getLoopbackAddress(), relay.port())) {
            assertEquals(7, roundTrip(s, 7));

            relay.cut();
            s.setSoTimeout(300);                 // a "nothing arrives" window: waiting is the point
            s.getOutputStream().write(8);
            assertThrows(SocketTimeoutException.class, () -> s.getInputStream().read(), "a cut relay delivers nothing");
            assertTrue(!s.isClosed() && s.isConnected(), "the connection is still open: a black hole, not a reset");

            relay.restore();
            s.setSoTimeout(10_000);
            assertEquals(8, s.getInputStream().read(), "what was sent while cut arrives after restore");
            assertEquals(9, roundTrip(s, 9));
        }
    }

    @Test
    void connectionMadeWhileCutIsForwardedOnlyAfterRestore() throws Exception {
        try (ServerSocket server = echo(); TcpRelay relay = TcpRelay.start("127.0.0.1", server.getLocalPort())) {
            relay.cut();
            try (Socket s = new Socket(InetAddress.getLoopbackAddress(), relay.port())) {
                s.setSoTimeout(300);
                s.getOutputStream().write(1);
                assertThrows(SocketTimeoutException.class, () -> s.getInputStream().read());
                relay.restore();
                s.setSoTimeout(10_000);
                assertEquals(1, s.getInputStream().read());
            }
        }
    }
}
