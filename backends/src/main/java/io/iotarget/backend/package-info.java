/**
 * Where bytes finally live. A {@link io.iotarget.backend.Backend} is a positional,
 * thread-safe store with no notion of groups or requests; the dispatch layer turns
 * admitted requests into calls on it.
 *
 * <ul>
 *   <li>{@link io.iotarget.backend.NullBackend}: discards writes, reads zeroes; measures everything but storage, like null_blk.
 *   <li>{@link io.iotarget.backend.MemoryBackend}: sparse, off-heap, chunks allocated on first write.
 *   <li>{@link io.iotarget.backend.FileBackend}: a regular file or a block device, optionally
 *       O_DIRECT, on io_uring or IO threads; discard and write-zeroes through fallocate(2);
 *       zero-copy regions of the page cache for buffered reads.
 *   <li>{@link io.iotarget.backend.PacedBackend}: any of these behind a fixed IOPS and bandwidth, a
 *       device of known capacity for measurements that must not depend on the machine.
 * </ul>
 *
 * The control plane and the front ends make backends only through
 * {@link io.iotarget.backend.BackendFactory}, from a description of what they want.
 * Blocking backends run on an {@link io.iotarget.backend.IoEngine}: one io_uring per engine
 * ({@code IoRing}, its slots {@code RingSlot}) or a bounded pool of IO threads
 * ({@code IoThreads}). {@link io.iotarget.backend.BackendErrors} turns the errno of a failure
 * into the request's status.
 */
package io.iotarget.backend;
