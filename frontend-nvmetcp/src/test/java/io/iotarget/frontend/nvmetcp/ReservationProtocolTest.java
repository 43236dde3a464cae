package io.iotarget.frontend.nvmetcp;

import io.iotarget.frontend.nvmetcp.TestHost.Completion;
import io.iotarget.frontend.nvmetcp.wire.Status;
import io.iotarget.frontend.nvmetcp.reservation.LocalReservationStore;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * Persistent reservations on the wire, with two host identities (two host IDs, each with its
 * own controller): the Identify fields, nvmet's access table, preempt, the report's bytes,
 * notices (log page 0x80 and the event) and PTPL kept across a restart.
 */
class ReservationProtocolTest {
    private static final String NS = "subsystems/" + TargetFixture.NQN + "/namespaces/1";
    private static final int CONFLICT = Status.RESERVATION_CONFLICT | Status.DNR;
    private static final int WE = 1, EA = 2;
    private static final long KEY_A = 0xAAAA, KEY_B = 0xBBBB;

    private TargetFixture fixture;

    @BeforeEach
    void start() throws Exception {
        fixture = new TargetFixture();
    }

    @AfterEach
    void stop() {
        fixture.close();
    }

    private void enableReservations() throws Exception {
        fixture.tree.write(NS + "/enable", "0");
        fixture.tree.write(NS + "/resv_enable", "1");
        fixture.tree.write(NS + "/enable", "1");
        fixture.awaitReservationRead();                 // enabling only queues the store's read
    }

    private ReservationHost host(int id) throws Exception {
        return new ReservationHost(fixture.port, TargetFixture.NQN, id);
    }

    private static ByteBuffer le(byte[] b) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static Completion feature(TestHost admin, int opcode, int fid, int nsid, int cdw11) throws Exception {
        ByteBuffer sqe = admin.sqe(opcode, nsid);
        sqe.putInt(40, fid);
        sqe.putInt(44, cdw11);
        return admin.execute(sqe, null, 0, false);
    }

    @Test
    void shouldAdvertiseReservationsAndRunThemOnlyWithResvEnable() throws Exception {
        assertEquals("0\n", fixture.tree.read(NS + "/resv_enable"));
        try (ReservationHost a = host(0xA1)) {
            assertEquals(1 << 5, le(a.admin.identify(1, 0).data()).getShort(520) & 1 << 5, "ONCS: reservations");
            assertEquals(0, a.admin.identify(0, 1).data()[31], "RESCAP 0 without resv_enable");
            assertEquals(Status.INVALID_OPCODE | Status.DNR, a.register(KEY_A), "falls through to the backend, as nvmet");
        }
        assertEquals(io.iotarget.model.Errno.EBUSY, org.junit.jupiter.api.Assertions.assertThrows(io.iotarget.model.ControlException.class,
                () -> fixture.tree.write(NS + "/resv_enable", "1")).errno(), "only while disabled");
        enableReservations();
        assertEquals("1\n", fixture.tree.read(NS + "/resv_enable"));
        try (ReservationHost a = host(0xA1)) {
            assertEquals((byte) 0xFE, a.admin.identify(0, 1).data()[31], "types 1-6 and IEKEY; no PTPL without a place to keep it");
            assertEquals(0, a.register(KEY_A));
        }
    }

