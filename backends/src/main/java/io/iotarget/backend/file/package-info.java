/**
 * The file backend and the IO engine that blocking backends run on (the
 * {@link io.iotarget.backend.IoExecutor} every blocking backend is handed).
 *
 * <h2>1. The file</h2> {@link io.iotarget.backend.file.FileBackend}: a regular file or a block
 * device on one raw descriptor, optionally O_DIRECT; cached reads served on the submitting
 * thread (RWF_NOWAIT), the rest handed to the engine; discard and write-zeroes through
 * fallocate(2); zero-copy regions of the page cache for buffered reads. The system calls are
 * made through the foreign-function API ({@code LinuxCalls}).
 *
 * <h2>2. The engine</h2> {@link io.iotarget.backend.file.IoEngine}, one per engine:
 * <pre>
 *   io_uring  IoRing: one ring, its slots (RingSlot) with their bounce buffers, a completion
 *             thread; submissions gathered per thread by a plug, as blk_start_plug does
 *   threads   IoThreads: a bounded pool doing positional calls (RequestRunner), requests
 *             beyond it waiting in FIFO order (RequestFifo); beside a ring too, for what the
 *             ring does not carry (verify, compare, prefetch)
 * </pre>
 * io_uring lives here with the file because its slots issue the file's own operations on the
 * file's descriptor and share its system-call layer; no other backend blocks.
 *
 * <h2>3. Watch</h2> requests waiting for a ring slot or a pool thread (they queue in FIFO order,
 * never fail for lack of one), and io_uring being unavailable (kernel.io_uring_disabled,
 * seccomp): AUTO then logs once and runs on the threads.
 */
package io.iotarget.backend.file;
