package io.iotarget.model;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Receives a read's bytes as read-only buffers that the backend shares instead of copying
 * them into the request's own buffer (a zero-copy read). The buffers arrive in order and
 * together hold exactly the requested range; they stay valid as long as the receiver keeps
 * them, and — like a disk read racing a write to the same blocks — may show a write that
 * lands before they are consumed.
 */
@FunctionalInterface
public interface ViewSink {
    void view(ByteBuffer bytes);

    /**
     * Offers the whole read as a range of a file instead of bytes: a receiver that accepts
     * sends {@code [position, position + length)} of {@code channel} itself later, with
     * {@link FileChannel#transferTo} (sendfile(2)), and the request completes without
     * touching its buffer. A backend offers this only for a range that was wholly in the page
     * cache when it looked, so that sending does not wait for the disk; pages evicted in
     * between are read again by the kernel, and a write landing before the send shows, as
     * with {@link #view}. The channel belongs to the backend: the receiver must not close it,
     * and must have sent the range before the device is removed.
     *
     * @return true when the receiver took the range; false (the default) and the backend
     *         reads into the request's buffer as usual
     */
    default boolean region(FileChannel channel, long position, long length) {
        return false;
    }
}
