package io.iotarget.control.http;

import io.iotarget.testkit.ProcessResources;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

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
            msSince(threadCpuNs());                                             // and what measuring needs
            long[] original = ProcessResources.fileLimit(-1);
            try (SocketChannel channel = SocketChannel.open()) {                     // its descriptor now, not at connect
                Socket client = channel.socket();
                Map<String, Long> cpuMs;
                ProcessResources.fileLimit(3);                                   // no descriptor can be allocated: accept() fails with EMFILE
                try {
                    channel.connect(new InetSocketAddress("127.0.0.1", live.port()));
                    Thread.sleep(100);
                    Map<String, Long> before = threadCpuNs();
                    Thread.sleep(1000);
                    cpuMs = msSince(before);
                } finally {
                    ProcessResources.fileLimit(original[0]);
                }
                long loopMs = cpuMs.getOrDefault(LOOP, 0L);
                assertTrue(loopMs < 100, "the accept loop waits while accept() fails: " + loopMs
                        + " ms of CPU in 1 s; by thread (ms): " + cpuMs);
                client.setSoTimeout(10_000);
                client.getOutputStream().write(request);
                byte[] answer = client.getInputStream().readNBytes(13);
                assertEquals("HTTP/1.1 200 ", new String(answer, StandardCharsets.ISO_8859_1), "served once descriptors are free again");
            }
        }
    }

    /** The endpoint's event loop thread (ControlEndpoint names it), where accept(2) runs. */
    private static final String LOOP = "iotarget-control";

    /**
     * CPU time per thread name, summed over threads of one name. The accept loop's own thread is
     * what the test judges: the process as a whole also spends CPU on the JIT, the collector and
     * whatever earlier test classes left running, which a loaded machine stretches into this second.
     */
    private static Map<String, Long> threadCpuNs() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        Map<String, Long> byName = new TreeMap<>();
        for (ThreadInfo info : threads.getThreadInfo(threads.getAllThreadIds())) {
            if (info == null) continue;
            long ns = threads.getThreadCpuTime(info.getThreadId());
            if (ns >= 0) byName.merge(info.getThreadName(), ns, Long::sum);
        }
        return byName;
    }

    /** Each thread name's CPU in ms since {@code before}, largest first, those of a millisecond or more only. */
    private static Map<String, Long> msSince(Map<String, Long> before) {
        Map<String, Long> spent = new LinkedHashMap<>();
        threadCpuNs().entrySet().stream()
                .map(e -> Map.entry(e.getKey(), (e.getValue() - before.getOrDefault(e.getKey(), 0L)) / 1_000_000L))
                .filter(e -> e.getValue() >= 1)
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .forEach(e -> spent.put(e.getKey(), e.getValue()));
        return spent;
    }
}
