package io.iotarget.control;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.iotarget.buffer.BufferAccount;
import io.iotarget.buffer.BufferPool;
import io.iotarget.testkit.Await;
import io.iotarget.testkit.ProcessResources;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import static io.iotarget.testkit.Ports.freePort;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A client that asks for large reads and never reads the replies holds only its own group's
 * share of the buffer pool (issue 8, part 6): one NBD connection and one NVMe/TCP IO queue of
 * tenant {@code stall} each send hundreds of 1 MiB reads (far more than the share) and read
 * nothing. Meanwhile tenant {@code ok} reads on the same device at its usual latency; after
 * {@code server.send_timeout_ms} both stalled connections are dropped, and the pool, the
 * server's threads and its descriptors are back where they were.
 *
 * <p>The device is an O_DIRECT file, so that every read takes a pool buffer (a memory backend
 * or the page cache would answer reads from their own memory, and the share would not be
 * tested). The server runs in this JVM, so that the pool's counters can be watched directly.
 */
class StalledReaderTest {
    private static final long MiB = 1 << 20;
    private static final long BUFFER_MEMORY = 128 * MiB;
    private static final long BUFFER_SHARE = 32 * MiB;
    private static final long SEND_TIMEOUT_MS = 2000;
    private static final int STALLED_READS = 300;
    /** A full IO queue of 128 entries: the host may have 127 commands outstanding. */
    private static final int NVME_READS = 127;
    private static final int VICTIM_READS = 400;
    /** Rounds of the other tenant's reads per measurement; their median decides, not one round a host hiccup hit. */
    private static final int VICTIM_ROUNDS = 3;
    private static final String NQN = "nqn.2026-11.io.iotarget:stall";
    @TempDir
    Path dir;

