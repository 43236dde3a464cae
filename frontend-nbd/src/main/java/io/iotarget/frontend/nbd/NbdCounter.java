package io.iotarget.frontend.nbd;

import io.iotarget.model.CounterDescriptor;

import static io.iotarget.model.CounterDescriptor.Description.counter;
import static io.iotarget.model.CounterDescriptor.Description.gauge;

/** The NBD server's counters, read with {@link NbdServer#counters()}. */
public enum NbdCounter implements CounterDescriptor {
    CONNECTIONS(gauge("connections", "connections open now, negotiating or transmitting")),
    PROTOCOL_ERRORS(counter("protocol_errors", "connections closed because the client broke the framing (a bad option or request magic)")),
    HANDSHAKE_TIMEOUTS(counter("handshake_timeouts", "connections cut for not finishing negotiation within the handshake limit")),
    ABORTED(counter("aborted", "requests dropped unanswered because their client went away while io.max or iocost held them")),
    HOST_GROUP_REFUSED(counter("host_group_refused", "connections ended because cgroup_per_host could not make or find their host's group")),
    TLS_FAILURES(counter("tls_failures", "TLS sessions that failed, logged with why (at most 5 lines a second, the rest counted in the log): a client certificate the CA file does not vouch for, a client's alert (OpenSSL's when it does not trust the server's chain), a renegotiation")),
    SHRUNK_FILE_READS(counter("shrunk_file_reads", "READs of a file backend that shrank beneath them between the read and its reply: answered EIO (logged, at most 5 lines a second), or, once the reply had begun, their connection ended")),
    UNEXPECTED_ERRORS(counter("unexpected_errors", "connections that ended because of an unexpected failure (a bug, or no memory)"));

    private final Description description;

    NbdCounter(Description description) {
        this.description = description;
    }

    @Override
    public Description description() {
        return description;
    }
}
