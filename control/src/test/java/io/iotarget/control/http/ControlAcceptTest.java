package io.iotarget.control.http;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The endpoint's accept loop, out of descriptors (EMFILE), waits instead of spinning or dying, and serves once they are back. */
class ControlAcceptTest {
    @Test
    void shouldWaitOutAFullFileTableWithoutSpinning() throws Throwable {
        var os = (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        try (LiveEndpoint live = new LiveEndpoint()) {
            byte[] request = live.fill("GET /v1/read?path=io.stat HTTP/1.1\r\nHost: HOST\r\nAuthorization: Bearer TOKEN\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            assertTrue(live.exchange(request, 5_000).startsWith("HTTP/1.1 200 "), "served before");     // classes loaded
            // As Server.start does: what a log line needs is loaded, no time zones are read from a file below.
            new java.util.logging.SimpleFormatter().format(new java.util.logging.LogRecord(java.util.logging.Level.INFO, "start"));
            long[] original = fileLimit(-1);
            try (SocketChannel channel = SocketChannel.open()) {                     // its descriptor now, not at connect
                Socket client = channel.socket();
                long cpuNs;
                fileLimit(3);                                   // no descriptor can be allocated: accept() fails with EMFILE
                try {
                    channel.connect(new InetSocketAddress("127.0.0.1", live.port()));
                    Thread.sleep(100);
                    cpuNs = os.getProcessCpuTime();
                    Thread.sleep(1000);
                    cpuNs = os.getProcessCpuTime() - cpuNs;
                } finally {
                    fileLimit(original[0]);
                }
                assertTrue(cpuNs < 300_000_000L, "the accept loop waits while accept() fails: " + cpuNs / 1_000_000 + " ms of CPU in 1 s");
                client.setSoTimeout(10_000);
                client.getOutputStream().write(request);
                byte[] answer = client.getInputStream().readNBytes(13);
                assertEquals("HTTP/1.1 200 ", new String(answer, StandardCharsets.ISO_8859_1), "served once descriptors are free again");
            }
        }
    }

    /** setrlimit(RLIMIT_NOFILE) on this process, soft limit only (-1 leaves it); the limits as they were: {soft, hard}. */
    @SuppressWarnings("restricted")
    private static long[] fileLimit(long soft) throws Throwable {
        final int rlimitNofile = 7;
        var linker = Linker.nativeLinker();
        var signature = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT, ValueLayout.ADDRESS);
        var get = linker.downcallHandle(linker.defaultLookup().find("getrlimit").orElseThrow(), signature);
        var set = linker.downcallHandle(linker.defaultLookup().find("setrlimit").orElseThrow(), signature);
        try (var arena = Arena.ofConfined()) {
            var limit = arena.allocate(16);
            assertEquals(0, (int) get.invokeExact(rlimitNofile, limit));
            long[] was = {limit.get(ValueLayout.JAVA_LONG, 0), limit.get(ValueLayout.JAVA_LONG, 8)};
            if (soft >= 0) {
                limit.set(ValueLayout.JAVA_LONG, 0, soft);
                assertEquals(0, (int) set.invokeExact(rlimitNofile, limit));
            }
            return was;
        }
    }
}
