package io.iotarget.frontend.nvmetcp;

import io.iotarget.model.CounterDescriptor;

/** The NVMe/TCP target's counters, read with {@link NvmeTarget#counters()}. */
public enum NvmeTcpCounter implements CounterDescriptor {
    PROTOCOL_ERRORS("protocol_errors", Kind.COUNTER, "connections the target ended with a C2HTermReq: the host broke PDU framing, sequence or limits"),
    DIGEST_ERRORS("digest_errors", Kind.COUNTER, "PDUs whose data digest was wrong: their controller failed (CSTS.CFS) or the queue closed"),
    HOST_TERMINATIONS("host_terminations", Kind.COUNTER, "connections the host ended with an H2CTermReq"),
    ABORTED("aborted", Kind.COUNTER, "requests dropped unanswered because their connection closed (held by io.max or iocost, or waiting for data)"),
    BUFFER_REFUSALS("buffer_refusals", Kind.COUNTER, "commands failed with Internal Error because no data buffer could be allocated"),
    KEEP_ALIVE_EXPIRED("keep_alive_expired", Kind.COUNTER, "controllers failed because their host sent nothing for KATO"),
    AUTHENTICATION_FAILURES("authentication_failures", Kind.COUNTER, "queues closed because their DH-HMAC-CHAP exchange failed or missed its deadline"),
    UNEXPECTED_ERRORS("unexpected_errors", Kind.COUNTER, "failures the timer thread (keep-alive, authentication deadlines) and the DH-HMAC-CHAP threads survived");

    private final String label;
    private final Kind kind;
    private final String doc;

    NvmeTcpCounter(String label, Kind kind, String doc) {
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