    @Test
    void aClientThatStopsReadingHoldsOnlyItsShareAndIsDroppedAfterTheSendTimeout() throws Exception {
        int nvmePort = freePort();
        String config = """
                { "server": { "control": "127.0.0.1:0", "nbd": "127.0.0.1:0", "buffer_memory": "%d", "buffer_share": "%d",
                              "send_timeout_ms": %d },
                  "backends": { "disk": { "type": "file", "path": "%s", "create": 1, "size": "512M", "direct": 1, "enable": 1 } },
                  "cgroup": { "tenants": { "cgroup.subtree_control": "+io", "stall": {}, "ok": {} } },
                  "nbd": { "exports": { "stall": { "backend": "disk", "cgroup": "tenants/stall", "enable": 1 },
                                        "ok": { "backend": "disk", "cgroup": "tenants/ok", "enable": 1 } } },
                  "nvmet": {
                    "ports": { "1": { "addr_trtype": "tcp", "addr_adrfam": "ipv4", "addr_traddr": "127.0.0.1", "addr_trsvcid": "%d",
                                      "subsystems": ["%s"] } },
                    "subsystems": { "%s": { "attr_allow_any_host": 1,
                                            "namespaces": { "1": { "device_path": "disk", "cgroup": "tenants/stall", "enable": 1 } } } } } }
                """.formatted(BUFFER_MEMORY, BUFFER_SHARE, SEND_TIMEOUT_MS, dir.resolve("disk.img"), nvmePort, NQN, NQN);
        try (Server server = Server.start(new ObjectMapper().readTree(config), dir)) {
            int nbdPort = server.nbdAddresses().getFirst().getPort();
            BufferPool pool = server.engine().buffers();
            BufferAccount stall = pool.account(server.engine().controller().group("tenants/stall"));
            long[][] before;
            ProcessResources baseline;
            try (SocketChannel victim = RawClients.nbdTransmitting(nbdPort, "ok", 0)) {
                victimLatenciesUs(victim);                          // warm: JIT, the pool's 4 KiB buffers, the disk path
                baseline = ProcessResources.now();
                long poolBaseline = settledInUse(pool::inUseBytes);
                // The watcher wakes 5,000 times a second: it runs while the other tenant is measured
                // alone too, so that both measurements share its cost.
                AtomicLong peak = new AtomicLong();
                AtomicBoolean watching = new AtomicBoolean(true);
                Thread watcher = Thread.ofPlatform().daemon().start(() -> {
                    while (watching.get()) {
                        peak.accumulateAndGet(stall.inUseBytes(), Math::max);
                        java.util.concurrent.locks.LockSupport.parkNanos(200_000);
                    }
                });
                before = victimRounds(victim);

                List<SocketChannel> stalled = new ArrayList<>();
                long[][] during;
                long heldAt;
                long droppedAfterMs;
                try {
                    SocketChannel nbd = RawClients.nbdTransmitting(nbdPort, "stall", 64 << 10);
                    stalled.add(nbd);
                    SocketChannel admin = RawClients.nvmePastIcReq(nvmePort, 0);
                    stalled.add(admin);
                    int cntlid = RawClients.nvmeConnect(admin, NQN, "nqn.2014-08.org.nvmexpress:uuid:stall", 0, 0xFFFF, 32);
                    SocketChannel queue = RawClients.nvmePastIcReq(nvmePort, 64 << 10);
                    stalled.add(queue);
                    RawClients.nvmeConnect(queue, NQN, "nqn.2014-08.org.nvmexpress:uuid:stall", 1, cntlid, 128);

                    long t0 = System.nanoTime();
                    for (int i = 0; i < STALLED_READS; i++) {
                        RawClients.writeFully(nbd, RawClients.nbdRequest(RawClients.NBD_CMD_READ, i, i * MiB % (256 * MiB), (int) MiB));
                    }
                    for (int i = 0; i < NVME_READS; i++) {
                        RawClients.writeFully(queue, RawClients.nvmeRead(i, 1, (256 * MiB + i * MiB % (256 * MiB)) / 512, (int) (MiB / 512)));
                    }
                    // The replies fill the sockets, then the server's output queues hold their buffers.
                    Await.within(Duration.ofNanos(Math.max(0, t0 + SEND_TIMEOUT_MS * 1_000_000 / 2 - System.nanoTime())),
                            () -> stall.inUseBytes() >= BUFFER_SHARE - 2 * MiB);
                    heldAt = stall.inUseBytes();
                    // The stalled tenant's own burst (decoding 427 commands, filling 32 MiB) is load, not
                    // a stall: the other tenant is measured once the held bytes stand still.
                    settledInUse(stall::inUseBytes);
                    during = victimRounds(victim);
                    long heldAfterVictim = stall.inUseBytes();
                    long stillHeldMs = (System.nanoTime() - t0) / 1_000_000;

                    // Dropped one after the other: the queue whose reads all waited for the share had no reply
                    // queued, so its send timeout starts only once the first one's drop gave it buffers.
                    Await.within(Duration.ofNanos(Math.max(0, t0 + (2 * SEND_TIMEOUT_MS + 3000) * 1_000_000 - System.nanoTime())), () -> stall.inUseBytes() == 0);
                    droppedAfterMs = (System.nanoTime() - t0) / 1_000_000;
                    watching.set(false);
                    watcher.join();

                    System.out.printf("[stalled-reader] NBD %d x 1 MiB + NVMe/TCP %d x 1 MiB reads never read: group held %d MiB "
                                      + "(peak %d MiB, share %d MiB, pool in use %d MiB of %d), still %d MiB after %d ms; "
                                      + "other tenant's 4 KiB reads p50/p99/max (median of " + VICTIM_ROUNDS + " rounds) %d/%d/%d us alone, %d/%d/%d us meanwhile; "
                                      + "all dropped %d ms after the reads (send_timeout_ms %d)%n",
                            STALLED_READS, NVME_READS, heldAt / MiB, peak.get() / MiB, BUFFER_SHARE / MiB,
                            pool.inUseBytes() / MiB, BUFFER_MEMORY / MiB, heldAfterVictim / MiB, stillHeldMs,
                            median(before, 50), median(before, 99), median(before, 100),
                            median(during, 50), median(during, 99), median(during, 100), droppedAfterMs, SEND_TIMEOUT_MS);
                    assertTrue(peak.get() <= BUFFER_SHARE, "the stalled group held " + peak.get() / MiB + " MiB, its share is " + BUFFER_SHARE / MiB);
                    assertTrue(heldAt >= BUFFER_SHARE / 2, "the stalled readers held their share (" + heldAt / MiB + " MiB)");
                    assertTrue(heldAfterVictim >= BUFFER_SHARE / 2 && stillHeldMs < SEND_TIMEOUT_MS,
                            "the other tenant was measured while the stall lasted");
                    assertTrue(median(during, 99) <= 3 * median(before, 99) + 2000,
                            "the other tenant's p99 went from " + median(before, 99) + " to " + median(during, 99) + " us");
                    assertEquals(0, stall.inUseBytes(), "the stalled connections were dropped and their buffers came back");
                    assertTrue(droppedAfterMs >= SEND_TIMEOUT_MS, "dropped after " + droppedAfterMs + " ms, before the send timeout");
                } finally {
                    watching.set(false);
                    for (SocketChannel c : stalled) c.close();
                }
                assertEquals(poolBaseline, settledInUse(pool::inUseBytes), "the pool's in-use bytes are back");
                assertEquals(0, RawClients.nbdRead(victim, 1, 0, 4096), "the other tenant's connection still works");
            }
            String excess = ProcessResources.awaitNear(baseline, new ProcessResources.Tolerance(0, 1, Long.MAX_VALUE / 2, Long.MAX_VALUE / 2,
                    Long.MAX_VALUE / 2), 5_000);
            assertNull(excess, "threads and descriptors back to the baseline");
            assertEquals(0, server.engine().buffers().inUseBytes());
        }
    }