    @Test
    void shouldLetTheWriteExclusiveHolderWriteAndOthersOnlyRead() throws Exception {
        enableReservations();
        try (ReservationHost a = host(0xA1); ReservationHost b = host(0xB2)) {
            assertEquals(CONFLICT, a.acquire(0, WE, KEY_A, 0), "not registered");
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, a.register(KEY_A), "the same key again: success");
            assertEquals(CONFLICT, a.register(KEY_B), "another key: conflict");
            assertEquals(0, a.acquire(0, WE, KEY_A, 0));
            assertEquals(0, a.acquire(0, WE, KEY_A, 0), "again, same type");
            assertEquals(CONFLICT, a.acquire(0, EA, KEY_A, 0), "again, another type");
            assertEquals(0, a.write());
            assertEquals(0, b.read());
            assertEquals(CONFLICT, b.write());
            assertEquals(CONFLICT, b.io.execute(b.io.sqe(0x00, 1), null, 0, false).status(), "flush is in the write group");
            assertEquals(0, b.register(KEY_B));
            assertEquals(CONFLICT, b.write(), "a registrant is no holder under Write Exclusive");
            assertEquals(CONFLICT, b.acquire(0, WE, KEY_B, 0), "held by another");

            ByteBuffer report = a.report(4096, true);
            assertEquals(2, report.getInt(0), "generation: two registrations");
            assertEquals(WE, report.get(4));
            assertEquals(2, report.getShort(5));
            assertEquals(0, report.get(9), "PTPLS");
            assertEquals(0xFFFF, report.getShort(64) & 0xFFFF, "dynamic controller");
            assertEquals(1, report.get(64 + 2), "A holds it");
            assertEquals(KEY_A, report.getLong(64 + 8));
            assertArrayEquals(a.hostId, Arrays.copyOfRange(report.array(), 64 + 16, 64 + 32));
            assertEquals(0, report.get(128 + 2));
            assertEquals(KEY_B, report.getLong(128 + 8));
            assertArrayEquals(b.hostId, Arrays.copyOfRange(report.array(), 128 + 16, 128 + 32));

            ByteBuffer small = a.report(64, true);
            assertEquals(2, small.getShort(5), "REGCTL counts every registrant, even when none fits");
            assertNull(a.report(4096, false));
            assertEquals(Status.HOST_ID_INCONSISTENT | Status.DNR, a.lastStatus, "EDS=0 with 128-bit host IDs");
            assertNull(a.report(32, true));
            assertEquals(Status.INVALID_FIELD | Status.DNR, a.lastStatus, "shorter than the header");

            assertEquals(CONFLICT, a.release(0, EA, KEY_A), "release with another type");
            assertEquals(0, b.release(0, WE, KEY_B), "not the holder: success, no effect");
            assertEquals(CONFLICT, b.write());
            assertEquals(0, a.release(0, WE, KEY_A));
            assertEquals(0, b.write(), "released");
        }
    }

    @Test
    void shouldApplyNvmetsAccessTableToEveryType() throws Exception {
        enableReservations();
        try (ReservationHost a = host(0xA1); ReservationHost b = host(0xB2); ReservationHost c = host(0xC3)) {
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, b.register(KEY_B));
            // type: {B registrant read, B write, C non-registrant read, C write}
            int[][] expected = {
                    {0, CONFLICT, 0, CONFLICT},                 // 1 Write Exclusive
                    {CONFLICT, CONFLICT, CONFLICT, CONFLICT},   // 2 Exclusive Access
                    {0, 0, 0, CONFLICT},                        // 3 WE, registrants only
                    {0, 0, CONFLICT, CONFLICT},                 // 4 EA, registrants only
                    {0, 0, 0, CONFLICT},                        // 5 WE, all registrants
                    {0, 0, CONFLICT, CONFLICT}};                // 6 EA, all registrants
            for (int type = 1; type <= 6; type++) {
                assertEquals(0, a.acquire(0, type, KEY_A, 0), "type " + type);
                assertEquals(0, a.write(), "holder writes, type " + type);
                int[] e = expected[type - 1];
                assertEquals(e[0], b.read(), "registrant reads, type " + type);
                assertEquals(e[1], b.write(), "registrant writes, type " + type);
                assertEquals(e[2], c.read(), "non-registrant reads, type " + type);
                assertEquals(e[3], c.write(), "non-registrant writes, type " + type);
                assertEquals(0, a.release(0, type, KEY_A), "type " + type);
            }
            assertEquals(Status.INVALID_FIELD | Status.DNR, a.acquire(0, 7, KEY_A, 0), "RTYPE 7");
            assertEquals(Status.INVALID_FIELD | Status.DNR, a.acquire(1 << 3, WE, KEY_A, 0), "IEKEY on Acquire");
            assertEquals(Status.INVALID_OPCODE | Status.DNR, a.register(3, false, 0, KEY_A, 1), "RREGA 3");
        }
    }

    @Test
    void shouldMoveTheReservationOnPreemptAndTellThePreemptedHost() throws Exception {
        enableReservations();
        try (ReservationHost a = host(0xA1); ReservationHost b = host(0xB2)) {
            assertEquals(0, a.register(KEY_A));
            assertEquals(0, a.acquire(0, WE, KEY_A, 0));
            assertEquals(0, b.register(KEY_B));
            java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newSingleThreadExecutor();
            try {
                var aer = pool.submit(() -> a.admin.execute(a.admin.sqe(0x0C, 0), null, 0, false));
                assertEquals(0, b.acquire(1, EA, KEY_B, KEY_A), "preempt A with A's key, as Exclusive Access");
                assertEquals(0x00800006, aer.get(10, java.util.concurrent.TimeUnit.SECONDS).result(), "reservation log page available");
            } finally {
                pool.shutdownNow();
            }
            assertEquals(0, b.write());
            assertEquals(CONFLICT, a.read(), "Exclusive Access: A, preempted, may not even read");
            assertEquals(CONFLICT, a.release(0, WE, KEY_A), "A's registration is gone");
            ByteBuffer notice = le(a.admin.getLogPage(0x80, 64, 0, false).data());
            assertEquals(1, notice.getLong(0), "LPC");
            assertEquals(1, notice.get(8), "registration preempted");
            assertEquals(0, notice.get(9), "nothing more queued");
            assertEquals(1, notice.getInt(12), "nsid");
            assertEquals(0, le(a.admin.getLogPage(0x80, 64, 0, false).data()).getLong(0), "read once: empty now");

            ByteBuffer report = b.report(4096, true);
            assertEquals(3, report.getInt(0), "two registrations and a preempt");
            assertEquals(EA, report.get(4));
            assertEquals(1, report.getShort(5));
            assertEquals(KEY_B, report.getLong(64 + 8));

            assertEquals(0, a.register(KEY_A), "A registers again");
            assertEquals(0, feature(a.admin, 0x09, 0x82, 1, 1 << 3).status(), "A masks 'reservation preempted'");
            assertEquals(1 << 3, feature(a.admin, 0x0A, 0x82, 1, 0).result());
            assertEquals(Status.INVALID_FIELD | Status.DNR, feature(a.admin, 0x09, 0x82, 1, 1).status(), "bit 0 is reserved");
            assertEquals(0, b.release(1, 0, KEY_B), "clear");
            assertEquals(0, a.write(), "nobody holds it");
            assertEquals(0, le(a.admin.getLogPage(0x80, 64, 0, false).data()).getLong(0), "the masked notice was not queued");
        }
    }

    @Test
    void shouldKeepAReservationWithPtplAcrossARestart(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("server.state.reservations");
        fixture.target.reservations().use(new LocalReservationStore(file), 200, 1000);
        enableReservations();
        try (ReservationHost a = host(0xA1)) {
            assertEquals((byte) 0xFF, a.admin.identify(0, 1).data()[31], "RESCAP with PTPL");
            assertEquals(0, a.register(0, false, 3, 0, KEY_A), "register with CPTPL=3: persist");
            assertEquals(0, a.acquire(0, WE, KEY_A, 0));
            assertEquals(1, feature(a.admin, 0x0A, 0x83, 1, 0).result(), "Get Features PTPL");
            assertEquals(1, a.report(4096, true).get(9), "PTPLS");
        }
        fixture.close();
        fixture = new TargetFixture();
        fixture.target.reservations().use(new LocalReservationStore(file), 200, 1000);
        enableReservations();
        try (ReservationHost a = host(0xA1); ReservationHost b = host(0xB2)) {
            assertEquals(CONFLICT, b.write(), "A's reservation came back with the server");
            assertEquals(0, a.write());
            assertEquals(0, feature(a.admin, 0x09, 0x83, 1, 0).status(), "PTPL off");
        }
        fixture.close();
        fixture = new TargetFixture();
        fixture.target.reservations().use(new LocalReservationStore(file), 200, 1000);
        enableReservations();
        try (ReservationHost b = host(0xB2)) {
            assertEquals(0, b.write(), "without PTPL a restart is a power loss: the reservation is gone");
            assertEquals(0, b.report(4096, true).getShort(5));
        }
    }

    @Test
    void shouldRefusePtplWithNowhereToKeepIt() throws Exception {
        enableReservations();
        try (ReservationHost a = host(0xA1)) {
            assertEquals(Status.INVALID_FIELD | Status.DNR, feature(a.admin, 0x09, 0x83, 1, 1).status());
            assertEquals(Status.INVALID_FIELD | Status.DNR, a.register(0, false, 3, 0, KEY_A), "CPTPL=3");
            assertEquals(0, feature(a.admin, 0x0A, 0x83, 1, 0).result());
            assertEquals(Status.INVALID_FIELD | Status.DNR, feature(a.admin, 0x0A, 0x83, 2, 0).status(), "no such namespace");
        }
    }

    @Test
    void shouldRefuseReservationDataOfTheWrongLength() throws Exception {
        enableReservations();
        try (ReservationHost a = host(0xA1)) {
            ByteBuffer sqe = a.io.sqe(0x0D, 1);
            assertEquals(Status.SGL_DATA_LENGTH_INVALID | Status.DNR, a.io.execute(sqe, new byte[8], 0, true).status());
            assertEquals(0, a.register(KEY_A), "the queue goes on");
        }
    }
}
