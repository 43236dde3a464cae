/**
 * The memory backend: {@link io.iotarget.backend.memory.MemoryBackend} is a sparse RAM disk of
 * off-heap chunks, each allocated on its first write, so an unwritten device costs nothing.
 * Reads can share the chunks' memory with the front end (zero-copy views) instead of copying;
 * discard drops whole chunks.
 *
 * <p>Not blocking: requests end on the calling thread. Its size is bounded by what the machine
 * and the JVM's direct-memory limit could ever hold; a write that finds no memory fails with
 * ENOSPC. Watch the process's direct memory when several memory backends are written full.
 */
package io.iotarget.backend.memory;