    /** {@link #VICTIM_ROUNDS} rounds of {@link #victimLatenciesUs}. */
    private static long[][] victimRounds(SocketChannel victim) throws IOException {
        long[][] rounds = new long[VICTIM_ROUNDS][];
        for (int r = 0; r < VICTIM_ROUNDS; r++) rounds[r] = victimLatenciesUs(victim);
        return rounds;
    }

    /** The median over the rounds of each round's {@code p}-th percentile. */
    private static long median(long[][] rounds, int p) {
        long[] each = new long[rounds.length];
        for (int r = 0; r < rounds.length; r++) each[r] = percentile(rounds[r], p);
        Arrays.sort(each);
        return each[each.length / 2];
    }

    /** The other tenant's 4 KiB reads, one at a time, in microseconds each. */
    private static long[] victimLatenciesUs(SocketChannel victim) throws IOException {
        long[] us = new long[VICTIM_READS];
        for (int i = 0; i < VICTIM_READS; i++) {
            long t0 = System.nanoTime();
            assertEquals(0, RawClients.nbdRead(victim, i, (i * 7919L % 65536) * 4096, 4096));
            us[i] = (System.nanoTime() - t0) / 1000;
        }
        return us;
    }

    /**
     * In-use bytes (the pool's or a group's) once they hold still for 100 ms, at most 5 s: a
     * reply's buffer goes back when the loop has written it, which can be just after its client
     * has read it.
     */
    private static long settledInUse(LongSupplier inUseBytes) throws InterruptedException {
        long deadline = System.nanoTime() + 5_000_000_000L;
        long last = inUseBytes.getAsLong();
        while (System.nanoTime() < deadline) {
            Thread.sleep(100);
            long now = inUseBytes.getAsLong();
            if (now == last) return now;
            last = now;
        }
        return last;
    }

    private static long percentile(long[] values, int p) {
        long[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }
}
