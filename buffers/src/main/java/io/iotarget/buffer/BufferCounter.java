package io.iotarget.buffer;

/** What a {@link BufferPool} counts, for metrics; none of them is touched on the fast path. */
public enum BufferCounter {
    MAPS("maps", "memory mappings made (a miss with no mapped, unused slot of its class)"),
    MAP_FAILURES("map_failures", "mmap calls the kernel refused (a capacity above what the machine can map); the take waited"),
    UNMAPS("unmaps", "memory mappings given back to the kernel"),
    CLEARS("clears", "free buffers whose pages were dropped (MADV_DONTNEED) to make room or after idling"),
    WAITS("waits", "takes queued because the account's share or the pool's capacity had no room"),
    WAITER_FAILURES("waiter_failures", "BufferWaiter.available calls that threw");

    private final String label;
    private final String doc;

    BufferCounter(String label, String doc) {
        this.label = label;
        this.doc = doc;
    }

    public String label() {
        return label;
    }

    public String doc() {
        return doc;
    }
}
