package io.iotarget.backend.nullblk;

import io.iotarget.backend.Completion;
import io.iotarget.model.Device;
import io.iotarget.model.DeviceNumber;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.PriorityQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TimedNullBackendTest {
    private static final long MS = 1_000_000L;
    private static final long MIB = 1L << 20;

    private static TimedNullBackend device(long completionNs, long mbps) {
        return new TimedNullBackend(new NullBackend(1L << 30, 512, false), completionNs, mbps);
    }

    @Test
    void shouldGiveQueueDepthOverCompletionTimeIops() throws IOException {
        // completion_nsec=1000000 with 10 requests at once, each sent again the moment it
        // completes: 10 per ms, 10,000 in the first second (the last ones at exactly 1 s).
        try (TimedNullBackend d = device(MS, 0)) {
            PriorityQueue<Long> slots = new PriorityQueue<>();
            for (int i = 0; i < 10; i++) slots.add(d.deadlineNs(0, 4096));
            int completed = 0;
            while (slots.peek() <= 1_000 * MS) {
                long now = slots.poll();
                completed++;
                slots.add(d.deadlineNs(now, 4096));
            }
            assertEquals(10_000, completed);
        }
    }

    @Test
    void shouldNotCountLateTimersAndClientsAgainstTheDevice() throws IOException {
        // Each completion reaches its client 300 µs late, and the client sends the next request
        // then: every slot still completes one request per ms, each within 1 ms of its slot's
        // previous one — 10,000 in the first second.
        try (TimedNullBackend d = device(MS, 0)) {
            PriorityQueue<long[]> slots = new PriorityQueue<>((x, y) -> Long.compare(x[0], y[0]));
            for (int i = 0; i < 10; i++) slots.add(new long[]{d.deadlineNs(0, 4096)});
            int completed = 0;
            while (slots.peek()[0] <= 1_000 * MS) {
                long deadline = slots.poll()[0];
                completed++;
                slots.add(new long[]{d.deadlineNs(deadline + 300_000, 4096)});
            }
            assertEquals(10_000, completed);
        }
    }

    @Test
    void shouldGiveNothingBackToASlotIdleLongerThanACompletion() throws IOException {
        try (TimedNullBackend d = device(MS, 0)) {
            long first = d.deadlineNs(0, 4096);
            assertEquals(MS, first);
            assertEquals(first + MS, d.deadlineNs(first + 400_000, 4096), "0.4 ms after its slot freed up: starts when it did");
            long later = 100 * MS;
            assertEquals(later + MS, d.deadlineNs(later, 4096), "idle for 98 ms: starts on arrival");
        }
    }

    @Test
    void shouldPassBytesAtMbpsAfterABurstOfTwentyMilliseconds() throws IOException {
        // 200 MiB/s: a 1 MiB request's bytes take 5 ms. An idle device has 20 ms worth in its
        // bucket: the first four start at once, then one every 5 ms.
        try (TimedNullBackend d = device(MS, 200)) {
            List<Long> deadlines = new ArrayList<>();
            for (int i = 0; i < 1000; i++) deadlines.add(d.deadlineNs(0, MIB));
            assertEquals(Collections.nCopies(4, MS), deadlines.subList(0, 4));
            assertEquals(5 * MS + MS, deadlines.get(4));
            assertEquals(996 * 5 * MS + MS, deadlines.get(999), "1000 MiB at 200 MiB/s: 5 s, less the 20 ms burst");
            // Later, idle again: the bucket is full again, and not fuller.
            long later = 10_000 * MS;
            for (int i = 0; i < 4; i++) assertEquals(later + MS, d.deadlineNs(later, MIB));
            assertEquals(later + 5 * MS + MS, d.deadlineNs(later, MIB));
        }
    }

    @Test
    void shouldNeverCompleteARequestBeforeAnEarlierOne() throws IOException {
        // A flush moves no bytes, but a device whose bandwidth is spent starts nothing (null_blk
        // stops its queues): it completes with the transfer queued before it, not ahead of it.
        try (TimedNullBackend d = device(0, 1)) {
            long read = d.deadlineNs(0, 64 * MIB);
            long flush = d.deadlineNs(MS, 0);
            assertEquals(read, flush);
            assertTrue(read > 60_000 * MS);
        }
    }

    @Test
    void shouldReportEveryStartedRequestOnceInOrder() throws Exception {
        Device device = new Device(0, new DeviceNumber(259, 0), "n", 1L << 30, 512, false, 1);
        int n = 200;
        List<Long> completedTags = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch all = new CountDownLatch(n);
        Completion done = new Completion() {
            @Override
            public void completed(IoRequest io, IoStatus status) {
                assertEquals(IoStatus.OK, status);
                completedTags.add(io.tag());
                all.countDown();
            }

            @Override
            public void failed(IoRequest io, IOException cause) {
                throw new AssertionError(cause);
            }
        };
        try (TimedNullBackend d = device(100_000, 1000)) {
            assertTrue(d.blocking());
            assertEquals("null", d.kind());
            for (int i = 0; i < n; i++) {
                ByteBuffer data = ByteBuffer.allocate(4096);
                data.put(0, (byte) 1);
                IoRequest io = new IoRequest().set(IoOp.READ, 0, 4096L * i, 4096, data).target(device, null).callback(r -> { }, null, i);
                assertNull(d.start(io, null, done), "a timed device reports later, never at once");
                assertEquals(0, data.get(0), "the read's zeroes are in place before it completes");
            }
            assertTrue(all.await(30, TimeUnit.SECONDS));
            for (int i = 0; i < n; i++) assertEquals(i, completedTags.get(i));
        }
    }

    @Test
    void shouldWaitOnTheCallingThreadForSynchronousCalls() throws Exception {
        try (TimedNullBackend d = device(2 * MS, 0)) {
            long start = System.nanoTime();
            d.write(0, ByteBuffer.allocate(4096), false);
            assertTrue(System.nanoTime() - start >= 2 * MS, "a synchronous write returns at its completion time, never before");
        }
    }
}
