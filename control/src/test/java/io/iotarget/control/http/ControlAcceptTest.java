package io.iotarget.control.http;

import io.iotarget.testkit.ProcessResources;
import io.iotarget.testkit.ThreadCpu;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The endpoint's accept loop, out of descriptors (EMFILE), waits instead of spinning or dying, and serves once they are back. */
class ControlAcceptTest {
    @Test
    void shouldWaitOutAFullFileTableWithoutSpinning() throws Throwable {
        try (LiveEndpoint live = new LiveEndpoint()) {
            byte[] request = live.fill("GET /v1/read?path=io.stat HTTP/1.1\r\nHost: HOST\r\nAuthorization: Bearer TOKEN\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            assertTrue(live.exchange(request, 5_000).startsWith("HTTP/1.1 200 "), "served before");     // classes loaded
            // As Server.start does: what a log line needs is loaded, no time zones are read from a file below.
            new java.util.logging.SimpleFormatter().format(new java.util.logging.LogRecord(java.util.logging.Level.INFO, "start"));
            ThreadCpu.snapshot().msSince();                                     // and what measuring needs
            long[] original = ProcessResources.fileLimit(-1);
            try (SocketChannel channel = SocketChannel.open()) {                     // its descriptor now, not at connect
                Socket client = channel.socket();
                Map<String, Long> cpuMs;
                ProcessResources.fileLimit(3);                                   // no descriptor can be allocated: accept() fails with EMFILE
                try {
                    channel.connect(new InetSocketAddress("127.0.0.1", live.port()));
                    Thread.sleep(100);                                       // the loop meets the failing accept first
                    ThreadCpu before = ThreadCpu.snapshot();
                    Thread.sleep(1000);                                      // the window whose CPU is measured
                    cpuMs = before.msSince();
                } finally {
                    ProcessResources.fileLimit(original[0]);
                }
                long loopMs = ThreadCpu.ms(cpuMs, "iotarget-control");          // the endpoint's event loop, where accept(2) runs
                assertTrue(loopMs < 100, "the accept loop waits while accept() fails: " + loopMs
                        + " ms of CPU in 1 s; by thread (ms): " + cpuMs);
                client.setSoTimeout(10_000);
                client.getOutputStream().write(request);
                byte[] answer = client.getInputStream().readNBytes(13);
                assertEquals("HTTP/1.1 200 ", new String(answer, StandardCharsets.ISO_8859_1), "served once descriptors are free again");
            }
        }
    }
}
