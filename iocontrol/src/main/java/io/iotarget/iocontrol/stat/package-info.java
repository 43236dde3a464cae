/**
 * io.stat counters, after the kernel's per-CPU iostat and rstat.
 *
 * <h2>1. Writing</h2> The IO path adds to one stripe of its (group, device)'s counters,
 * picked by a hash of the thread: atomic adds on a cache line few threads share. The first
 * change after a flush pushes the stripe on the flusher's lock-free "updated" list.
 * <h2>2. Reading</h2> A reader drains the list and folds each stripe's delta since its last
 * fold into the totals of its pair and every ancestor pair — each delta exactly once. Totals
 * are therefore hierarchical, and a removed group's IO stays in its ancestors.
 * <h2>3. Cheap when idle</h2> A group with no per-device state has nothing to print and
 * returns without flushing (seed 004); a stripe untouched since the last read costs nothing.
 * <h2>4. Watch</h2> {@code StatFlusher.idle()}: nothing waits to be folded.
 */
package io.iotarget.iocontrol.stat;
