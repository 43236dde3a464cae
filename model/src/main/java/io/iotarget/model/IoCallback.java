package io.iotarget.model;

/** Receives a finished request; {@link IoRequest#status} tells how it ended. */
@FunctionalInterface
public interface IoCallback {
    /**
     * Called once per submission, on whichever thread finished the request (the submitter's
     * own thread when nothing delayed it). Must not block.
     */
    void complete(IoRequest io);

    /**
     * A {@linkplain IoRequest#dataLater() data-later} request passed the policies: fetch its
     * data, then dispatch it. Any thread (the submitter's, or the releaser's when a policy
     * held it); must not block.
     */
    default void admitted(IoRequest io) {
        throw new IllegalStateException("a data-later request needs a callback that handles admission: " + io);
    }
}
