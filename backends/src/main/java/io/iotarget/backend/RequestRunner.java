package io.iotarget.backend;

import io.iotarget.model.IoFlags;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * The one translation of a request into a backend's synchronous calls: PREFLUSH, the op
 * itself, then a flush for FUA on ops that have no FUA of their own. The dispatch layer runs
 * it on the submitting thread for non-blocking backends; IO pool threads run it for blocking
 * ones. Any thread.
 */
public final class RequestRunner {
    /** Verify and compare read through a scratch buffer of this size. */
    private static final int SCRATCH_BYTES = 1 << 20;
    private static final ThreadLocal<ByteBuffer> SCRATCH = ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(SCRATCH_BYTES));

    private RequestRunner() {
    }

    /**
     * Runs {@code io} on {@code backend} to its end on this thread.
     *
     * @return {@link IoStatus#OK}, {@link IoStatus#NOT_FAST} or {@link IoStatus#COMPARE_FAILED}
     * @throws IOException the backend failed ({@link BackendErrors} says what it means)
     */
    public static IoStatus run(Backend backend, IoRequest io) throws IOException {
        if (io.hasFlag(IoFlags.PREFLUSH)) backend.flush();
        long offset = io.offset();
        long length = io.length();
        boolean fua = io.hasFlag(IoFlags.FUA);
        switch (io.op()) {
            case READ -> {
                if (io.views() == null || !backend.readViews(offset, (int) length, io.views())) backend.read(offset, io.data());
            }
            case PASSTHROUGH_IN -> backend.read(offset, io.data());
            case WRITE, PASSTHROUGH_OUT -> backend.write(offset, io.data(), fua);
            case FLUSH -> backend.flush();
            case DISCARD -> backend.discard(offset, length);
            case WRITE_ZEROES -> {
                if (io.hasFlag(IoFlags.FAST_ZERO) && !backend.zeroesFast()) return IoStatus.NOT_FAST;
                backend.writeZeroes(offset, length, !io.hasFlag(IoFlags.NO_UNMAP));
            }
            case CACHE -> backend.prefetch(offset, length);
            case VERIFY -> readThrough(backend, offset, length, null);
            case COMPARE -> {
                if (!readThrough(backend, offset, length, io.data())) return IoStatus.COMPARE_FAILED;
            }
        }
        if (fua && (io.op() == IoOp.DISCARD || io.op() == IoOp.WRITE_ZEROES)) backend.flush();
        return IoStatus.OK;
    }

    /** Reads the range through scratch memory; with {@code expected}, compares; false on a difference. */
    private static boolean readThrough(Backend backend, long offset, long length, ByteBuffer expected) throws IOException {
        ByteBuffer scratch = SCRATCH.get();
        long done = 0;
        while (done < length) {
            int n = (int) Math.min(length - done, scratch.capacity());
            scratch.clear().limit(n);
            backend.read(offset + done, scratch);
            if (expected != null) {
                int at = expected.position() + (int) done;
                if (scratch.mismatch(expected.slice(at, n)) >= 0) return false;
            }
            done += n;
        }
        return true;
    }
}
