package io.iotarget.iocontrol.chain;

/**
 * How the controller, which has no threads and no clock, asks its owner to call
 * {@link PolicyChain#releaseDue} again. Implementations must be cheap and must not call back
 * into the controller.
 */
@FunctionalInterface
public interface ReleaseSignal {
    /** Call {@code releaseDue} no later than {@code whenNs} (engine clock); {@link Long#MIN_VALUE} means now. */
    void releaseBy(long whenNs);

    ReleaseSignal NONE = whenNs -> {
    };
}
