package io.iotarget.iocontrol;

import io.iotarget.iocontrol.policy.IoPolicy;
import io.iotarget.iocontrol.policy.host.PolicyHost;

/** Builds a policy for its place in the chain; {@code index} addresses its per-group state. */
@FunctionalInterface
public interface PolicyFactory {
    IoPolicy create(PolicyHost host, int index);
}
