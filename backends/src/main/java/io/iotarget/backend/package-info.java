/**
 * Where bytes finally live. A {@link io.iotarget.backend.Backend} is a positional,
 * thread-safe store with no notion of groups or requests; the dispatch layer turns
 * admitted requests into calls on it.
 *
 * <ul>
 *   <li>{@link io.iotarget.backend.NullBackend}: discards writes, reads zeroes; measures everything but storage, like null_blk.
 *   <li>{@link io.iotarget.backend.MemoryBackend}: sparse, off-heap, chunks allocated on first write.
 *   <li>{@link io.iotarget.backend.FileBackend}: a regular file or a block device, positional IO,
 *       optionally O_DIRECT; discard and write-zeroes through fallocate(2).
 *   <li>{@link io.iotarget.backend.PacedBackend}: any of these behind a fixed IOPS and bandwidth, a
 *       device of known capacity for measurements that must not depend on the machine.
 * </ul>
 */
package io.iotarget.backend;
