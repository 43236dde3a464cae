package io.iotarget.frontend.nvmetcp;

import io.iotarget.backend.file.FileBackend;
import io.iotarget.engine.Engine;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.iocontrol.Group;
import io.iotarget.testkit.Await;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The reservation gate next to the backend, on one node: writes of host A that io.max holds
 * were checked before B's preempt(-and-abort) and must not reach the disk after B's answer; nor
 * may B's answer wait for io.max to let them go. The data is read from the backing file itself.
 */
class ReservationGateTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private static final int WE = 1;
    private static final long KEY_A = 0xAAAA, KEY_B = 0xBBBB;
    /** A's controllers, each with one write io.max holds. */
    private static final int HELD = 4;
    /** io.max lets one 512-byte write through every 8 s: the writes stay held however long the setup takes. */
    private static final int WBPS = 64;

    @TempDir
    Path dir;
    private TargetFixture fixture;
    private Path file;
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final List<ReservationHost> hosts = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
        file = dir.resolve("disk");
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            ch.truncate(TargetFixture.DEVICE_BYTES);
            ch.write(ByteBuffer.allocate(1), TargetFixture.DEVICE_BYTES - 1);
        }
        fixture.engine.addDevice("file", FileBackend.open(file, 512, false, false), null, Engine.DEFAULT_QUEUE_DEPTH);
        var cg = fixture.engine.controller();
        cg.write("cgroup.subtree_control", "+io");
        Group tenant = cg.mkdir("a");
        fixture.tree.write(NS + "/enable", "0");
        fixture.tree.write(NS + "/device_path", "file");
        fixture.tree.write(NS + "/cgroup_id", Long.toString(tenant.id()));
        fixture.tree.write(NS + "/resv_enable", "1");
        fixture.tree.write(NS + "/enable", "1");
        fixture.awaitReservationRead();
        cg.write("a/io.max", fixture.engine.device("file").number() + " wbps=" + WBPS);
    }

    @AfterEach
    void stop() throws Exception {
        for (ReservationHost h : hosts) h.close();
        pool.shutdownNow();
        fixture.close();
    }

    private ReservationHost host(int id) throws Exception {
        ReservationHost h = new ReservationHost(fixture.port, TargetFixture.NQN, id);
        hosts.add(h);
        return h;
    }

    @Test
    void shouldKeepThePreemptedHostsHeldWritesOffTheDiskAfterPreemptAndAbortWithoutWaitingForIoMax() throws Exception {
        preemptWhileWritesAreHeld(2);
    }

    @Test
    void shouldKeepThePreemptedHostsHeldWritesOffTheDiskAfterAPlainPreempt() throws Exception {
        preemptWhileWritesAreHeld(1);
    }

    private static boolean held(Controller c, io.iotarget.frontend.nvmetcp.reservation.NamespaceReservation r) {
        return c.busyOn(1) && r.inBackend() == 0;
    }

    private static boolean sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return true;
    }

    /** A holds Write Exclusive; {@link #HELD} of its writes wait in io.max; B preempts (action 1) or preempts and aborts (2). */
    private void preemptWhileWritesAreHeld(int action) throws Exception {
        ReservationHost a0 = host(0xA1);
        assertEquals(0, a0.register(KEY_A));
        assertEquals(0, a0.acquire(0, WE, KEY_A, 0));
        ReservationHost b = host(0xB2);
        assertEquals(0, b.register(KEY_B));
        var subsystem = fixture.target.subsystems.get(TargetFixture.NQN);
        var reservation = subsystem.table.find(1).reservation();
        List<Future<Integer>> parked = new ArrayList<>();
        byte[] fills = new byte[HELD];
        for (int i = 0; i < HELD; i++) {
            ReservationHost a = i == 0 ? a0 : host(0xA1);
            Controller ca = fixture.target.controllers(subsystem).find(a.cntlid);
            long lba = i;
            Future<Integer> write;
            do {                                                     // until io.max holds one of this controller's writes
                assertTrue(fills[i] < 50, "io.max holds one of 50 writes");
                byte fill = (byte) (++fills[i] + 16 * i);
                write = pool.submit(() -> a.write(lba, fill));
                Future<Integer> w = write;
                // Held by io.max: on the engine, and not in the backend (no other write is), twice 50 ms apart.
                Await.until(Duration.ofSeconds(10), () -> w.isDone() || held(ca, reservation) && sleep(50) && held(ca, reservation),
                            () -> "the write was answered or io.max holds it");
            } while (write.isDone());
            fills[i] += (byte) (16 * i);
            parked.add(write);
        }
        for (int i = 0; i < HELD; i++) assertNotEquals(fills[i], DiskBlocks.onDisk(file, i)[0], "write " + i + " is held, not on the disk");

        long startNs = System.nanoTime();
        assertEquals(0, b.acquire(action, WE, KEY_B, KEY_A), "preempt");
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs);
        for (int i = 0; i < HELD; i++) {
            assertNotEquals(fills[i], DiskBlocks.onDisk(file, i)[0], "A's write " + i + ", held by io.max, is not on the disk when B is answered");
        }
        assertTrue(tookMs < 4000, "the preempt took " + tookMs + " ms: it must not wait for io.max (" + 512 / WBPS + " s a write)");

        // io.max lets everything go now: what it held of A's reaches the gate at once.
        fixture.engine.controller().write("a/io.max", fixture.engine.device("file").number() + " wbps=max");
        for (int i = 0; i < HELD; i++) assertEquals(0, b.write(i, (byte) 0x5B), "B holds it now");
        for (int i = 0; i < HELD; i++) {
            int status = parked.get(i).get(30, TimeUnit.SECONDS);
            int expected = action == 2 ? Status.ABORT_REQUESTED : Status.RESERVATION_CONFLICT | Status.DNR;
            assertEquals(expected, status, "A's held write " + i + ": " + (action == 2 ? "aborted" : "refused when io.max let it go"));
        }
        // Every write of A is answered, none with success: nothing of A's can reach the disk any more.
        for (int i = 0; i < HELD; i++) assertArrayEquals(DiskBlocks.filled((byte) 0x5B), DiskBlocks.onDisk(file, i), "B's data at LBA " + i);
        assertEquals(0, subsystem.table.find(1).reservation().inBackend(), "nothing left in the backend");
    }
}
