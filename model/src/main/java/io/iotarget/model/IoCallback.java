package io.iotarget.model;

/** Receives a finished request; {@link IoRequest#status} tells how it ended. */
@FunctionalInterface
public interface IoCallback {
    /**
     * Called once per submission, on whichever thread finished the request (the submitter's
     * own thread when nothing delayed it). Must not block.
     */
    void complete(IoRequest io);
}
