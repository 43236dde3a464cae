package io.iotarget.frontend.nvmetcp;

/** {@code hosts/<hostnqn>}: a host NQN that subsystems may allow. Guarded by the target's configuration lock. */
final class Host {
    final String nqn;

    Host(String nqn) {
        this.nqn = nqn;
    }
}
