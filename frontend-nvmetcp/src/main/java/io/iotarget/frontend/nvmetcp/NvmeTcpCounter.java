package io.iotarget.frontend.nvmetcp;

import io.iotarget.model.CounterDescriptor;

import static io.iotarget.model.CounterDescriptor.Description.counter;

/** The NVMe/TCP target's counters, read with {@link NvmeTarget#counters()}. */
public enum NvmeTcpCounter implements CounterDescriptor {
    PROTOCOL_ERRORS(counter("protocol_errors", "connections the target ended with a C2HTermReq: the host broke PDU framing, sequence or limits")),
    DIGEST_ERRORS(counter("digest_errors", "PDUs whose data digest was wrong: their controller failed (CSTS.CFS) or the queue closed")),
    HOST_TERMINATIONS(counter("host_terminations", "connections the host ended with an H2CTermReq")),
    ABORTED(counter("aborted", "requests dropped unanswered because their connection closed (held by io.max or iocost, or waiting for data)")),
    BUFFER_REFUSALS(counter("buffer_refusals", "commands failed with Internal Error because no data buffer could be allocated")),
    KEEP_ALIVE_EXPIRED(counter("keep_alive_expired", "controllers failed because their host sent nothing for KATO")),
    AUTHENTICATION_FAILURES(counter("authentication_failures", "queues closed because their DH-HMAC-CHAP exchange failed or missed its deadline")),
    HOST_GROUP_REFUSED(counter("host_group_refused", "IO commands failed with Internal Error because cgroup_per_host could not make or find their host's group")),
    SHRUNK_FILE_READS(counter("shrunk_file_reads", "READs of a file backend that shrank beneath them between the read and its response: failed with Internal Error (logged, at most 5 lines a second), or, once the data had begun, their queue ended")),
    HOST_ID_CONFLICTS(counter("host_id_conflicts", "admin Connects refused (Connect Invalid Host) because their Host ID is bound to another host NQN in the subsystem")),
    UNEXPECTED_ERRORS(counter("unexpected_errors", "failures the timer thread (keep-alive, authentication deadlines) and the DH-HMAC-CHAP threads survived"));

    private final Description description;

    NvmeTcpCounter(Description description) {
        this.description = description;
    }

    @Override
    public Description description() {
        return description;
    }
}
