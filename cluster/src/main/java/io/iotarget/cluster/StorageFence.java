package io.iotarget.cluster;

import java.io.IOException;

/**
 * Makes the shared storage itself refuse a node's IO (Ceph's {@code osd blocklist}): what closes
 * the window a {@link Fence} leaves — a node that passed its own check and then paused (GC,
 * SIGSTOP, a VM freeze) longer than its lease before its request reached the storage. Called by a
 * node that takes over from another whose lease ended, before it acts on that (serves the other's
 * ANA groups, answers a reservation change the other never acknowledged).
 *
 * <p>Any thread; may wait for the storage's answer.
 */
@FunctionalInterface
public interface StorageFence {
    /** For storage that cannot fence (files, block devices): the lease alone, and the window stays (docs/reservations.md). */
    StorageFence NONE = node -> { };

    /**
     * Returns once nothing {@code node} sent and nothing it will send can reach the storage.
     *
     * @throws IOException when that cannot be made sure of: the caller must not act as if the node were fenced
     */
    void fence(String node) throws IOException;
}
