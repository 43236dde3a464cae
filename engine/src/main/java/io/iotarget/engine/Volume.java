package io.iotarget.engine;

import io.iotarget.iocontrol.Group;
import io.iotarget.iocontrol.pressure.TenantQueue;
import io.iotarget.model.Device;
import io.iotarget.model.IoOp;
import io.iotarget.model.IoRequest;
import io.iotarget.model.IoStatus;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * The embedded API's handle on one device. Every call builds a request charged to the
 * volume's group, or, for a volume opened without one, to the submitting thread's
 * {@link Engine#CURRENT_GROUP} (the root when unbound). Results arrive as futures that
 * complete with the request's status; buffers belong to the engine until then.
 *
 * <p>A volume opened with a group is one tenant queue to io.pressure (its "task": stalled while
 * one of its requests waits in a policy); {@link #close} lets go of it. A volume charging each
 * caller's current group counts in no group's io.pressure.
 *
 * <p>Any thread. Convenience over speed: each call allocates a request and a future.
 */
public final class Volume {
    private final Engine engine;
    private final Device device;
    private final Group group;
    private final TenantQueue queue;

    Volume(Engine engine, Device device, Group group) {
        this.engine = engine;
        this.device = device;
        this.group = group;
        this.queue = group == null ? null : engine.newQueue(group);
    }

    /** Ends the volume's io.pressure queue; call after its last request completed. Idempotent. */
    public void close() {
        if (queue != null) engine.closeQueue(queue);
    }

    public Device device() {
        return device;
    }

    /** Reads {@code dst.remaining()} bytes at {@code offset}. */
    public CompletableFuture<IoStatus> read(long offset, ByteBuffer dst) {
        return submit(IoOp.READ, 0, offset, dst.remaining(), dst);
    }

    /** Writes {@code src.remaining()} bytes at {@code offset}; flags from {@link io.iotarget.model.IoFlags}. */
    public CompletableFuture<IoStatus> write(long offset, ByteBuffer src, int flags) {
        return submit(IoOp.WRITE, flags, offset, src.remaining(), src);
    }

    public CompletableFuture<IoStatus> flush() {
        return submit(IoOp.FLUSH, 0, 0, 0, null);
    }

    public CompletableFuture<IoStatus> discard(long offset, long length) {
        return submit(IoOp.DISCARD, 0, offset, length, null);
    }

    public CompletableFuture<IoStatus> writeZeroes(long offset, long length, int flags) {
        return submit(IoOp.WRITE_ZEROES, flags, offset, length, null);
    }

    /** Any request kind, passthrough included: {@code data} as {@link IoRequest#set} describes it. */
    public CompletableFuture<IoStatus> submit(IoOp op, int flags, long offset, long length, ByteBuffer data) {
        CompletableFuture<IoStatus> done = new CompletableFuture<>();
        IoRequest io = new IoRequest()
                .set(op, flags, offset, length, data)
                .target(device, chargedGroup())
                .queue(queue)
                .callback(r -> done.complete(r.status()), null, 0);
        engine.submit(io);
        return done;
    }

    /**
     * Copies {@code length} bytes from {@code from} to {@code to} within the device, as the
     * internal IO it is: a read and then a write, both charged to the volume's group.
     */
    public CompletableFuture<IoStatus> copy(long from, long to, int length) {
        Group payer = chargedGroup();
        ByteBuffer buffer = ByteBuffer.allocateDirect(length);
        return ScopedValue.where(Engine.CURRENT_GROUP, payer).call(() -> read(from, buffer))
                .thenCompose(status -> status != IoStatus.OK ? CompletableFuture.completedFuture(status)
                        : ScopedValue.where(Engine.CURRENT_GROUP, payer).call(() -> write(to, buffer.clear(), 0)));
    }

    private Group chargedGroup() {
        if (group != null) return group;
        return Engine.CURRENT_GROUP.orElse(engine.controller().root());
    }
}
