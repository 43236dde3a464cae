package io.iotarget.backend;

import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

/**
 * Where a {@linkplain Backend#blocking() blocking} backend's requests run without holding the
 * submitting thread: what {@link Backend#start} is handed. The engine's one implementation is
 * {@code backend.file.IoEngine} (io_uring and a pool of IO threads); a backend with
 * a way of its own (the file backend's ring) asks for it there, every other kind uses
 * {@link #startOnThreads}. Declared here so that {@code Backend} needs no kind of backend.
 *
 * <p>Any thread.
 */
public interface IoExecutor {
    /**
     * Queues {@code io} to run on {@code backend} ({@link RequestRunner#run}) on one of the IO
     * threads; null when under way ({@code done} then hears its end once, on an IO thread), or
     * {@link IoStatus#ABORTED} (and {@code done} is never called) when the executor is closed.
     */
    IoStatus startOnThreads(Backend backend, IoRequest io, Completion done);
}
