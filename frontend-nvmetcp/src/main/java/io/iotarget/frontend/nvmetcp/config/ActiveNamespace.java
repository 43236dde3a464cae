package io.iotarget.frontend.nvmetcp.config;

import io.iotarget.buffer.BufferAccount;
import io.iotarget.frontend.nvmetcp.reservation.NamespaceReservation;
import io.iotarget.model.Device;
import io.iotarget.model.IoGroup;

/**
 * An enabled namespace as the IO path sees it: immutable but for the count of its commands in
 * flight, published by the configuration thread in a {@link NamespaceTable}. Any thread.
 *
 * @param nsid     namespace id, 1..0xFFFFFFFE
 * @param device   the engine device its IO goes to
 * @param group    who pays for its IO: the bound group, or the root when unbound
 * @param bound    it has a group of its own ({@code cgroup}); unbound, a host's group
 *                 ({@code hosts/NQN/cgroup}) pays before the root (DESIGN's association order)
 * @param perHost  {@code cgroup_per_host}: each host's IO goes to the child named after its NQN
 *                 of whichever group would pay ({@code Controller#payer})
 * @param readOnly writes are refused with Namespace Is Write Protected
 * @param lbaShift log2 of the LBA size (9 or 12)
 * @param blocks   NSZE: the device size in LBAs
 * @param uuid     16 bytes (NS descriptor type 3)
 * @param nguid    16 bytes, all zero when not set
 * @param inFlight its IO commands on the engine, drained when it is disabled
 * @param buffers  its group's share of the buffer pool, where its commands' data buffers come from
 * @param sharesReads its backend hands every read over as views (memory, null): a READ that
 *                 offers views needs no buffer of its own
 * @param anaGroup its ANA group id (1..128): the port's state for it decides whether IO is served
 * @param reservation its persistent reservation with {@code resv_enable}, else null
 */
public record ActiveNamespace(int nsid, Device device, IoGroup group, boolean bound, boolean perHost, boolean readOnly, int lbaShift, long blocks,
                       byte[] uuid, byte[] nguid, InFlightCommands inFlight,
                       BufferAccount buffers, boolean sharesReads, int anaGroup, NamespaceReservation reservation) {
    /** The same namespace in another ANA group (ana_grpid is writable while enabled, as in nvmet). */
    ActiveNamespace inAnaGroup(int grpid) {
        return new ActiveNamespace(nsid, device, group, bound, perHost, readOnly, lbaShift, blocks, uuid, nguid, inFlight, buffers, sharesReads, grpid,
                                   reservation);
    }

    /** The same namespace on a device of {@code blocks} LBAs now (revalidate_size). */
    ActiveNamespace withBlocks(long blocks) {
        return new ActiveNamespace(nsid, device, group, bound, perHost, readOnly, lbaShift, blocks, uuid, nguid, inFlight, buffers, sharesReads, anaGroup,
                                   reservation);
    }

    /** True when [slba, slba + count) lies in the namespace (overflow-safe; count &gt; 0). */
    public boolean contains(long slba, long count) {
        return slba >= 0 && Long.compareUnsigned(slba, blocks) < 0 && count <= blocks - slba;
    }
}
