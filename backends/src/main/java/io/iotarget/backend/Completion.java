package io.iotarget.backend;

import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.io.IOException;

/**
 * Hears how a request started with {@link Backend#start} ended: exactly one of the two calls,
 * once, on an IO thread (an io_uring completion thread or an IO pool thread), never inside
 * {@code start} itself. Must not block.
 */
public interface Completion {
    /** The request ended with {@code status}: {@link IoStatus#OK}, or an answer such as NOT_FAST or COMPARE_FAILED. */
    void completed(IoRequest io, IoStatus status);

    /** The request failed; {@link BackendErrors#errno} of {@code cause} says how. */
    void failed(IoRequest io, IOException cause);
}
