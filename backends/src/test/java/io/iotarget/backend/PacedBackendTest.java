package io.iotarget.backend;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.backend.nullblk.NullBackend;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PacedBackendTest {
    @Test
    void shouldModelServiceTimeFromPerIoTimeAndBandwidth() {
        PacedBackend paced = new PacedBackend(new NullBackend(1 << 20, 512, false), 50_000, 1L << 30);
        assertEquals(50_000, paced.serviceNs(0));
        assertEquals(50_000 + 122_071, paced.serviceNs(128 * 1024), "128 KiB at 1 GiB/s = 122070.3 ns, rounded up");
    }

    @Test
    void shouldServeConcurrentCallsOneAtATime() throws Exception {
        // 64 KiB at 64 MiB/s = 1/1024 s each (0.977 ms): 4 threads × 25 writes one after the
        // other can finish no sooner than 100 of those.
        PacedBackend paced = new PacedBackend(new NullBackend(1L << 30, 512, false), 0, 64L << 20);
        long start = System.nanoTime();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            threads.add(Thread.ofVirtual().start(() -> {
                ByteBuffer data = ByteBuffer.allocate(64 * 1024);
                for (int i = 0; i < 25; i++) {
                    try {
                        paced.write(0, data, false);
                    } catch (Exception e) {
                        throw new AssertionError(e);
                    }
                }
            }));
        }
        for (Thread t : threads) t.join();
        long elapsedNs = System.nanoTime() - start;
        long leastNs = 100 * paced.serviceNs(64 * 1024);
        assertTrue(elapsedNs >= leastNs, "elapsed " + elapsedNs + " ns, at least " + leastNs + " expected");
    }

    @Test
    void shouldNeverShareReadsEvenOverABackendThatDoes() {
        // A front end that trusts sharesReads sends no buffer, and every read would fail in read().
        NullBackend inner = new NullBackend(1 << 20, 512, false);
        assertTrue(inner.sharesReads());
        assertFalse(new PacedBackend(inner, 0, 1L << 30).sharesReads());
    }

    @Test
    void shouldPassTheDataThrough() throws Exception {
        try (PacedBackend paced = new PacedBackend(new MemoryBackend(1 << 20, 512, false), 1_000, 1L << 30)) {
            ByteBuffer src = ByteBuffer.allocate(4096);
            for (int i = 0; i < 4096; i++) src.put(i, (byte) i);
            paced.write(8192, src, false);
            ByteBuffer dst = ByteBuffer.allocate(4096);
            paced.read(8192, dst);
            assertEquals(-1, src.mismatch(dst));
            assertTrue(paced.blocking());
            assertEquals("paced-memory", paced.kind());
        }
    }
}
