package io.iotarget.transport;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.ArrayDeque;
import java.util.function.Consumer;

/**
 * What one {@link Connection} has queued to send and not written yet: buffers and file
 * regions, in order, each with the callback that runs once it is written or dropped. Items are
 * recycled, so queuing allocates nothing once the queue has been as long before.
 *
 * <p>Loop thread only.
 */
final class OutputQueue {
    /** Buffers per gathering write: below the kernel's IOV_MAX of 1024. */
    static final int GATHER_MAX = 1000;

    private final ArrayDeque<Item> items = new ArrayDeque<>();
    private Item free;
    /** Bytes queued and not yet written (under TLS: not yet encrypted). */
    private long bytes;

    void add(ByteBuffer buffer, Runnable whenDone) {
        Item item = item();
        item.buffer = buffer;
        item.whenDone = whenDone;
        items.add(item);
        bytes += buffer.remaining();
    }

    void add(FileChannel file, long position, long length, Runnable whenDone) {
        Item item = item();
        item.file = file;
        item.position = position;
        item.remaining = length;
        item.whenDone = whenDone;
        items.add(item);
        bytes += length;
    }

    boolean isEmpty() {
        return items.isEmpty();
    }

    long bytes() {
        return bytes;
    }

    /** {@code n} bytes of the queue went out (or into TLS records). */
    void consumed(long n) {
        bytes -= n;
    }

    /** The oldest item, or null. */
    Item head() {
        return items.peek();
    }

    /** Removes the head and runs its callback. */
    void completeHead() {
        done(items.poll());
    }

    boolean hasFileRegion() {
        for (Item item : items) {
            if (item.file != null) return true;
        }
        return false;
    }

    /** Puts the buffers at the head of the queue (up to the first file region) into {@code gather}; how many. */
    int gather(ByteBuffer[] gather) {
        int count = 0;
        for (Item item : items) {
            if (item.file != null || count == GATHER_MAX) break;
            gather[count++] = item.buffer;
        }
        return count;
    }

    /**
     * Completes the fully written buffers among the first {@code count} items; true when all of
     * them were. A callback may close the connection, which empties the queue: then false.
     */
    boolean completeWritten(int count) {
        for (int i = 0; i < count; i++) {
            Item head = items.peek();
            if (head == null || head.buffer.hasRemaining()) return false;
            completeHead();
        }
        return true;
    }

    /** Hands every queued buffer to {@code sink} (the caller has checked that no file region is queued) and completes it. */
    void moveBuffers(Consumer<ByteBuffer> sink) {
        for (Item item; (item = items.poll()) != null; ) {
            bytes -= item.buffer.remaining();
            sink.accept(item.buffer);
            done(item);
        }
    }

    /** Drops everything (the connection closed): each callback runs. */
    void dropAll() {
        for (Item item; (item = items.poll()) != null; ) done(item);
        bytes = 0;
    }

    private Item item() {
        Item item = free;
        if (item == null) return new Item();
        free = item.next;
        item.next = null;
        return item;
    }

    private void done(Item item) {
        Runnable whenDone = item.whenDone;
        item.buffer = null;
        item.file = null;
        item.whenDone = null;
        item.next = free;
        free = item;
        if (whenDone != null) whenDone.run();
    }

    /** One queued piece of output: a buffer, or a file region from {@link #position} on, {@link #remaining} bytes long. */
    static final class Item {
        ByteBuffer buffer;
        FileChannel file;
        long position;
        long remaining;
        Runnable whenDone;
        private Item next;
    }
}
