package io.iotarget.iocontrol.policy;

import io.iotarget.model.IoRequest;

/** Takes a request a policy had parked and carries it on down the chain. Under the device lock. */
@FunctionalInterface
public interface Resumer {
    void resume(IoRequest io);
}
