package io.iotarget.frontend.nbd;

import io.iotarget.model.CounterDescriptor;

/** The NBD server's counters, read with {@link NbdServer#counters()}. */
public enum NbdCounter implements CounterDescriptor {
    CONNECTIONS("connections", Kind.GAUGE, "connections open now, negotiating or transmitting"),
    PROTOCOL_ERRORS("protocol_errors", Kind.COUNTER, "connections closed because the client broke the framing (a bad option or request magic)"),
    HANDSHAKE_TIMEOUTS("handshake_timeouts", Kind.COUNTER, "connections cut for not finishing negotiation within the handshake limit"),
    ABORTED("aborted", Kind.COUNTER, "requests dropped unanswered because their client went away while io.max or iocost held them"),
    UNEXPECTED_ERRORS("unexpected_errors", Kind.COUNTER, "connections that ended because of an unexpected failure (a bug, or no memory)");

    private final String label;
    private final Kind kind;
    private final String doc;

    NbdCounter(String label, Kind kind, String doc) {
        this.label = label;
        this.kind = kind;
        this.doc = doc;
    }

    @Override
    public String label() {
        return label;
    }

    @Override
    public Kind kind() {
        return kind;
    }

    @Override
    public String doc() {
        return doc;
    }
}
