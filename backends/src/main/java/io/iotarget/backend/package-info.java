/**
 * Where bytes finally live. A {@link io.iotarget.backend.Backend} is a positional,
 * thread-safe store with no notion of groups or requests; the dispatch layer turns
 * admitted requests into calls on it.
 *
 * <h2>1. Kinds, one package each</h2>
 * Arrows point down only: {@code backend} knows no kind, each kind knows {@code backend},
 * and {@code factory} alone knows every kind.
 * <pre>
 *   backend            Backend, Completion, IoExecutor (where blocking backends run), RequestRunner
 *                      (a request as synchronous calls), errors, PacedBackend (any kind, paced)
 *   ├── nullblk        NullBackend: discards writes, reads zeroes; everything but storage, like null_blk;
 *   │                  TimedNullBackend: null_blk's completion_nsec and mbps, a device of known capacity
 *   ├── memory         MemoryBackend: sparse, off-heap, chunks allocated on first write
 *   └── file           FileBackend: a regular file or a block device, optionally O_DIRECT,
 *                      and the IoEngine blocking backends run on: io_uring (IoRing, RingSlot)
 *                      or a bounded pool of IO threads (IoThreads)
 *   └── factory        BackendFactory: any kind from a description (Spec)
 * </pre>
 * The null and memory backends answer on the calling thread; only a
 * {@linkplain io.iotarget.backend.Backend#blocking() blocking} backend (the file, the timed
 * null) needs the {@link io.iotarget.backend.IoExecutor} it is handed, the engine's
 * {@code file.IoEngine}.
 *
 * <h2>2. Making one</h2> The control plane and the front ends make backends only through
 * {@code factory.BackendFactory}, from a description of what they want.
 * {@link io.iotarget.backend.PacedBackend} puts any of them behind a fixed IOPS and bandwidth,
 * a device of known capacity for measurements that must not depend on the machine.
 *
 * <h2>3. Errors</h2> {@link io.iotarget.backend.BackendErrors} turns the errno of a failure
 * ({@link io.iotarget.backend.ErrnoException}) into the request's status.
 */
package io.iotarget.backend;
