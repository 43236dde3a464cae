package io.iotarget.iocontrol.stat;

import io.iotarget.model.CounterDescriptor;

/**
 * The io.stat counters, in the order the kernel prints them; io.stat prints each as
 * {@code label=value}. Bytes are counted once per request and IOs once per request (iotarget
 * does not split requests).
 */
public enum StatField implements CounterDescriptor {
    RBYTES("rbytes", "bytes read (reads, cache/prefetch, verify, compare, passthrough-in)"),
    WBYTES("wbytes", "bytes written (writes, write-zeroes, passthrough-out); flushes add 0"),
    RIOS("rios", "read requests"),
    WIOS("wios", "write requests, flushes included"),
    DBYTES("dbytes", "bytes discarded"),
    DIOS("dios", "discard requests");

    private final String label;
    private final String doc;

    StatField(String label, String doc) {
        this.label = label;
        this.doc = doc;
    }

    /** The io.stat key. */
    @Override
    public String label() {
        return label;
    }

    @Override
    public String doc() {
        return doc;
    }

    @Override
    public Kind kind() {
        return Kind.COUNTER;
    }
}
