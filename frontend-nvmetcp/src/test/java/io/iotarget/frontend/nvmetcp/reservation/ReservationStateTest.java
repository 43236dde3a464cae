package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.frontend.nvmetcp.wire.Status;
import org.junit.jupiter.api.Test;

import java.util.List;

import static io.iotarget.frontend.nvmetcp.reservation.ReservationState.*;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The commands as pure functions: the cases of nvmet's preempt and unregister, generations, versions, the stored form. */
class ReservationStateTest {
    private static final int CONFLICT = Status.RESERVATION_CONFLICT | Status.DNR;
    private static final long A = 0xA, B = 0xB, C = 0xC;

    /** Host h (its ID is h, h) registered with key h, in order. */
    private static ReservationState registered(long... hosts) {
        ReservationState s = EMPTY;
        for (long h : hosts) s = s.register(h, h, REGISTER, false, 0, 0, h, false).next();
        return s;
    }

    private static ReservationState held(ReservationState s, long host, int type) {
        Outcome o = s.acquire(host, host, ACQUIRE, false, type, host, 0);
        assertEquals(Status.SUCCESS, o.status());
        return o.next();
    }

    @Test
    void shouldCountGenerationsAndVersionsAsNvmet() {
        ReservationState s = registered(A, B);
        assertEquals(2, s.generation());
        assertEquals(2, s.version());
        ReservationState h = held(s, A, WRITE_EXCLUSIVE);
        assertEquals(2, h.generation(), "acquire does not count");
        assertEquals(3, h.version(), "but is a change of the store's");
        assertSame(h, h.acquire(A, A, ACQUIRE, false, WRITE_EXCLUSIVE, A, 0).next(), "acquiring again changes nothing");
        assertEquals(CONFLICT, EMPTY.register(A, A, UNREGISTER, false, 0, A, 0, false).status(), "unregister unregistered");
        assertEquals(Status.SUCCESS, s.register(A, A, REPLACE, true, 0, 999, 77, false).status(), "IEKEY ignores CRKEY");
        assertEquals(CONFLICT, s.register(A, A, REPLACE, false, 0, 999, 77, false).status());
    }

    @Test
    void shouldPassAnAllRegistrantsReservationOnWhenItsHolderUnregisters() {
        ReservationState s = held(registered(A, B, C), A, WRITE_EXCLUSIVE_ALL_REGISTRANTS);
        Outcome o = s.register(A, A, UNREGISTER, false, 0, A, 0, false);
        assertEquals(WRITE_EXCLUSIVE_ALL_REGISTRANTS, o.next().type());
        assertTrue(o.next().holds(B, B) && o.next().holds(C, C));
        assertEquals(List.of(), o.notices());
    }

    @Test
    void shouldReleaseARegistrantsOnlyReservationWhenItsHolderUnregisters() {
        ReservationState s = held(registered(A, B), A, WRITE_EXCLUSIVE_REGISTRANTS_ONLY);
        Outcome o = s.register(A, A, UNREGISTER, false, 0, A, 0, false);
        assertEquals(NONE, o.next().type());
        assertEquals(List.of(new Notice(B, B, NOTICE_RESERVATION_RELEASED)), o.notices());
        Outcome silent = held(registered(A, B), A, WRITE_EXCLUSIVE).register(A, A, UNREGISTER, false, 0, A, 0, false);
        assertEquals(NONE, silent.next().type());
        assertEquals(List.of(), silent.notices(), "types 1 and 2 drop silently");
    }

    @Test
    void shouldPreemptInNvmetsFiveCases() {
        // 1 nobody holds it: unregister those with the key; none is a conflict
        Outcome o = registered(A, B).acquire(B, B, PREEMPT, false, WRITE_EXCLUSIVE, B, A);
        assertEquals(1, o.next().registrants().size());
        assertEquals(NONE, o.next().type());
        assertEquals(List.of(new Notice(A, A, NOTICE_REGISTRATION_PREEMPTED)), o.notices());
        assertEquals(CONFLICT, registered(A, B).acquire(B, B, PREEMPT, false, WRITE_EXCLUSIVE, B, 0x99).status());
        // 2 all-registrants type, key 0: the preempter holds it alone
        o = held(registered(A, B, C), A, EXCLUSIVE_ACCESS_ALL_REGISTRANTS).acquire(B, B, PREEMPT, false, WRITE_EXCLUSIVE, B, 0);
        assertEquals(List.of(new Registrant(B, B, B)), o.next().registrants());
        assertEquals(WRITE_EXCLUSIVE, o.next().type());
        assertEquals(2, o.notices().size());
        // 3 the holder preempts: a type change, others told the reservation was released
        o = held(registered(A, B), A, WRITE_EXCLUSIVE).acquire(A, A, PREEMPT, false, EXCLUSIVE_ACCESS, A, A);
        assertEquals(EXCLUSIVE_ACCESS, o.next().type());
        assertEquals(List.of(new Notice(B, B, NOTICE_RESERVATION_RELEASED)), o.notices());
        // 4 the holder's key: the preempter holds it, the holder is unregistered
        o = held(registered(A, B), A, WRITE_EXCLUSIVE).acquire(B, B, PREEMPT_AND_ABORT, false, WRITE_EXCLUSIVE, B, A);
        assertTrue(o.next().holds(B, B));
        assertEquals(List.of(new Registrant(B, B, B)), o.next().registrants());
        assertEquals(3, o.next().generation(), "two registrations, then the preempt");
        // 5 another key: those registrants go, the reservation stays; key 0 is invalid
        o = held(registered(A, B, C), A, WRITE_EXCLUSIVE).acquire(B, B, PREEMPT, false, WRITE_EXCLUSIVE, B, C);
        assertTrue(o.next().holds(A, A));
        assertEquals(2, o.next().registrants().size());
        assertEquals(Status.INVALID_FIELD | Status.DNR, held(registered(A, B), A, WRITE_EXCLUSIVE)
                .acquire(B, B, PREEMPT, false, WRITE_EXCLUSIVE, B, 0).status());
    }

    @Test
    void shouldStoreAndReadBackEveryField() {
        ReservationState s = held(registered(A, -1L, 0x1234_5678_9ABC_DEF0L), -1L, EXCLUSIVE_ACCESS_REGISTRANTS_ONLY).persist(true).next();
        assertEquals(s, decode(s.encode()));
        assertEquals(EMPTY, decode(EMPTY.encode()));
        assertThrows(IllegalArgumentException.class, () -> decode("1 2 9 " + "0".repeat(32) + " 0"));
        assertThrows(IllegalArgumentException.class, () -> decode("garbage"));
    }
}
