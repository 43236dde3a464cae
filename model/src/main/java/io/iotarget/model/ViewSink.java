package io.iotarget.model;

import java.nio.ByteBuffer;

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
}
