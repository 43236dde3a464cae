package io.iotarget.backend.file;

import io.iotarget.backend.Backend;
import io.iotarget.backend.BackendErrors;
import io.iotarget.backend.Completion;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** Test support: requests started on a backend the way dispatch starts them, and awaited. */
final class Requests {
    private Requests() {
    }

    /** A completion that settles a future with the status dispatch would report. */
    static final class Done extends CompletableFuture<IoStatus> implements Completion {
        volatile Thread thread;

        @Override
        public void completed(IoRequest io, IoStatus status) {
            thread = Thread.currentThread();
            if (!complete(status)) throw new AssertionError("completed twice: " + io);
        }

        @Override
        public void failed(IoRequest io, IOException cause) {
            thread = Thread.currentThread();
            if (!complete(BackendErrors.status(BackendErrors.errno(cause)))) throw new AssertionError("completed twice: " + io);
        }
    }

    /** Starts {@code io} on a blocking backend and waits for its status. */
    static IoStatus run(Backend backend, IoEngine engine, IoRequest io) throws Exception {
        Done done = new Done();
        IoStatus now;
        try {
            now = backend.start(io, engine, done);
        } catch (IOException e) {
            return BackendErrors.status(BackendErrors.errno(e));
        }
        return now != null ? now : done.get(20, TimeUnit.SECONDS);
    }

    static IoStatus run(Backend backend, IoEngine engine, IoOp op, int flags, long offset, long length, ByteBuffer data) throws Exception {
        return run(backend, engine, new IoRequest().set(op, flags, offset, length, data));
    }
}
