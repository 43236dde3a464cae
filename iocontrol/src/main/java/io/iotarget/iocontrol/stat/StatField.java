package io.iotarget.iocontrol.stat;

/**
 * The io.stat counters, in the order the kernel prints them. Bytes are counted once per
 * request and IOs once per request (iotarget does not split requests).
 */
public enum StatField {
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
    public String label() {
        return label;
    }

    public String doc() {
        return doc;
    }
}
