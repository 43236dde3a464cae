package io.iotarget.model;

/**
 * A check a request must pass again at the last step before its device: the engine evaluates
 * it where every request goes just before the device's dispatch queue — straight after
 * admission, after io.max, iocost or io.latency released it, after a data-later write's data
 * arrived — so a request checked by its front end and then held for a while is checked once
 * more when it goes on (NVMe reservations: a host preempted meanwhile is refused there).
 *
 * <p>The creator sets it once ({@link IoRequest#gate(IoGate)}); it is usually one long-lived
 * object per connection slot or namespace, so the IO path allocates nothing. Both methods run
 * on whichever thread moves the request (a front end's loop, a policy's releaser, an IO
 * thread): no blocking, no allocation, no lock.
 */
public interface IoGate {
    /**
     * Whether {@code io} may go on to its device: {@link IoStatus#OK}, after which the gate
     * counts it as in the backend until {@link #leave}; any other status ends the request with
     * that status, never having reached the backend, and {@link #leave} is not called.
     * The gate may note what it needs in {@link IoRequest#gateTicket(int)}.
     */
    IoStatus enter(IoRequest io);

    /** The backend is done with a request this gate let in (exactly once per {@link #enter} that returned OK). */
    void leave(IoRequest io);
}
