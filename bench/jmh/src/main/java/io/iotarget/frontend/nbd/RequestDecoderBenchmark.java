package io.iotarget.frontend.nbd;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * What decoding one NBD request costs the event loop, per request, in a batch of
 * {@link #BATCH} as one socket read brings them at QD32 ({@link RequestDecoder} over a buffer
 * that holds them back to back): {@code read4k}, 28-byte READ headers; {@code write4k}, WRITE
 * headers each followed by its 4 KiB payload, which the decoder copies into the buffer the
 * handler names (a direct buffer, as the pool's are). The handler only keeps what it is given,
 * so the figure is the decoder's own work and the copy; what the connection does with a
 * request (the engine's submit) is EngineSubmitBenchmark's.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class RequestDecoderBenchmark {
    /** Requests per socket read: a client at QD32 that sends a whole queue at once. */
    static final int BATCH = 32;
    private static final int BLOCK_BYTES = 4096;

    @Param({"read4k", "write4k"})
    public String request;

    private final RequestDecoder decoder = new RequestDecoder();
    private final ByteBuffer payload = ByteBuffer.allocateDirect(BLOCK_BYTES);
    private final Sink sink = new Sink(payload);
    private ByteBuffer stream;

    @Setup(Level.Trial)
    public void setUp() {
        boolean write = request.equals("write4k");
        int type = write ? NbdWire.CMD_WRITE : NbdWire.CMD_READ;
        stream = ByteBuffer.allocateDirect(BATCH * (RequestDecoder.HEADER_BYTES + (write ? BLOCK_BYTES : 0)));
        for (int i = 0; i < BATCH; i++) {
            stream.putInt(NbdWire.REQUEST_MAGIC).putShort((short) 0).putShort((short) type)
                    .putLong(i).putLong((long) i * 7919 * BLOCK_BYTES).putInt(BLOCK_BYTES);
            if (write) stream.position(stream.position() + BLOCK_BYTES);
        }
        stream.flip();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public long decodeBatch() {
        stream.position(0);
        while (decoder.decode(stream, sink) == RequestDecoder.Result.EVENT) {
            // every header, and every payload of a write, is one event
        }
        if (stream.hasRemaining()) throw new IllegalStateException("the benchmark's stream did not decode");
        return sink.lastOffset;
    }

    /** Takes each request as the connection would, without submitting it: a write's payload goes to one buffer. */
    private static final class Sink implements RequestDecoder.Handler {
        private final ByteBuffer payload;
        long lastOffset;

        Sink(ByteBuffer payload) {
            this.payload = payload;
        }

        @Override
        public ByteBuffer request(int flags, int type, long cookie, long offset, long length) {
            lastOffset = offset + cookie;
            if (type != NbdWire.CMD_WRITE) return null;
            return payload.clear().limit((int) length);
        }

        @Override
        public void payloadDone() {
        }
    }
}
