package io.iotarget.frontend.nvmetcp.reservation;

import io.iotarget.frontend.nvmetcp.wire.Status;

import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

/**
 * One namespace's persistent reservation: the registrants (host identifier and key), the
 * holder and its type, the generation and PTPL, with a {@link #version} that grows by one with
 * every stored change (the store's compare-and-set). Immutable; the commands are pure functions
 * from a state to an {@link Outcome}, the same on a node alone and in a cluster (nvmet's
 * {@code pr.c} semantics, ../shared/reference/nvmet-ha-tls.md B.4). Any thread.
 *
 * <p>A host is its 128-bit Host Identifier from Connect, as two longs read big-endian
 * ({@code hostHigh}, {@code hostLow}): every controller of one host, on any node, is the same
 * registrant.
 *
 * @param version     the store's version: 0 for a namespace never registered to
 * @param generation  PRGEN: grows with every register action, preempt and clear
 * @param type        the holder's reservation type 1..6, {@link #NONE} when nobody holds it
 * @param holderHigh  the holder's host identifier, high half (meaningless while {@code type} is NONE)
 * @param holderLow   the holder's host identifier, low half
 * @param ptpl        Persist Through Power Loss is set
 * @param registrants in registration order
 */
public record ReservationState(long version, int generation, int type, long holderHigh, long holderLow, boolean ptpl,
                               List<Registrant> registrants) {
    public static final ReservationState EMPTY = new ReservationState(0, 0, 0, 0, 0, false, List.of());

    public static final int NONE = 0;
    public static final int WRITE_EXCLUSIVE = 1;
    public static final int EXCLUSIVE_ACCESS = 2;
    public static final int WRITE_EXCLUSIVE_REGISTRANTS_ONLY = 3;
    public static final int EXCLUSIVE_ACCESS_REGISTRANTS_ONLY = 4;
    public static final int WRITE_EXCLUSIVE_ALL_REGISTRANTS = 5;
    public static final int EXCLUSIVE_ACCESS_ALL_REGISTRANTS = 6;

    /** Reservation notice types (log page 0x80). */
    public static final int NOTICE_REGISTRATION_PREEMPTED = 1;
    public static final int NOTICE_RESERVATION_RELEASED = 2;
    public static final int NOTICE_RESERVATION_PREEMPTED = 3;

    /** Register's RREGA, Acquire's RACQA, Release's RRELA. */
    public static final int REGISTER = 0, UNREGISTER = 1, REPLACE = 2;
    public static final int ACQUIRE = 0, PREEMPT = 1, PREEMPT_AND_ABORT = 2;
    public static final int RELEASE = 0, CLEAR = 1;
    /** Register's CPTPL. */
    public static final int CPTPL_NO_CHANGE = 0, CPTPL_CLEAR = 2, CPTPL_SET = 3;

    /** A registered host and its key. */
    public record Registrant(long hostHigh, long hostLow, long key) {
        boolean is(long high, long low) {
            return hostHigh == high && hostLow == low;
        }
    }

    /** Something a host must hear of (log page 0x80 and its event) about this namespace. */
    public record Notice(long hostHigh, long hostLow, int type) {
    }

    /**
     * What a command did: its NVMe status, the state after it ({@code next == before} when
     * nothing changed: a refusal, or a success without effect) and the notices it raised.
     */
    public record Outcome(int status, ReservationState next, List<Notice> notices) {
    }

    public ReservationState {
        registrants = List.copyOf(registrants);
    }

    // ---------------------------------------------------------------- queries (the IO path)

    /** The registrant of this host, or null. */
    public Registrant registrant(long high, long low) {
        for (Registrant r : registrants) if (r.is(high, low)) return r;
        return null;
    }

    /** Whether every registrant holds the reservation (types 5 and 6). */
    static boolean allRegistrants(int type) {
        return type == WRITE_EXCLUSIVE_ALL_REGISTRANTS || type == EXCLUSIVE_ACCESS_ALL_REGISTRANTS;
    }

    /** Whether this host holds the reservation (as any registrant does for types 5 and 6). */
    public boolean holds(long high, long low) {
        if (type == NONE) return false;
        if (allRegistrants(type)) return registrant(high, low) != null;
        return holderHigh == high && holderLow == low;
    }

    /**
     * nvmet_pr_check_cmd_access: whether this host may run a command that writes (else reads)
     * the namespace. Allocation-free.
     */
    public boolean allows(long high, long low, boolean write) {
        if (type == NONE || holds(high, low)) return true;
        return switch (type) {
            case WRITE_EXCLUSIVE -> !write;
            case WRITE_EXCLUSIVE_REGISTRANTS_ONLY, WRITE_EXCLUSIVE_ALL_REGISTRANTS -> !write || registrant(high, low) != null;
            case EXCLUSIVE_ACCESS_REGISTRANTS_ONLY, EXCLUSIVE_ACCESS_ALL_REGISTRANTS -> registrant(high, low) != null;
            default -> false;                               // EXCLUSIVE_ACCESS
        };
    }

    // ---------------------------------------------------------------- commands

    private Outcome refuse(int status) {
        return new Outcome(status, this, List.of());
    }

    private Outcome same() {
        return refuse(Status.SUCCESS);
    }

    private static Outcome conflict(ReservationState s) {
        return s.refuse(Status.RESERVATION_CONFLICT | Status.DNR);
    }

    private ReservationState with(int generation, int type, long holderHigh, long holderLow, boolean ptpl, List<Registrant> registrants) {
        return new ReservationState(version + 1, generation, type, holderHigh, holderLow, ptpl, registrants);
    }

    /**
     * Reservation Register. {@code persistable}: the server can keep PTPL (else CPTPL 3 is an
     * invalid field).
     */
    public Outcome register(long high, long low, int action, boolean ignoreKey, int cptpl, long currentKey, long newKey, boolean persistable) {
        if (cptpl == 1 || (cptpl == CPTPL_SET && !persistable)) return refuse(Status.INVALID_FIELD | Status.DNR);
        boolean ptplAfter = cptpl == CPTPL_SET || (cptpl != CPTPL_CLEAR && ptpl);
        Registrant me = registrant(high, low);
        List<Registrant> regs = new ArrayList<>(registrants);
        switch (action) {
            case REGISTER -> {
                if (me != null) return me.key() == newKey ? same() : conflict(this);
                regs.add(new Registrant(high, low, newKey));
                return new Outcome(Status.SUCCESS, with(generation + 1, type, holderHigh, holderLow, ptplAfter, regs), List.of());
            }
            case UNREGISTER -> {
                if (me == null || (!ignoreKey && me.key() != currentKey)) return conflict(this);
                regs.remove(me);
                List<Notice> notices = new ArrayList<>();
                int t = type;
                long hh = holderHigh, hl = holderLow;
                if (holds(high, low)) {
                    if (allRegistrants(type) && !regs.isEmpty()) {
                        hh = regs.getFirst().hostHigh();
                        hl = regs.getFirst().hostLow();
                    } else {
                        if (type == WRITE_EXCLUSIVE_REGISTRANTS_ONLY || type == EXCLUSIVE_ACCESS_REGISTRANTS_ONLY) {
                            for (Registrant r : regs) notices.add(new Notice(r.hostHigh(), r.hostLow(), NOTICE_RESERVATION_RELEASED));
                        }
                        t = NONE;
                    }
                }
                return new Outcome(Status.SUCCESS, with(generation + 1, t, hh, hl, ptplAfter, regs), notices);
            }
            case REPLACE -> {
                if (me == null || (!ignoreKey && me.key() != currentKey)) return conflict(this);
                regs.set(regs.indexOf(me), new Registrant(high, low, newKey));
                return new Outcome(Status.SUCCESS, with(generation + 1, type, holderHigh, holderLow, ptplAfter, regs), List.of());
            }
            default -> {
                return refuse(Status.INVALID_OPCODE | Status.DNR);
            }
        }
    }

    /** Reservation Acquire: acquire, preempt, preempt-and-abort (the same change; the caller waits for the preempted hosts' commands). */
    public Outcome acquire(long high, long low, int action, boolean ignoreKey, int rtype, long currentKey, long preemptKey) {
        if (ignoreKey || rtype < WRITE_EXCLUSIVE || rtype > EXCLUSIVE_ACCESS_ALL_REGISTRANTS) return refuse(Status.INVALID_FIELD | Status.DNR);
        Registrant me = registrant(high, low);
        if (me == null || me.key() != currentKey) return conflict(this);
        return switch (action) {
            case ACQUIRE -> {
                if (type == NONE) yield new Outcome(Status.SUCCESS, with(generation, rtype, high, low, ptpl, registrants), List.of());
                yield holds(high, low) && type == rtype ? same() : conflict(this);
            }
            case PREEMPT, PREEMPT_AND_ABORT -> preempt(me, rtype, preemptKey);
            default -> refuse(Status.INVALID_FIELD | Status.DNR);
        };
    }

    /** The five cases of nvmet's preempt (reference B.4), in its order. */
    private Outcome preempt(Registrant me, int rtype, long preemptKey) {
        if (type == NONE) return unregisterKey(me, preemptKey, NONE, 0, 0);
        if (allRegistrants(type)) {
            if (preemptKey != 0) return unregisterKey(me, preemptKey, type, holderHigh, holderLow);
            List<Notice> notices = new ArrayList<>();
            for (Registrant r : registrants) if (r != me) notices.add(new Notice(r.hostHigh(), r.hostLow(), NOTICE_REGISTRATION_PREEMPTED));
            return new Outcome(Status.SUCCESS, with(generation + 1, rtype, me.hostHigh(), me.hostLow(), ptpl, List.of(me)), notices);
        }
        if (holds(me.hostHigh(), me.hostLow())) {
            List<Notice> notices = new ArrayList<>();
            if (rtype != type) for (Registrant r : registrants) if (r != me) notices.add(new Notice(r.hostHigh(), r.hostLow(), NOTICE_RESERVATION_RELEASED));
            return new Outcome(Status.SUCCESS, with(generation + 1, rtype, me.hostHigh(), me.hostLow(), ptpl, registrants), notices);
        }
        Registrant holder = registrant(holderHigh, holderLow);
        if (holder != null && holder.key() == preemptKey) {
            List<Registrant> regs = new ArrayList<>();
            List<Notice> notices = new ArrayList<>();
            for (Registrant r : registrants) {
                if (r != me && r.key() == preemptKey) notices.add(new Notice(r.hostHigh(), r.hostLow(), NOTICE_REGISTRATION_PREEMPTED));
                else regs.add(r);
            }
            if (rtype != type) {
                for (Registrant r : regs) if (r != me) notices.add(new Notice(r.hostHigh(), r.hostLow(), NOTICE_RESERVATION_RELEASED));
            }
            return new Outcome(Status.SUCCESS, with(generation + 1, rtype, me.hostHigh(), me.hostLow(), ptpl, regs), notices);
        }
        if (preemptKey == 0) return refuse(Status.INVALID_FIELD | Status.DNR);
        return unregisterKey(me, preemptKey, type, holderHigh, holderLow);
    }

    /** Unregisters every registrant but {@code me} whose key is {@code key}; a conflict when there is none. */
    private Outcome unregisterKey(Registrant me, long key, int typeAfter, long holderHighAfter, long holderLowAfter) {
        List<Registrant> regs = new ArrayList<>();
        List<Notice> notices = new ArrayList<>();
        for (Registrant r : registrants) {
            if (r != me && r.key() == key) notices.add(new Notice(r.hostHigh(), r.hostLow(), NOTICE_REGISTRATION_PREEMPTED));
            else regs.add(r);
        }
        if (notices.isEmpty()) return conflict(this);
        return new Outcome(Status.SUCCESS, with(generation + 1, typeAfter, holderHighAfter, holderLowAfter, ptpl, regs), notices);
    }

    /** Reservation Release: release, clear. */
    public Outcome release(long high, long low, int action, boolean ignoreKey, int rtype, long currentKey) {
        if (ignoreKey) return refuse(Status.INVALID_FIELD | Status.DNR);
        Registrant me = registrant(high, low);
        if (me == null || me.key() != currentKey) return conflict(this);
        switch (action) {
            case RELEASE -> {
                if (!holds(high, low)) return same();
                if (rtype != type) return conflict(this);
                List<Notice> notices = new ArrayList<>();
                if (type >= WRITE_EXCLUSIVE_REGISTRANTS_ONLY) {
                    for (Registrant r : registrants) if (r != me) notices.add(new Notice(r.hostHigh(), r.hostLow(), NOTICE_RESERVATION_RELEASED));
                }
                return new Outcome(Status.SUCCESS, with(generation, NONE, 0, 0, ptpl, registrants), notices);
            }
            case CLEAR -> {
                List<Notice> notices = new ArrayList<>();
                for (Registrant r : registrants) if (r != me) notices.add(new Notice(r.hostHigh(), r.hostLow(), NOTICE_RESERVATION_PREEMPTED));
                return new Outcome(Status.SUCCESS, with(generation + 1, NONE, 0, 0, ptpl, List.of()), notices);
            }
            default -> {
                return refuse(Status.INVALID_FIELD | Status.DNR);
            }
        }
    }

    /** Set Features Reservation Persistence (0x83). */
    public Outcome persist(boolean on) {
        if (on == ptpl) return same();
        return new Outcome(Status.SUCCESS, with(generation, type, holderHigh, holderLow, on, registrants), List.of());
    }

    // ---------------------------------------------------------------- the stored form

    /**
     * One line: {@code version generation type holder ptpl} then one {@code host:key} per
     * registrant, space-separated, hosts as 32 hex digits and keys as 16. What the stores keep.
     */
    public String encode() {
        HexFormat hex = HexFormat.of();
        StringBuilder sb = new StringBuilder().append(version).append(' ').append(generation).append(' ').append(type).append(' ')
                .append(hex.toHexDigits(holderHigh)).append(hex.toHexDigits(holderLow)).append(' ').append(ptpl ? 1 : 0);
        for (Registrant r : registrants) {
            sb.append(' ').append(hex.toHexDigits(r.hostHigh())).append(hex.toHexDigits(r.hostLow())).append(':').append(hex.toHexDigits(r.key()));
        }
        return sb.toString();
    }

    /** The state {@link #encode} wrote; IllegalArgumentException for anything else. */
    public static ReservationState decode(String text) {
        String[] f = text.strip().split(" ");
        if (f.length < 5 || f[3].length() != 32) throw new IllegalArgumentException("not a reservation state: " + text);
        List<Registrant> regs = new ArrayList<>();
        for (int i = 5; i < f.length; i++) {
            String[] r = f[i].split(":");
            if (r.length != 2 || r[0].length() != 32 || r[1].length() != 16) throw new IllegalArgumentException("not a registrant: " + f[i]);
            regs.add(new Registrant(HexFormat.fromHexDigitsToLong(r[0], 0, 16), HexFormat.fromHexDigitsToLong(r[0], 16, 32),
                                    HexFormat.fromHexDigitsToLong(r[1])));
        }
        int type = Integer.parseInt(f[2]);
        if (type < NONE || type > EXCLUSIVE_ACCESS_ALL_REGISTRANTS) throw new IllegalArgumentException("reservation type " + type);
        return new ReservationState(Long.parseLong(f[0]), Integer.parseInt(f[1]), type, HexFormat.fromHexDigitsToLong(f[3], 0, 16),
                                    HexFormat.fromHexDigitsToLong(f[3], 16, 32), f[4].equals("1"), regs);
    }
}
