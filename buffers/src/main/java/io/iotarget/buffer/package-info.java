/**
 * The data-buffer pool: every buffer that carries a command's data comes from one
 * {@link io.iotarget.buffer.BufferPool}, bounded for the whole server and per tenant, so that
 * no tenant can grow the server until the machine runs out of memory, nor take the memory
 * the others need. A tenant whose share is used up is not refused: its takes wait, and its
 * connections stop reading commands (TCP backpressure) until its own buffers come back.
 *
 * <h2>1. Size classes and mappings</h2>
 * A request of {@code n} bytes gets a buffer of the next power of two, from 4 KiB (one page:
 * every buffer is O_DIRECT-aligned) to 1 GiB. The memory is private anonymous memory the pool
 * maps itself (mmap through FFM), not the Java heap and not {@code -XX:MaxDirectMemorySize}.
 * Classes from 2 MiB have a mapping per buffer; smaller ones are cut out of 2 MiB mappings
 * ({@code CHUNK_BYTES}), 512 buffers of 4 KiB or 2 of 1 MiB, with transparent huge pages off
 * so that touching one buffer makes only its own pages resident.
 * <pre>
 *   class 4 KiB   [chunk 2 MiB: slot 0 | slot 1 | ... | slot 511]   [chunk 2 MiB: ...]
 *   class 1 MiB   [chunk 2 MiB: slot 0 | slot 1]
 *   class 32 MiB  [mapping 32 MiB]  [mapping 32 MiB]
 * </pre>
 * A free buffer is <em>cached</em> (resident, ready, on its class's LIFO list) or
 * <em>cleared</em> (its pages dropped or never touched, on its chunk's stack). A chunk is
 * unmapped once none of its slots is in use or cached.
 *
 * <h2>2. Accounting</h2>
 * Everything is counted in class sizes. Each {@link io.iotarget.buffer.BufferAccount} (one per
 * io group) has {@code inUseBytes <= shareBytes}; the pool has {@code residentBytes} = in use +
 * cached + being cleared {@code <= capacityBytes}. Both are charged before the memory is
 * touched and uncharged only after its pages are gone, so the caps hold at every instant, and
 * RSS from the pool never exceeds residentBytes. A take that no share could hold is refused
 * with {@code IllegalArgumentException} rather than left waiting forever.
 *
 * <h2>3. Take and release</h2>
 * The fast path — nobody of the account waiting, the pool not full: charge the account (CAS),
 * pop a cached buffer of the class, reset position, limit and byte order. Release is the
 * reverse, plus volatile reads (anyone waiting? a trim pass armed?). Neither allocates nor
 * calls the kernel. Cached buffers are kept in stripes (twice the cores, lists linked through
 * the buffers), each thread with a home stripe it pushes to and pops from first, so the
 * stripe locks are uncontended; buffer objects are padded so that two threads' buffers never
 * share a cache line. What threads of one account still share is its in-use counter.
 * A miss takes a cleared slot, or maps a chunk, once resident bytes have room, and makes a
 * large request's pages resident in one call (MADV_POPULATE_WRITE); when resident bytes have
 * no room, it first clears the longest-idle cached buffers of any class (MADV_DONTNEED) —
 * nobody waits for memory that the pool merely caches.
 *
 * <h2>4. Waiting</h2>
 * {@code take} with no room queues its {@link io.iotarget.buffer.BufferWaiter} on its account
 * (FIFO: while an account has queued takes, its new ones queue behind them). Accounts with
 * queued takes form a round-robin ring, and memory is handed out in ring order:
 * <ul>
 *   <li>an account whose head does not fit its share is passed over — only its own releases can
 *       help it, and they will;
 *   <li>the first account whose head fits its share but not the pool stops the round and marks
 *       the pool <em>full</em>: from then on every take of every account queues, and released
 *       memory accumulates until that head fits, however large. After each served take, its
 *       account goes to the back of the ring, so one tenant with a thousand waiters and
 *       another with one alternate.
 * </ul>
 * One thread serves at a time (a counter of requests, as in drain loops): releases and
 * cancels during a round only ask for another round, so a waiter may release or take from
 * inside {@code available} without recursion, and no wake-up is lost — a releaser that sees
 * no waiter published its memory before looking, a taker queues before its last look, and a
 * {@code tryTake} that cleared cached memory and still found no room looks after uncharging it.
 * Queues are guarded by one wait lock per pool, held while a waiter's memory is found (a
 * miss's system calls included); the fast path never takes it.
 *
 * <h2>5. Giving memory back</h2>
 * Trim passes run on one daemon timer thread shared by all pools, every
 * {@code TRIM_PERIOD_MS} = 1 s while anything is cached, and not at all otherwise. Each pass
 * starts an epoch; a release stamps its buffer with the current epoch, and a pass evicts the
 * cached buffers stamped two epochs back — idle for 1 to 2 s — unmapping each chunk left with
 * no live slot, and clearing (MADV_DONTNEED) the rest. Chunks emptied by fast-path clearing
 * are unmapped by the next pass. Unmapping closes the chunk's shared arena (about 0.1 ms of
 * handshake with every thread), which is why only passes, close and releases after close do it.
 *
 * <h2>6. Whose bytes</h2>
 * The pool never zeroes: a buffer holds what its last holder (any tenant) wrote, or zeroes.
 * The front ends guarantee that a reply carries only bytes the request wrote: a read sends
 * exactly the {@code size} bytes its backend filled, and no data when it failed. A buffer
 * released twice throws {@code IllegalStateException} and the lists stay intact; one used
 * after its memory was unmapped throws instead of crashing the process (each mapping is a
 * segment of its own shared arena). Using a buffer after release while the slot is cached
 * or re-taken cannot be detected: the slot's handle is reused so that taking allocates nothing.
 *
 * <h2>7. Worked example</h2>
 * Capacity 1 GiB, share 256 MiB. Tenant A floods 32 MiB writes against {@code wbps=10M}: each
 * buffer is held about 3.2 s while io.max delays the write. A's 9th concurrent take finds
 * its share used up and waits; A's connection stops reading until one of A's writes
 * completes. Tenant B's 4 KiB reads meanwhile have 768 MiB of room and never wait. If
 * tenants A, C, D and E all flood, they fill the pool; B's next take finds it full and
 * queues, and the next release of any of them goes to the ring's head in turn: B waits
 * for at most one release per tenant ahead of it. When the flood ends, 1 GiB is cached; 1 to
 * 2 s later it is unmapped and RSS is back.
 *
 * <h2>8. Tunables</h2>
 * {@code MIN_CLASS_BYTES} 4 KiB (page, O_DIRECT); {@code MAX_BUFFER_BYTES} 1 GiB (ByteBuffer
 * limit); {@code POPULATE_MIN_BYTES} 64 KiB; {@code CHUNK_BYTES} 2 MiB (mappings at most capacity / 2 MiB + one per class,
 * against vm.max_map_count = 65530); {@code TRIM_PERIOD_MS} 1 s; default capacity a quarter
 * of RAM within 128 MiB..16 GiB, default share a quarter of the capacity and at least
 * 32 MiB ({@link io.iotarget.buffer.BufferPool#defaultCapacity()},
 * {@link io.iotarget.buffer.BufferPool#defaultShare(long)}).
 *
 * <h2>9. Watch</h2>
 * {@code residentBytes()} against {@code capacityBytes()}; per account {@code inUseBytes()}
 * and {@code waiting()} (a tenant at its share, as expected under throttling); the
 * {@link io.iotarget.buffer.BufferCounter}s: {@code waits}, {@code clears} growing fast (the
 * capacity is too small for the mix of sizes: buffers are cleared and refaulted),
 * {@code maps}/{@code unmaps} in step (the workload pauses longer than the trim period),
 * {@code map_failures} or {@code waiter_failures} above 0 (a capacity the machine cannot map;
 * a bug in a waiter). For callers: take one buffer per command and never wait for a second
 * while holding one (on a full pool that can deadlock); release on every path, errors and
 * connection close included; on close, cancel queued takes — {@code false} means a buffer
 * is coming or came, to be released too.
 */
package io.iotarget.buffer;
