package io.iotarget.iocontrol.policy.throttle;

import io.iotarget.model.IoRequest;

import java.util.ArrayDeque;

/**
 * The requests one source (a child group, or the group itself) has waiting in one group's
 * queue for one direction: the kernel's {@code throtl_qnode}. A group pops its queued qnodes
 * round-robin. Device lock.
 */
final class Qnode {
    final ArrayDeque<IoRequest> requests = new ArrayDeque<>();
    /** On some group's queue list. */
    boolean linked;
}
