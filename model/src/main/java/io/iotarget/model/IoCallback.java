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

    /**
     * The request's group owes an issuer delay (io.latency's or iocost's: the kernel's blkcg
     * delay, which the issuing task sleeps on its way back to user space): the tenant's queue
     * that issued it (an NBD connection, an NVMe/TCP IO queue) should take no new command for
     * {@code delayNs}. Called on the completing thread just before {@link #complete}; must not
     * block.
     *
     * @return true when the issuer pauses itself, so its reply may go out at once; false (the
     *         default, for issuers that cannot pause) makes the engine hold the completion for
     *         the delay instead
     */
    default boolean delayIssuer(IoRequest io, long delayNs) {
        return false;
    }
}
