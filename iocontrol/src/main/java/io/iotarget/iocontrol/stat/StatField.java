package io.iotarget.iocontrol.stat;

import io.iotarget.model.CounterDescriptor;

import static io.iotarget.model.CounterDescriptor.Description.counter;

/**
 * The io.stat counters, in the order the kernel prints them; io.stat prints each as
 * {@code label=value}. Bytes are counted once per request and IOs once per request (iotarget
 * does not split requests).
 */
public enum StatField implements CounterDescriptor {
    RBYTES(counter("rbytes", "bytes read (reads, cache/prefetch, verify, compare, passthrough-in)")),
    WBYTES(counter("wbytes", "bytes written (writes, write-zeroes, passthrough-out); flushes add 0")),
    RIOS(counter("rios", "read requests")),
    WIOS(counter("wios", "write requests, flushes included")),
    DBYTES(counter("dbytes", "bytes discarded")),
    DIOS(counter("dios", "discard requests"));

    private final Description description;

    StatField(Description description) {
        this.description = description;
    }

    @Override
    public Description description() {
        return description;
    }
}
