package io.iotarget.model;

import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Arrays;

/**
 * A front end's receiving end of a zero-copy read: what the backend shared through
 * {@link ViewSink} — its own buffers, or a page-cache range of its file — kept until the reply
 * has gone out. One per command, reused; the reply is sent from here instead of the
 * command's buffer when {@link #holdsData()}.
 *
 * <p>What it holds belongs to the backend: the front end keeps the device from going away (its
 * in-flight count, the export's hold) until the reply is sent and {@link #clear} was called.
 * Written by the backend before the request completes, read by the loop after: the
 * completion's hand-off orders the two.
 */
public final class SharedRead implements ViewSink {
    /** Reads up to this size are offered to backends: 64 memory-backend chunks of 64 KiB, plus one when unaligned. */
    public static final int MAX_BYTES = 4 << 20;
    /** The most views a shared read can come in. */
    public static final int MAX_VIEWS = MAX_BYTES / 65536 + 1;

    private final ByteBuffer[] views = new ByteBuffer[MAX_VIEWS];
    private int viewCount;
    private FileChannel regionChannel;
    private long regionPosition;
    private long length;

    /** Whether a read of {@code length} bytes may be offered as a shared read. */
    public static boolean fits(long length) {
        return length <= MAX_BYTES;
    }

    /** Empty, for a read of {@code length} bytes (what a region must cover); this, for {@link IoRequest#views}. */
    public SharedRead expect(long length) {
        clear();
        this.length = length;
        return this;
    }

    @Override
    public void view(ByteBuffer bytes) {
        views[viewCount++] = bytes;
    }

    /** Takes the range only when it is the whole read. */
    @Override
    public boolean region(FileChannel channel, long position, long length) {
        if (length != this.length) return false;
        regionChannel = channel;
        regionPosition = position;
        return true;
    }

    /** The backend shared the read: the reply goes from {@link #region} or the views, not the command's buffer. */
    public boolean holdsData() {
        return viewCount > 0 || regionChannel != null;
    }

    /** The file range the read's data is sent from, or null. */
    public FileChannel region() {
        return regionChannel;
    }

    public long regionPosition() {
        return regionPosition;
    }

    /**
     * Whether the region still lies wholly inside its file (true when there is none): a file
     * cut underneath between the read and its reply would leave the reply short of bytes the
     * header promised. Costs an fstat; a front end asks just before it queues the reply
     * header, and answers EIO when false. A file that shrinks after that is met by the
     * sender, which can only end the connection.
     */
    public boolean regionInsideFile() {
        if (regionChannel == null) return true;
        try {
            return regionChannel.size() >= regionPosition + length;
        } catch (java.io.IOException e) {
            return false;                               // closed: the device is going away; the bytes cannot be sent either
        }
    }

    public int viewCount() {
        return viewCount;
    }

    /** Puts the views into {@code out} from {@code at}, in order; the index after the last. */
    public int views(ByteBuffer[] out, int at) {
        System.arraycopy(views, 0, out, at, viewCount);
        return at + viewCount;
    }

    /** Lets go of the backend's buffers and file (the reply is sent, or dropped). */
    public void clear() {
        Arrays.fill(views, 0, viewCount, null);
        viewCount = 0;
        regionChannel = null;
    }
}
