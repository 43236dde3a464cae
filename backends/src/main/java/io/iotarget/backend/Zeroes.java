package io.iotarget.backend;

import java.nio.ByteBuffer;

/** Zero-filling of buffer ranges without allocating, for every kind of backend. Any thread. */
public final class Zeroes {
    /** Read-only source of zeroes for bulk puts. */
    private static final ByteBuffer ZERO = ByteBuffer.allocateDirect(64 * 1024).asReadOnlyBuffer();

    private Zeroes() {
    }

    /** Writes {@code length} zero bytes into {@code dst} at absolute index {@code index}. */
    public static void fill(ByteBuffer dst, int index, int length) {
        while (length > 0) {
            int n = Math.min(length, ZERO.capacity());
            dst.put(index, ZERO, 0, n);
            index += n;
            length -= n;
        }
    }

    /** A read-only buffer of {@code length} (at most 64 KiB) zeroes, for writing zeroes to files. */
    public static ByteBuffer slice(int length) {
        return ZERO.slice(0, length);
    }

    /** The longest {@link #slice}. */
    public static int maxSlice() {
        return ZERO.capacity();
    }
}
