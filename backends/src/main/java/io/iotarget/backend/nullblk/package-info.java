/**
 * The null backend: {@link io.iotarget.backend.nullblk.NullBackend} stores nothing — writes
 * vanish, reads return zeroes (shared views of one zero buffer, no copy), every extent is a
 * hole. Like the kernel's null_blk it measures everything above the storage: the front end,
 * the io controller, dispatch. Not blocking: requests end on the calling thread.
 *
 * <p>{@link io.iotarget.backend.nullblk.TimedNullBackend} adds null_blk's timing knobs,
 * {@code completion_nsec} and {@code mbps}: a device of known IOPS ({@code queue_depth /
 * completion_nsec}) and bandwidth, whose completions one timer thread reports
 * ({@link io.iotarget.backend.nullblk.CompletionTimer}).
 *
 * <p>Watch: a benchmark on it says nothing about a disk; compare with the memory backend to see
 * what copying the bytes costs. ("null" is a Java keyword, hence the kernel's name.)
 */
package io.iotarget.backend.nullblk;
