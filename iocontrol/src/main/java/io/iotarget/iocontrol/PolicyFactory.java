package io.iotarget.iocontrol;

import io.iotarget.iocontrol.policy.IoPolicy;

/** Builds a policy for its place in the chain; {@code index} addresses its per-group state. */
@FunctionalInterface
public interface PolicyFactory {
    IoPolicy create(IoController controller, int index);
}
